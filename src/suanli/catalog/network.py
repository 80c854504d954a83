"""Interconnects (``data/interconnect.toml``) and measured ceilings (``data/efficiency.toml``).

The numbers the speed model needs about a catalog GPU's network and kernels: the links it has
(rows, validated), its usual node and inter-node link, and the share of its datasheet peaks that
real kernels reach. Every value comes from a data row with a source. Data only:
:mod:`suanli.estimate.links` builds the estimator's links and networks from these rows.
``interconnect.toml`` also holds the node layouts (``[[node]]``: GPUs and scale-out NICs per
node) and the collective fits (``[[collective_fit]]``: measured NCCL curves against the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from suanli.catalog.gpu import GPU, PRECISION_FIELDS
from suanli.catalog.loader import CatalogError
from suanli.catalog.toml_data import read_data
from suanli.i18n import N_


@dataclass(frozen=True)
class OneShotSpec:
    """A measured one-shot all-reduce of the serving engines over one link, as stored in a
    ``[[link]]`` row's ``oneshot_*`` fields (the formula: :class:`suanli.estimate.comm.OneShot`,
    which has the same fields)."""

    base_s: float
    step_s: float
    bytes_per_s: float
    max_bytes: int
    source: str = ""
    date: str = ""
    per_peer: bool = False
    """``bytes_per_s`` is per peer link of a full mesh."""
    max_ranks: int = 0
    """Largest group measured (0: any)."""


@dataclass(frozen=True)
class NvlsSpec:
    """A measured in-switch (NVLink SHARP) all-reduce, as stored in a ``[[link]]`` row's
    ``nvls_*`` fields (the formula: :class:`suanli.estimate.comm.Nvls`, which has the same
    fields)."""

    base_s: float
    bytes_per_s: float
    min_ranks: int
    source: str = ""
    date: str = ""


@dataclass(frozen=True)
class LinkSpec:
    """A kind of interconnect, as stored in interconnect.toml."""

    id: str
    name: str
    tier: str
    unidirectional_bytes_per_s: float
    latency_s: float
    bus_efficiency: float
    source: str
    date: str
    base_latency_s: float = 0.0
    """Per-collective base latency (``Link.base_latency_s``); 0 where no fit was made."""
    base_latency_source: str = ""
    """Where the base latency (and the per-step latency fitted with it) comes from."""
    base_latency_date: str = ""
    oneshot: OneShotSpec | None = None
    """The serving engines' one-shot all-reduce over this link, where measured."""
    nvls: NvlsSpec | None = None
    """NCCL's in-switch (NVLink SHARP) all-reduce, where the switch has it and it was measured."""
    small_efficiency: float = 0.0
    """All-reduce bandwidth share of NCCL's low-latency protocols, where fitted apart."""
    bulk_base_latency_s: float = 0.0
    """Base latency of the bulk protocol (with ``small_efficiency``)."""
    per_peer_bytes_per_s: float = 0.0
    """One peer's link on a mesh without a switch (``Link.per_peer_bytes_per_s``); 0: a switch."""
    gather_efficiency: float = 0.0
    """All-gather and reduce-scatter bandwidth share, where measured apart (``Link``); 0: none."""


def _oneshot(raw: dict[str, Any], lid: str) -> OneShotSpec | None:
    """The ``oneshot_*`` fields of a link, validated (None when the link has none)."""
    if "oneshot_base_s" not in raw:
        return None
    try:
        shot = OneShotSpec(
            base_s=float(raw["oneshot_base_s"]),
            step_s=float(raw["oneshot_step_s"]),
            bytes_per_s=float(raw["oneshot_bytes_per_s"]),
            max_bytes=int(raw["oneshot_max_bytes"]),
            source=str(raw["oneshot_source"]),
            date=str(raw["oneshot_date"]),
            per_peer=bool(raw.get("oneshot_per_peer", False)),
            max_ranks=int(raw.get("oneshot_max_ranks", 0)),
        )
    except (KeyError, TypeError, ValueError):
        raise CatalogError(
            N_(
                "interconnect.toml, link {id!r}: a one-shot all-reduce needs numeric "
                "oneshot_base_s, oneshot_step_s, oneshot_bytes_per_s, oneshot_max_bytes and a "
                "source and date"
            ).format(id=lid)
        ) from None
    plausible = (
        0 <= shot.base_s <= 1e-3
        and 0 <= shot.step_s <= 1e-3
        and 1e8 <= shot.bytes_per_s <= 2e13
        and 0 < shot.max_bytes <= 1 << 30
        and 0 <= shot.max_ranks <= 1024
    )
    if not plausible or not (shot.source and shot.date):
        raise CatalogError(
            N_("interconnect.toml, link {id!r}: implausible one-shot all-reduce").format(id=lid)
        )
    return shot


