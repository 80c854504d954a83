"""Collective communication time: latency (alpha) and bandwidth (beta) terms per algorithm.

For ``n`` ranks moving a buffer of ``B`` bytes over links of one-direction bandwidth ``bw``
(already scaled by the bus efficiency nccl-tests reach) and per-step latency ``alpha``
(Thakur, Rabenseifner & Gropp 2005; NCCL's performance notes, "bus bandwidth"):

- ring all-reduce: ``2(n-1)/n · B/bw + 2(n-1)·alpha``;
- tree all-reduce (double binary tree): ``2·B/bw + 2·log2(n)·alpha`` — wins for small buffers;
- reduce-scatter and all-gather: ``(n-1)/n · B/bw + (n-1)·alpha``;
- all-to-all: ``(n-1)/n · B/bw + (n-1)·alpha``;
- point-to-point: ``B/bw + alpha``.

Every collective (and a point-to-point transfer) also pays a fixed per-collective cost
``base`` once (:attr:`Link.base_latency_s`; NCCL's tuning model has the same split: a base
latency per algorithm and protocol plus a per-hop latency, NVIDIA/nccl src/graph/tuning.cc).
A small all-reduce therefore costs ``base + 2·log2(n)·alpha``; ``interconnect.toml`` fits both
per link on measured small-message all-reduces of 2, 4 and 8 GPUs (see the file's header).

On an NVSwitch that reduces in the switch (NVLink SHARP, NCCL's ``NVLS`` algorithm, its default
for all-reduce inside an H100/H200 node of more than four GPUs) every GPU sends its buffer once
and receives the sum once: ``t = base_nvls + B / bw_nvls`` (:class:`Nvls`), taken where faster.

NCCL also switches protocols with the size: low-latency ones (LL, LL128) for small and middle
messages, the bulk one (Simple) for large. Where a link's curve shows the two apart (NVLink 3:
a 4-16 MiB all-reduce on 8 A100s reaches 30-50% of the large-message bus bandwidth), the link
carries the low-latency protocols' bandwidth and the bulk protocol's base latency, and an
all-reduce takes the faster of the two (:attr:`Link.small_efficiency`).

A mesh without a switch (AMD's xGMI, Gaudi's on-chip RoCE) links each GPU to each peer, so a
group of ``n`` GPUs there reaches ``n - 1`` peer links, not the GPU's total
(:meth:`Link.group_bytes_per_s`; :meth:`Network.link_for` applies it).

A group that fits in a node uses the intra-node link. A group that spans nodes is limited by the
inter-node link; NCCL runs one ring (channel) per NIC, so a group with ``m`` ranks on each node
drives ``m`` GPUs' share of the node's NICs, up to the intra-node rate the rings also cross
(:meth:`Network.inter_bandwidth`, used when :attr:`Network.nics_per_node` is set).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from suanli.i18n import N_


@dataclass(frozen=True, kw_only=True)
class OneShot:
    """The serving engines' custom all-reduce over one link (TensorRT-LLM's kernels, also used
    by vLLM and SGLang; vLLM's own on ROCm): every GPU reads its peers' buffers directly, in one
    or two kernel stages, without NCCL's ring.
    ``t = base_s + step_s · log2(n) + (n - 1) / n · bytes / bytes_per_s`` up to ``max_bytes``
    through a switch (NVSwitch: a GPU's bandwidth is shared by its peers); on a full mesh
    (``per_peer``: AMD's xGMI, one link to each peer) every peer adds a link, so the last term is
    ``(n - 1) / n · bytes / ((n - 1) · bytes_per_s) = bytes / (n · bytes_per_s)``."""

    base_s: float
    step_s: float
    bytes_per_s: float
    max_bytes: int
    source: str = ""
    date: str = ""
    per_peer: bool = False
    """``bytes_per_s`` is per peer link of a full mesh (see the class docstring)."""
    max_ranks: int = 0
    """Largest group measured (0: any); larger groups use NCCL."""

    def covers(self, n: Any) -> Any:
        """Whether a group of ``n`` GPUs is within the measured group sizes (an int, or an
        array of them: element-wise)."""
        return (self.max_ranks <= 0) | (n <= self.max_ranks)

    def seconds(self, nbytes: Any, n: Any, *, log2: Callable[[Any], Any] = math.log2) -> Any:
        """One all-reduce of ``nbytes`` over ``n`` GPUs (ints, or arrays with numpy's log2)."""
        if self.per_peer:
            return self.base_s + self.step_s * log2(n) + nbytes / (n * self.bytes_per_s)
        return self.base_s + self.step_s * log2(n) + (n - 1) / n * nbytes / self.bytes_per_s


@dataclass(frozen=True, kw_only=True)
class Nvls:
    """NCCL's NVLink SHARP all-reduce inside one node: ``t = base_s + bytes / bytes_per_s``,
    with ``bytes_per_s`` the algorithm bandwidth per GPU (the switch does the reduction, so the
    time no longer grows with the number of ranks), for groups of at least ``min_ranks``."""

    base_s: float
    bytes_per_s: float
    min_ranks: int
    source: str = ""
    date: str = ""

    def seconds(self, nbytes: Any) -> Any:
        """One all-reduce of ``nbytes`` (a float, or an array)."""
        return self.base_s + nbytes / self.bytes_per_s


@dataclass(frozen=True, kw_only=True)
class Link:
    """One tier of the network as seen by one GPU."""

    name: str
    bandwidth_bytes_per_s: float
    """One-direction bandwidth per GPU."""
    latency_s: float
    efficiency: float = 1.0
    """Share of the bandwidth that large collectives reach (nccl-tests bus bandwidth)."""
    base_latency_s: float = 0.0
    """Fixed cost paid once per collective (or point-to-point transfer), on top of the
    per-step ``latency_s``."""
    oneshot: OneShot | None = None
    """The serving engines' one-shot all-reduce over this link, where measured."""
    nvls: Nvls | None = None
    """NCCL's in-switch (NVLink SHARP) all-reduce over this link, where the switch has it."""
    small_efficiency: float = 0.0
    """Share of the bandwidth an all-reduce reaches with NCCL's low-latency protocols (LL,
    LL128), where measured apart from the bulk one: they pay ``base_latency_s``, the bulk
    protocol (Simple) reaches ``efficiency`` after ``bulk_base_latency_s``. 0: one protocol."""
    bulk_base_latency_s: float = 0.0
    """Fixed cost of an all-reduce with the bulk protocol (used with ``small_efficiency``)."""
    per_peer_bytes_per_s: float = 0.0
    """One peer's link of a mesh without a switch (AMD's xGMI, Gaudi's RoCE): a group of ``n``
    GPUs reaches ``n - 1`` links, not the GPU's total. 0: a switch (every group gets it all)."""
    gather_efficiency: float = 0.0
    """Share of the bandwidth all-gathers, reduce-scatters and all-to-alls reach, where measured
    apart from the all-reduce's ``efficiency`` (staged through host memory they lose more).
    0: the same as ``efficiency``."""

    @property
    def gather_share(self) -> float:
        """What an all-gather or reduce-scatter reaches of :attr:`effective_bytes_per_s`."""
        if self.gather_efficiency <= 0 or self.efficiency <= 0:
            return 1.0
        return self.gather_efficiency / self.efficiency

    @property
    def effective_bytes_per_s(self) -> float:
        """Bandwidth a large collective sees."""
        return self.bandwidth_bytes_per_s * self.efficiency

    def group_bytes_per_s(
        self,
        group: Any,
        *,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> Any:
        """One-direction bandwidth a group of ``group`` GPUs on this link can use: all of it
        through a switch, ``group - 1`` peer links on a mesh (ints, or arrays with numpy's
        ``minimum``/``maximum``). stas00/ml-engineering all_reduce_bench on MI300X: 2 GPUs
        47.7 GB/s bus bandwidth, 8 GPUs 312.9 (one 64 GB/s link against seven)."""
        if self.per_peer_bytes_per_s <= 0:
            return self.bandwidth_bytes_per_s
        peers = maximum(group - 1, 1)
        return minimum(self.bandwidth_bytes_per_s, peers * self.per_peer_bytes_per_s)

    def group_effective_bytes_per_s(
        self,
        group: Any,
        *,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> Any:
        """:meth:`group_bytes_per_s` at the bus efficiency large collectives reach."""
        return self.efficiency * self.group_bytes_per_s(group, minimum=minimum, maximum=maximum)

    def for_group(self, group: int) -> Link:
        """This link as a group of ``group`` GPUs sees it (:meth:`group_bytes_per_s`)."""
        bandwidth = float(self.group_bytes_per_s(group))
        if bandwidth == self.bandwidth_bytes_per_s:
            return self
        return replace(self, bandwidth_bytes_per_s=bandwidth)


def _where(condition: Any, if_true: Any, if_false: Any) -> Any:
    return if_true if condition else if_false


@dataclass(frozen=True, kw_only=True)
class Network:
    """The links a job's GPUs use: within a node and between nodes."""

    intra: Link
    inter: Link
    gpus_per_node: int
    nics_per_node: float = 0.0
    """Scale-out NICs (of the ``inter`` link's rate) per node. 0, the default, models no NIC
    striping: every group that spans nodes gets the ``inter`` link as it is (one NIC per GPU)."""

    def ranks_per_node(
        self,
        group: Any,
        stride: Any = 1,
        *,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> Any:
        """How many ranks of a group spaced ``stride`` GPUs apart sit in one node (at least 1).

        Works on ints and, with ``minimum=np.minimum, maximum=np.maximum``, on numpy arrays."""
        return maximum(minimum(group, self.gpus_per_node // stride), 1)

    def inter_bandwidth(
        self,
        group: Any,
        stride: Any = 1,
        *,
        where: Callable[[Any, Any, Any], Any] = _where,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> Any:
        """Effective (bus) bandwidth of a group that spans nodes.

        NCCL stripes a collective over all NICs of a node: one ring (channel) per NIC, each
        crossing the node boundary at a different GPU. A node's NICs carry
        ``nics_per_node · rate``, shared by the ``gpus_per_node / m`` groups that run at once
        when each group has ``m`` ranks per node, so a group gets ``m · nics · rate / gpus``,
        capped by the intra-node link its rings also cross (``m > 1``). With ``m = 1`` (a data
        parallel group across tensor-parallel nodes) that is each GPU's share of the NICs; with
        the whole node in the group it is the node's NICs (NVIDIA GTC24 S62129: DGX H100 with
        8x 400G reaches 380 GB/s all-reduce busbw across nodes, DGX A100 with 8x 200G 192 GB/s).
        Works on ints and, with numpy's ``where``/``minimum``/``maximum``, on arrays."""
        if self.nics_per_node <= 0:
            return self.inter.effective_bytes_per_s
        m = self.ranks_per_node(group, stride, minimum=minimum, maximum=maximum)
        share = self.inter.effective_bytes_per_s * self.nics_per_node / self.gpus_per_node
        striped = m * share
        intra = self.intra.group_effective_bytes_per_s(m, minimum=minimum, maximum=maximum)
        return where(m > 1, minimum(striped, intra), striped)

    def _inside(self, group: Any, stride: Any) -> Any:
        """Whether a group of ``group`` ranks spaced ``stride`` GPUs apart stays in one node."""
        return (group * stride <= self.gpus_per_node) | (group <= 1)

    def bottleneck(
        self,
        group: Any,
        stride: Any = 1,
        *,
        where: Callable[[Any, Any, Any], Any] = _where,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> tuple[Any, Any]:
        """(effective bandwidth, per-step latency) of the link a group of ``group`` ranks spaced
        ``stride`` GPUs apart is limited by: what :meth:`link_for` returns, for ints or (with
        numpy's ``where``/``minimum``/``maximum``) for arrays of layouts."""
        inside = self._inside(group, stride)
        inter_bw = self.inter_bandwidth(
            group, stride, where=where, minimum=minimum, maximum=maximum
        )
        intra_bw = self.intra.group_effective_bytes_per_s(group, minimum=minimum, maximum=maximum)
        bandwidth = where(inside, intra_bw, inter_bw)
        latency = where(inside, self.intra.latency_s, self.inter.latency_s)
        return bandwidth, latency

    def gather_share(
        self,
        group: Any,
        stride: Any = 1,
        *,
        where: Callable[[Any, Any, Any], Any] = _where,
    ) -> Any:
        """:attr:`Link.gather_share` of the link :meth:`bottleneck` picks (ints, or arrays of
        layouts with numpy's ``where``)."""
        inside = self._inside(group, stride)
        return where(inside, self.intra.gather_share, self.inter.gather_share)

    def base_latency(
        self,
        group: Any,
        stride: Any = 1,
        *,
        where: Callable[[Any, Any, Any], Any] = _where,
    ) -> Any:
        """The per-collective base latency of the link :meth:`bottleneck` picks (ints, or arrays
        of layouts with numpy's ``where``)."""
        inside = self._inside(group, stride)
        return where(inside, self.intra.base_latency_s, self.spanning_base_latency(group, stride))

    def spanning_base_latency(self, group: Any, stride: Any = 1) -> Any:
        """The base latency of a collective over ``group`` ranks spread over several nodes: with
        more than one rank a node (:meth:`ranks_per_node` above 1) it also runs the intra-node
        phase of the same NCCL kernel, so it pays at least the intra-node base (ints or
        arrays)."""
        several = (group > 1) * (2 * stride <= self.gpus_per_node)
        both = max(self.intra.base_latency_s, self.inter.base_latency_s)
        return several * both + (1 - several) * self.inter.base_latency_s

    def ring_latency(
        self,
        group: Any,
        stride: Any = 1,
        *,
        where: Callable[[Any, Any, Any], Any] = _where,
        minimum: Callable[[Any, Any], Any] = min,
        maximum: Callable[[Any, Any], Any] = max,
    ) -> Any:
        """Per-step latency of one ring all-gather or reduce-scatter over ``group`` ranks spaced
        ``stride`` GPUs apart: its ``n - 1`` steps, of which ``nodes - 1`` cross nodes at the
        inter-node latency and the rest stay on the intra-node link (NVIDIA/nccl
        src/graph/tuning.cc: ``nInterSteps = nNodes - 1`` for these collectives). Ints, or
        arrays with numpy's ``where``/``minimum``/``maximum``."""
        per_node = self.ranks_per_node(group, stride, minimum=minimum, maximum=maximum)
        nodes = -(-group // per_node)
        spanning = (group - nodes) * self.intra.latency_s + (nodes - 1) * self.inter.latency_s
        inside = (group - 1) * self.intra.latency_s
        return where(self._inside(group, stride), inside, spanning)

    def point_to_point_link(self, group: int, stride: int = 1) -> Link:
        """The link one rank's send to one peer uses: NVLink/PCIe inside a node, its own NIC
        across nodes (striping over the node's NICs needs many flows, as collectives have)."""
        if group <= 1 or group * stride <= self.gpus_per_node:
            return self.intra.for_group(2)
        return self.inter

    def link_for(self, group: int, stride: int = 1) -> Link:
        """The bottleneck link of a group of ``group`` ranks spaced ``stride`` GPUs apart."""
        if group <= 1 or group * stride <= self.gpus_per_node:
            return self.intra.for_group(group)
        base = float(self.spanning_base_latency(group, stride))
        inter = (
            self.inter
            if base == self.inter.base_latency_s
            else replace(self.inter, base_latency_s=base)
        )
        if self.nics_per_node <= 0:
            return inter
        bandwidth = float(self.inter_bandwidth(group, stride))
        if bandwidth == self.inter.effective_bytes_per_s:
            return inter
        m = self.ranks_per_node(group, stride)
        name = N_("{link} x{nics:g} per node, {gpus} GPU(s) of the group each").format(
            link=self.inter.name, nics=self.nics_per_node, gpus=m
        )
        return Link(
            name=name,
            bandwidth_bytes_per_s=bandwidth,
            latency_s=self.inter.latency_s,
            efficiency=1.0,
            base_latency_s=base,
        )


def tp_all_reduce_s(nbytes: float, n: int, link: Link) -> float:
    """A tensor-parallel all-reduce of a serving engine: the one-shot kernel where the link has
    a measured one and the message is within its measured range and it beats NCCL, else NCCL
    (:func:`all_reduce_s`)."""
    nccl = all_reduce_s(nbytes, n, link)
    shot = link.oneshot
    if shot is None or n <= 1 or nbytes <= 0 or nbytes > shot.max_bytes or not shot.covers(n):
        return nccl
    return min(nccl, float(shot.seconds(nbytes, n)))


def _ring_or_tree_s(nbytes: float, n: int, bytes_per_s: float, alpha_s: float) -> float:
    """The faster of a ring and a tree all-reduce, without the per-collective base latency."""
    ring = 2 * (n - 1) / n * nbytes / bytes_per_s + 2 * (n - 1) * alpha_s
    tree = 2 * nbytes / bytes_per_s + 2 * math.log2(n) * alpha_s
    return min(ring, tree)


def all_reduce_s(nbytes: float, n: int, link: Link) -> float:
    """The faster of ring and tree all-reduce (NCCL picks per size), plus the base latency; on
    a link measured with two protocols the faster of them (:attr:`Link.small_efficiency`); the
    in-switch NVLS all-reduce where the link has it, the group is large enough and it is
    faster."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    bw = link.effective_bytes_per_s
    nccl = _ring_or_tree_s(nbytes, n, bw, link.latency_s) + link.base_latency_s
    if link.small_efficiency > 0:
        # NCCL picks the protocol per size: low latency with less bandwidth, or the bulk one.
        small_bw = link.bandwidth_bytes_per_s * link.small_efficiency
        small = _ring_or_tree_s(nbytes, n, small_bw, link.latency_s) + link.base_latency_s
        nccl = min(small, nccl - link.base_latency_s + link.bulk_base_latency_s)
    nvls = link.nvls
    if nvls is None or n < nvls.min_ranks:
        return nccl
    return min(nccl, float(nvls.seconds(nbytes)))


def reduce_scatter_s(nbytes: float, n: int, link: Link) -> float:
    """Reduce-scatter of a ``nbytes`` buffer (each rank ends with ``nbytes / n``)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    steps = (n - 1) * link.latency_s
    bandwidth = link.effective_bytes_per_s * link.gather_share
    return (n - 1) / n * nbytes / bandwidth + steps + link.base_latency_s


def all_gather_s(nbytes: float, n: int, link: Link) -> float:
    """All-gather into a ``nbytes`` buffer (each rank contributes ``nbytes / n``)."""
    return reduce_scatter_s(nbytes, n, link)


def all_to_all_s(nbytes: float, n: int, link: Link) -> float:
    """All-to-all where each rank sends ``nbytes`` in total, ``nbytes / n`` to each peer."""
    return reduce_scatter_s(nbytes, n, link)


def p2p_s(nbytes: float, link: Link) -> float:
    """One point-to-point transfer: one step's latency, no collective base (Vidur's measured
    intra-node send/recv of 2-26 KiB takes 5-13 us, far below a collective's 20-50 us floor;
    docs/research/collective-calibration.md §5)."""
    if nbytes <= 0:
        return 0.0
    return nbytes / link.effective_bytes_per_s + link.latency_s


def pipeline_p2p_s(hop_s: Any, per_micro_s: Any, vpp: int, micro_batches: int) -> Any:
    """Steady-state pipeline transfers a GPU waits on per step: an activation forward and a
    gradient backward per micro-batch and model chunk (``hop_s`` each; ``vpp`` chunks cross
    ``vpp`` times the boundaries, Narayanan et al. 2021 §2.2.2). 1F1B blocks on them (Megatron
    forces ``overlap_p2p_comm`` off without interleaving); the interleaved schedule posts them
    before a chunk's compute and waits after (``--no-overlap-p2p-communication`` is opt-out), so
    only what outlasts a chunk's forward (a third of its time) shows. Floats or numpy arrays."""
    if vpp <= 1:
        return 2 * hop_s * micro_batches
    chunk_forward_s = per_micro_s / (3 * vpp)
    exposed = (hop_s - chunk_forward_s) * (hop_s > chunk_forward_s)
    return 2 * vpp * exposed * micro_batches
