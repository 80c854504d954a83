"""The network a GPU sees, as the speed model's :class:`~suanli.estimate.comm.Link` and
:class:`~suanli.estimate.comm.Network`, built from the catalog's interconnect rows
(:mod:`suanli.catalog.network`: ``catalog/data/interconnect.toml``).

The catalog holds and validates the rows; this module turns them into the estimator's types, so
the catalog never imports the estimators.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import lru_cache

from suanli.catalog.gpu import GPU
from suanli.catalog.network import (
    HOST_STAGED,
    NVLINK_LINKS,
    LinkSpec,
    NvlsSpec,
    OneShotSpec,
    default_gpus_per_node,
    default_inter_node,
    get_link,
    has_peer_to_peer,
    links,
    nics_per_gpu,
    pcie_link,
)
from suanli.estimate.comm import Link, Network, Nvls, OneShot
from suanli.i18n import N_
from suanli.limits import MAX_NICS_PER_NODE


@lru_cache(maxsize=64)
def _oneshot(spec: OneShotSpec) -> OneShot:
    """The formula of a measured one-shot all-reduce (the same fields)."""
    return OneShot(**{f.name: getattr(spec, f.name) for f in fields(spec)})


@lru_cache(maxsize=64)
def _nvls(spec: NvlsSpec) -> Nvls:
    """The formula of a measured in-switch all-reduce (the same fields)."""
    return Nvls(**{f.name: getattr(spec, f.name) for f in fields(spec)})


def link_of(spec: LinkSpec, bandwidth: float | None = None) -> Link:
    """An interconnect row as a :class:`Link`, optionally with a GPU-specific bandwidth (the
    in-switch all-reduce's bandwidth scales with it)."""
    bw = bandwidth if bandwidth is not None else spec.unidirectional_bytes_per_s
    nvls = None if spec.nvls is None else _nvls(spec.nvls)
    if nvls is not None and bw != spec.unidirectional_bytes_per_s:
        scale = bw / spec.unidirectional_bytes_per_s
        nvls = replace(nvls, bytes_per_s=nvls.bytes_per_s * scale)
    return Link(
        name=spec.name,
        bandwidth_bytes_per_s=bw,
        latency_s=spec.latency_s,
        efficiency=spec.bus_efficiency,
        base_latency_s=spec.base_latency_s,
        oneshot=None if spec.oneshot is None else _oneshot(spec.oneshot),
        nvls=nvls,
        small_efficiency=spec.small_efficiency,
        bulk_base_latency_s=spec.bulk_base_latency_s,
        # A peer link's rate is the fabric's, whatever total the GPU catalog gives.
        per_peer_bytes_per_s=min(spec.per_peer_bytes_per_s, bw),
        gather_efficiency=spec.gather_efficiency,
    )


def intra_node_link(gpu: GPU) -> Link:
    """GPU-to-GPU inside a node: NVLink (the GPU's own per-direction bandwidth), Infinity
    Fabric, Gaudi's on-chip RoCE, or PCIe at the card's generation and lanes; GeForce cards
    without peer-to-peer get ``pcie-host-staged`` (traffic staged through host memory)."""
    kind = gpu.get("interconnect_kind")
    total = gpu.get("interconnect_bytes_per_s")
    if kind in NVLINK_LINKS and NVLINK_LINKS[kind] in links():
        spec = links()[NVLINK_LINKS[kind]]
        return link_of(spec, total / 2 if total else None)
    if kind == "infinity-fabric" and "infinity-fabric-mi300x" in links():
        board = links()["infinity-fabric-mi300x"]
        if "cdna 3" in str(gpu.get("architecture") or "").lower():
            # The MI300X/MI325X board the link describes (the MI325X entry has no total).
            return link_of(board, total / 2 if total else None)
        if total:
            # An older Infinity Fabric part (MI250X): its own rate; its peer links differ from
            # the MI300X board's seven 64 GB/s links and are not measured, so none are assumed.
            return replace(link_of(board, total / 2), per_peer_bytes_per_s=0.0)
    if kind == "roce" and gpu.vendor == "intel":
        lid = "gaudi3-roce" if "gaudi3" in gpu.id else "gaudi-roce"
        if lid in links():
            return link_of(links()[lid], total / 2 if total else None)
    pcie = pcie_link(gpu)
    lanes = int(gpu.get("pcie_lanes") or 16)
    rate = pcie.unidirectional_bytes_per_s * lanes / 16
    if not has_peer_to_peer(gpu) and HOST_STAGED in links():
        staged = links()[HOST_STAGED]
        if lanes == 16:
            name = N_("{link} without peer-to-peer (staged through host memory)").format(
                link=pcie.name
            )
        else:
            name = N_(
                "{link} at x{lanes} without peer-to-peer (staged through host memory)"
            ).format(link=pcie.name, lanes=lanes)
        return Link(
            name=name,
            bandwidth_bytes_per_s=rate,
            latency_s=staged.latency_s,
            efficiency=staged.bus_efficiency,
            base_latency_s=staged.base_latency_s,
            gather_efficiency=staged.gather_efficiency,
        )
    return link_of(pcie, rate)


def network_for(
    gpu: GPU,
    gpus_per_node: int | None = None,
    inter: str | None = None,
    *,
    stripe_nics: bool = False,
    nics_per_node: int | None = None,
) -> Network:
    """The two network tiers a job on ``gpu`` sees.

    ``stripe_nics=True`` also gives the network the node's scale-out NIC count
    (:func:`suanli.catalog.network.nics_per_gpu` x GPUs per node, from the node row that carries
    the chosen inter-node link where one lists the GPU: ``efa-p4d`` gives an A100 half a NIC),
    so a group that spans nodes gets the NICs NCCL stripes it over
    (:meth:`suanli.estimate.comm.Network.inter_bandwidth`) instead of one NIC's rate. It is off
    by default until the vectorized planner mirrors it (``estimate/vector.py`` ``_pick`` must
    call ``Network.bottleneck``). ``nics_per_node`` is the user's count of the node's scale-out
    NICs (``--nics-per-node``), in place of the catalog's node row."""
    intra = intra_node_link(gpu)
    inter_spec = get_link(inter or default_inter_node(gpu))
    per_node = gpus_per_node or default_gpus_per_node(gpu)
    if nics_per_node is not None and not 1 <= nics_per_node <= MAX_NICS_PER_NODE:
        raise ValueError(
            N_("--nics-per-node must be 1 to {most}, got {value}").format(
                most=MAX_NICS_PER_NODE, value=nics_per_node
            )
        )
    usual = nics_per_gpu(gpu, inter_spec.id) * per_node
    nics = float(nics_per_node or usual) if stripe_nics else 0.0
    return Network(
        intra=intra, inter=link_of(inter_spec), gpus_per_node=per_node, nics_per_node=nics
    )