def _nvls(raw: dict[str, Any], lid: str) -> NvlsSpec | None:
    """The ``nvls_*`` fields of a link, validated (None when the link has none)."""
    if "nvls_base_s" not in raw:
        return None
    try:
        nvls = NvlsSpec(
            base_s=float(raw["nvls_base_s"]),
            bytes_per_s=float(raw["nvls_bytes_per_s"]),
            min_ranks=int(raw["nvls_min_ranks"]),
            source=str(raw["nvls_source"]),
            date=str(raw["nvls_date"]),
        )
    except (KeyError, TypeError, ValueError):
        raise CatalogError(
            N_(
                "interconnect.toml, link {id!r}: an NVLS all-reduce needs numeric nvls_base_s, "
                "nvls_bytes_per_s, nvls_min_ranks and a source and date"
            ).format(id=lid)
        ) from None
    plausible = 0 <= nvls.base_s <= 1e-3 and 1e9 <= nvls.bytes_per_s <= 2e13 and nvls.min_ranks >= 2
    if not plausible or not (nvls.source and nvls.date):
        raise CatalogError(
            N_("interconnect.toml, link {id!r}: implausible NVLS all-reduce").format(id=lid)
        )
    return nvls


@lru_cache(maxsize=1)
def links() -> dict[str, LinkSpec]:
    """All interconnect kinds by id, validated."""
    out: dict[str, LinkSpec] = {}
    for raw in read_data("interconnect.toml").get("link", []):
        lid = str(raw.get("id", ""))
        try:
            spec = LinkSpec(
                id=lid,
                name=str(raw["name"]),
                tier=str(raw["tier"]),
                unidirectional_bytes_per_s=float(raw["unidirectional_bytes_per_s"]),
                latency_s=float(raw["latency_s"]),
                bus_efficiency=float(raw["bus_efficiency"]),
                source=str(raw["source"]),
                date=str(raw["date"]),
                base_latency_s=float(raw.get("base_latency_s", 0.0)),
                base_latency_source=str(raw.get("base_latency_source", "")),
                base_latency_date=str(raw.get("base_latency_date", "")),
                oneshot=_oneshot(raw, lid),
                nvls=_nvls(raw, lid),
                small_efficiency=float(raw.get("small_efficiency", 0.0)),
                bulk_base_latency_s=float(raw.get("bulk_base_latency_s", 0.0)),
                per_peer_bytes_per_s=float(raw.get("per_peer_unidirectional_bytes_per_s", 0.0)),
                gather_efficiency=float(raw.get("gather_efficiency", 0.0)),
            )
        except KeyError as exc:
            raise CatalogError(
                N_("interconnect.toml, link {id!r}: missing {key}").format(id=lid, key=exc)
            ) from None
        if not 0 <= spec.per_peer_bytes_per_s <= spec.unidirectional_bytes_per_s:
            raise CatalogError(
                N_(
                    "interconnect.toml, link {id!r}: per_peer_unidirectional_bytes_per_s must "
                    "be between 0 and unidirectional_bytes_per_s"
                ).format(id=lid)
            )
        if not 0 <= spec.base_latency_s <= 1e-3:
            raise CatalogError(
                N_("interconnect.toml, link {id!r}: implausible base latency").format(id=lid)
            )
        if spec.base_latency_s > 0 and not (spec.base_latency_source and spec.base_latency_date):
            raise CatalogError(
                N_("interconnect.toml, link {id!r}: base latency without a source").format(id=lid)
            )
        if spec.small_efficiency or spec.bulk_base_latency_s:
            plausible = (
                spec.tier == "intra-node"
                and 0 < spec.small_efficiency <= spec.bus_efficiency
                and spec.base_latency_s <= spec.bulk_base_latency_s <= 1e-3
                and raw.get("protocols_source")
                and raw.get("protocols_date")
            )
            if not plausible:
                raise CatalogError(
                    N_(
                        "interconnect.toml, link {id!r}: implausible protocol split (an "
                        "intra-node link needs 0 < small_efficiency <= bus_efficiency, "
                        "base_latency_s <= bulk_base_latency_s <= 1 ms, and a source and date)"
                    ).format(id=lid)
                )
        if not 1e8 <= spec.unidirectional_bytes_per_s <= 2e13:
            raise CatalogError(
                N_("interconnect.toml, link {id!r}: implausible bandwidth").format(id=lid)
            )
        if spec.gather_efficiency and not (
            0 < spec.gather_efficiency <= 1 and raw.get("gather_source")
        ):
            raise CatalogError(
                N_(
                    "interconnect.toml, link {id!r}: gather_efficiency must be in (0, 1] and "
                    "come with a gather_source"
                ).format(id=lid)
            )
        if not 1e-8 <= spec.latency_s <= 1e-3 or not 0 < spec.bus_efficiency <= 1:
            raise CatalogError(
                N_("interconnect.toml, link {id!r}: implausible latency/efficiency").format(id=lid)
            )
        out[lid] = spec
    return out


@dataclass(frozen=True)
class NodeLayout:
    """A common server layout, as stored in interconnect.toml ``[[node]]``."""

    id: str
    name: str
    gpus_per_node: int
    intra: str
    inter: str
    switch: bool
    nics_per_node: float
    """Scale-out NICs of the ``inter`` link's rate (or on-chip port groups) per node."""
    gpu_ids: tuple[str, ...]
    source: str
    date: str
    instance: bool = False
    """A cloud instance type (AWS p5, Google Cloud A3 ...): taken for a GPU it lists when its
    ``inter`` link is chosen (:func:`node_layout_for`)."""


@lru_cache(maxsize=1)
def node_layouts() -> dict[str, NodeLayout]:
    """All node layouts by id, validated (their link ids must exist)."""
    table = links()
    out: dict[str, NodeLayout] = {}
    for raw in read_data("interconnect.toml").get("node", []):
        nid = str(raw.get("id", ""))
        try:
            node = NodeLayout(
                id=nid,
                name=str(raw["name"]),
                gpus_per_node=int(raw["gpus_per_node"]),
                intra=str(raw["intra"]),
                inter=str(raw["inter"]),
                switch=bool(raw["switch"]),
                nics_per_node=float(raw["nics_per_node"]),
                gpu_ids=tuple(str(g) for g in raw.get("gpu_ids", [])),
                source=str(raw["source"]),
                date=str(raw["date"]),
                instance=bool(raw.get("instance", False)),
            )
        except KeyError as exc:
            raise CatalogError(
                N_("interconnect.toml, node {id!r}: missing {key}").format(id=nid, key=exc)
            ) from None
        if node.intra not in table or node.inter not in table:
            raise CatalogError(N_("interconnect.toml, node {id!r}: unknown link id").format(id=nid))
        if not 1 <= node.gpus_per_node <= 1024 or not 0 < node.nics_per_node <= 64:
            raise CatalogError(
                N_("interconnect.toml, node {id!r}: implausible GPU or NIC count").format(id=nid)
            )
        out[nid] = node
    return out


def node_layout_for(gpu: GPU, inter: str | None = None) -> NodeLayout | None:
    """The first ``[[node]]`` layout that lists this GPU, if any; with ``inter`` (an inter-node
    link id, e.g. ``--inter-node efa-p5``) the first cloud instance row (``instance = true``)
    that lists the GPU with that link, which gives the instance's NIC count (AWS p5: 8 EFA
    devices, p4d: 4), else the first."""
    listing = [node for node in node_layouts().values() if gpu.id in node.gpu_ids]
    for node in listing:
        if node.instance and node.inter == inter:
            return node
    return listing[0] if listing else None


def nics_per_gpu(gpu: GPU, inter: str | None = None) -> float:
    """Scale-out NICs per GPU in the usual node of this GPU (or in the node that carries the
    ``inter`` link, :func:`node_layout_for`): the ``[[node]]`` layout's ratio, or one NIC per
    GPU (as on DGX/HGX nodes) when no layout lists the GPU."""
    node = node_layout_for(gpu, inter)
    return node.nics_per_node / node.gpus_per_node if node else 1.0


@dataclass(frozen=True)
class CollectiveFit:
    """A measured collective curve against the model, as stored in ``[[collective_fit]]``: the
    least-squares fit ``t = latency_s + 2(n-1)/n * size / bus_bytes_per_s`` (relative errors)."""

    cluster: str
    collective: str
    num_workers: int
    devices_per_node: int
    link: str
    """The interconnect.toml link the model uses for this group ("" when not modelled)."""
    points: int
    min_bytes: float
    max_bytes: float
    latency_s: float
    bus_bytes_per_s: float
    fit_max_rel_error: float
    fit_median_rel_error: float
    model_small_rel_error: float | None
    """Model against measurement, medians of the 1-64 KiB window (None when not modelled)."""
    model_large_rel_error: float | None
    """Model against measurement, worst single point of 48 MiB and more (None: not modelled)."""
    source: str
    date: str


@lru_cache(maxsize=1)
def collective_fits() -> tuple[CollectiveFit, ...]:
    """The ``[[collective_fit]]`` rows of interconnect.toml, validated."""
    out: list[CollectiveFit] = []
    for raw in read_data("interconnect.toml").get("collective_fit", []):
        label = f"{raw.get('cluster')}/{raw.get('collective')}/{raw.get('num_workers')}"
        try:
            small = raw.get("model_small_rel_error")
            large = raw.get("model_large_rel_error")
            fit = CollectiveFit(
                cluster=str(raw["cluster"]),
                collective=str(raw["collective"]),
                num_workers=int(raw["num_workers"]),
                devices_per_node=int(raw["devices_per_node"]),
                link=str(raw.get("link", "")),
                points=int(raw["points"]),
                min_bytes=float(raw["min_bytes"]),
                max_bytes=float(raw["max_bytes"]),
                latency_s=float(raw["latency_s"]),
                bus_bytes_per_s=float(raw["bus_bytes_per_s"]),
                fit_max_rel_error=float(raw["fit_max_rel_error"]),
                fit_median_rel_error=float(raw["fit_median_rel_error"]),
                model_small_rel_error=None if small is None else float(small),
                model_large_rel_error=None if large is None else float(large),
                source=str(raw["source"]),
                date=str(raw["date"]),
            )
        except KeyError as exc:
            raise CatalogError(
                N_("interconnect.toml, collective_fit {label}: missing {key}").format(
                    label=label, key=exc
                )
            ) from None
        if fit.link and fit.link not in links():
            raise CatalogError(
                N_("interconnect.toml, collective_fit {label}: unknown link").format(label=label)
            )
        if not 1e8 <= fit.bus_bytes_per_s <= 2e13 or not 0 <= fit.latency_s <= 1e-2:
            raise CatalogError(
                N_("interconnect.toml, collective_fit {label}: implausible fit").format(label=label)
            )
        out.append(fit)
    return tuple(out)


def get_link(link_id: str) -> LinkSpec:
    """An interconnect kind by id; ValueError lists the known ones."""
    table = links()
    if link_id not in table:
        raise ValueError(
            N_("unknown interconnect {id!r}; use one of {known}").format(
                id=link_id, known=", ".join(table)
            )
        )
    return table[link_id]


#: PCIe link ids by generation (x16).
_PCIE = {3: "pcie3-x16", 4: "pcie4-x16", 5: "pcie5-x16", 6: "pcie6-x16"}
#: NVLink kinds in the GPU catalog -> link ids in interconnect.toml.
NVLINK_LINKS = {
    "nvlink2": "nvlink2",
    "nvlink3": "nvlink3",
    "nvlink4": "nvlink4",
    "nvlink5": "nvlink5",
}


def pcie_link(gpu: GPU) -> LinkSpec:
    """The PCIe link (x16) of the card's generation (Gen3 to Gen6; Gen4 when the catalog has
    none)."""
    gen = int(gpu.get("pcie_gen") or 4)
    return get_link(_PCIE.get(min(max(gen, 3), 6), "pcie4-x16"))


def host_copy_bytes_per_s(gpu: GPU) -> float:
    """Host-to-device copy bandwidth of one card: its PCIe generation and lanes at the link's
    measured bus efficiency (activation and parameter offloading move data this way)."""
    link = pcie_link(gpu)
    lanes = int(gpu.get("pcie_lanes") or 16)
    return link.unidirectional_bytes_per_s * link.bus_efficiency * min(lanes, 16) / 16


#: The link of GPUs without peer-to-peer: NCCL stages their traffic through host memory.
HOST_STAGED = "pcie-host-staged"


def has_peer_to_peer(gpu: GPU) -> bool:
    """Whether NCCL can move data GPU-to-GPU directly over PCIe.

    NVIDIA disables peer-to-peer on GeForce cards (catalog form factor ``consumer``: RTX 3090,
    4090, 5090 ...), so NCCL falls back to its SHM transport through pinned host memory; RTX
    A-series/Ada/PRO workstation cards and data-centre cards keep it. A catalog entry may state
    it with a ``p2p`` field, which then wins. AMD and Intel cards are taken to have it."""
    explicit = gpu.get("p2p")
    if explicit is not None:
        return bool(explicit)
    return not (gpu.vendor == "nvidia" and gpu.form_factor == "consumer")


def default_inter_node(gpu: GPU) -> str:
    """Inter-node link id a typical cluster of this GPU uses (overridable with --inter-node)."""
    if gpu.vendor == "intel" and "gaudi" in gpu.id:
        scaleout = "gaudi3-roce-scaleout" if "gaudi3" in gpu.id else "gaudi2-roce-scaleout"
        if scaleout in links():
            return scaleout
    if gpu.form_factor in ("sxm", "oam"):
        return "ib-ndr" if gpu.launch_year >= 2022 else "ib-hdr"
    if gpu.form_factor == "pcie":
        return "roce-200g" if "roce-200g" in links() else "eth-100g"
    return "eth-25g"


def default_gpus_per_node(gpu: GPU) -> int:
    """GPUs per node of the usual server for this form factor."""
    return {"sxm": 8, "oam": 8, "pcie": 8, "workstation": 4, "consumer": 8, "soc": 1}.get(
        gpu.form_factor, 8
    )


@dataclass(frozen=True)
class Ceiling:
    """The share of a datasheet peak that real kernels reach, and where that comes from."""

    matmul_fraction: float
    memory_fraction: float
    source: str
    memory_source: str = ""
    """Where the memory fraction comes from, when not from ``source``'s measurement."""


@lru_cache(maxsize=1)
def _efficiency_table() -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, dict[str, Any]]]:
    data = read_data("efficiency.toml")
    ceilings = {(str(r["gpu_id"]), str(r["precision"])): r for r in data.get("ceiling", [])}
    defaults = {str(r["id"]): r for r in data.get("default", [])}
    return ceilings, defaults


def _default_class(gpu: GPU) -> str:
    """The efficiency.toml default row for a GPU without its own measurement."""
    arch = str(gpu.get("architecture") or "").lower()
    if gpu.form_factor == "cpu":
        return "cpu"
    if gpu.vendor == "nvidia":
        return {
            "sxm": "nvidia-datacenter-sxm",
            "pcie": "nvidia-datacenter-pcie",
            "workstation": "nvidia-workstation",
        }.get(gpu.form_factor, "nvidia-geforce")
    if gpu.vendor == "amd":
        if gpu.form_factor == "consumer":
            return "amd-radeon"
        return "amd-instinct-cdna3" if "3" in arch else "amd-instinct-cdna2"
    if gpu.vendor == "intel":
        return "intel-gaudi" if "gaudi" in gpu.id else "intel-arc"
    if gpu.vendor == "apple":
        return "apple-silicon"
    return "fallback"


def ceiling_for(gpu: GPU, precision: str) -> Ceiling:
    """Matmul and memory efficiency: a measured ceiling when the table has one for this GPU and
    precision, else the class default (median of the measured rows of that class)."""
    ceilings, defaults = _efficiency_table()
    cls = _default_class(gpu)
    default = defaults.get(cls) or defaults.get("fallback") or {}
    mem_fraction = float(default.get("memory_fraction", 0.85))
    mem_source = N_("class default {cls}: {source}").format(
        cls=cls, source=str(default.get("source", "class default"))
    )
    row = ceilings.get((gpu.id, precision))
    if row is None and precision == "fp16":
        row = ceilings.get((gpu.id, "bf16"))
    if row is not None:
        peak = gpu.peak_flops(precision) or gpu.peak_flops("fp16")
        if peak:
            measured_bw = row.get("memory_bandwidth_bytes_per_s")
            if measured_bw:
                mem_fraction = float(measured_bw) / gpu.memory_bandwidth_bytes_per_s
                mem_source = N_("measured: {source} ({date})").format(
                    source=row.get("memory_source") or row["source"],
                    date=row.get("memory_date") or row["date"],
                )
            fraction = min(float(row["matmul_flops"]) / peak, 1.0)
            return Ceiling(
                fraction,
                mem_fraction,
                N_("measured: {source} ({date})").format(source=row["source"], date=row["date"]),
                mem_source,
            )
    # The class's median for this precision where one was measured (fp8, tf32 and fp32 reach
    # other shares of their peaks than 16-bit GEMMs), else its 16-bit median.
    by_precision = default.get("matmul_fraction_by_precision") or {}
    fraction = float(by_precision.get(precision, default.get("matmul_fraction", 0.7)))
    source = str(default.get("source", "class default"))
    return Ceiling(
        fraction,
        mem_fraction,
        N_("class default {cls}: {source}").format(cls=cls, source=source),
        mem_source,
    )


def compute_precision(gpu: GPU, dtype: str) -> str:
    """The tensor precision a dtype runs at on this GPU (bf16 falls back to fp16 on V100/T4;
    a CPU without a 16-bit rate runs in fp32)."""
    if gpu.form_factor == "cpu":
        # CPU frameworks run whichever is faster: bf16 only pays with AMX-class units.
        rate = gpu.peak_flops(dtype) if dtype in PRECISION_FIELDS else None
        return dtype if rate and rate >= (gpu.peak_flops("fp32") or 0) else "fp32"
    if dtype in ("bf16", "fp16", "fp8") and gpu.peak_flops(dtype):
        return dtype
    if dtype == "bf16" and gpu.peak_flops("fp16"):
        return "fp16"
    if dtype == "fp8" and (gpu.peak_flops("bf16") or gpu.peak_flops("fp16")):
        return "bf16" if gpu.peak_flops("bf16") else "fp16"
    if dtype == "fp4" and gpu.form_factor != "cpu" and not gpu.peak_flops("fp4"):
        # Without fp4 units the next precision down the card has (the answer is then marked
        # unsupported: catalog/formats.py format_problem names what to use instead).
        for lower in ("fp8", "bf16", "fp16"):
            if gpu.peak_flops(lower):
                return lower
    if gpu.vendor == "apple" and dtype in ("bf16", "fp16", "fp8") and gpu.peak_flops("fp32"):
        # Apple GPUs publish one rate: their shader ALUs run 16-bit math at it (no tensor
        # cores; MLX and llama.cpp's Metal kernels compute fp16/bf16 matmuls on the same ALUs).
        return "fp32"
    if dtype == "fp32":
        return "fp32"
    if dtype in PRECISION_FIELDS and gpu.peak_flops(dtype):
        return dtype
    raise ValueError(
        N_("{gpu} has no tensor rate for {dtype} in the catalog; pick another GPU").format(
            gpu=gpu.id, dtype=dtype
        )
    )
