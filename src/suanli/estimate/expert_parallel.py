"""Expert parallelism (MoE) in training: the expert GEMMs each GPU runs and the all-to-all that
feeds them.

With expert parallelism over ``ep`` GPUs each GPU holds ``E / ep`` of a layer's ``E`` experts
and, after the dispatch all-to-all, runs them on the tokens the whole group routed to them:
``T · ep · k / E`` rows per local expert on average for ``T`` micro-batch tokens per GPU and
top-``k`` routing (GShard, Lepikhin et al. 2020, §2.2; Megatron-Core's all-to-all token
dispatcher).
The FLOPs per GPU (``E/ep`` experts x ``T·ep·k/E`` rows = ``T·k`` expert rows) do not depend on
``ep``; the GEMMs grow ``ep`` times taller, which is what makes them efficient. The synchronous
all-to-all waits for the busiest rank, whose load exceeds the mean by the router's imbalance
(:data:`LOAD_IMBALANCE`).

Works on floats and, with numpy's ``where``/``minimum``/``maximum``, on arrays of layouts, so the
scalar estimate and the vectorized planner share it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from suanli.estimate.comm import Network
from suanli.estimate.shapes import LinearShape
from suanli.estimate.workload import TrainWork
from suanli.models.spec import ModelSpec

#: The busiest expert-parallel rank's tokens over the mean, in training. Wang et al. 2024,
#: "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts" (arXiv 2408.15664,
#: Table 2), measure the global maximal violation ``max load / mean load - 1`` at 0.04 with the
#: loss-free balancing DeepSeek-V3 trains with (and 0.52-0.72 per expert with an auxiliary
#: loss; a rank that holds several experts averages some of that away). The lower figure is the
#: default: it is a floor on the imbalance, not a fit (figures not re-read from the PDF when this
#: was written, 2026-12-07: check them). At ``ep = 1`` the GPU runs every token
#: whatever the routing, so no imbalance applies.
LOAD_IMBALANCE = 1.04


def _where(condition: Any, if_true: Any, if_false: Any) -> Any:
    return if_true if condition else if_false


def local_experts(num_experts: int, ep: int) -> int:
    """Experts of one MoE layer on the busiest GPU of an ``ep``-way expert-parallel group."""
    return math.ceil(num_experts / max(ep, 1))


def expert_rows_share(spec: ModelSpec, ep: int, imbalance: float | None = None) -> float:
    """Rows of each local expert GEMM per micro-batch token of one GPU: ``ep · k / E`` (times
    the busiest rank's ``imbalance``, default :data:`LOAD_IMBALANCE`, where ``ep > 1``); 1 for
    a dense model."""
    moe = spec.moe
    if moe is None:
        return 1.0
    # More ranks than experts (Megatron refuses it) would hold one expert each.
    ep = min(max(ep, 1), moe.num_experts)
    share = moe.experts_per_token / moe.num_experts
    if ep == 1:
        return share
    return share * ep * (LOAD_IMBALANCE if imbalance is None else imbalance)


def expert_tp(tp: Any, etp: int) -> Any:
    """GPUs each routed expert is split over, for tensor degree ``tp`` (an int or a numpy array
    of them) and expert tensor degree ``etp``: None where ``etp`` is 0 (the experts follow
    ``tp``), else the largest common divisor of the two (``etp`` itself where it divides
    ``tp``)."""
    if not etp:
        return None
    if hasattr(tp, "dtype"):
        import numpy as np

        return np.gcd(tp.astype(np.int64), etp)
    return math.gcd(int(tp), etp)


def local_expert_shapes(shapes: tuple[LinearShape, ...], spec: ModelSpec, ep: int) -> Any:
    """``shapes`` (:func:`suanli.estimate.shapes.linear_shapes`) with the expert projections
    counted on one GPU of ``ep``: ``ceil(E / ep)`` experts per MoE layer instead of ``E``."""
    moe = spec.moe
    if moe is None or ep <= 1:
        return shapes
    held = local_experts(moe.num_experts, ep)
    return tuple(
        replace(s, count=s.count // moe.num_experts * held) if s.kind == "experts" else s
        for s in shapes
    )


def node_copy_share(spec: ModelSpec, ep: int, per_node: Any) -> Any:
    """With DeepEP's per-node deduplication: the cross-node bytes of a dispatch over those of
    the plain all-to-all, for experts spread evenly over the ``ceil(ep / per_node)`` nodes and
    uniform top-k routing. A token reaches a remote node with probability
    ``1 - C(E - E/n, k) / C(E, k)`` and crosses once per node reached, instead of
    ``k · (ep - m) / ep`` times (ints or numpy arrays of ``per_node``; 1 inside one node)."""
    moe = spec.moe
    if moe is None or ep <= 1:
        return 1.0 + 0.0 * per_node
    nodes = -(-ep // per_node)
    experts, k = moe.num_experts, moe.experts_per_token
    on_node = experts / nodes
    miss = 1.0 + 0.0 * per_node
    for i in range(k):
        miss = miss * (experts - on_node - i) / (experts - i)
    crossings = (nodes - 1) * (1.0 - miss)
    copies = k * (ep - per_node) / ep
    # Inside one node (copies 0) nothing crosses either way.
    return crossings / (copies + (copies == 0)) + (copies == 0)


def dispatch_bytes(tokens: Any, spec: ModelSpec, tensor_bytes: float, tp: Any) -> Any:
    """Bytes one GPU sends in one dispatch (or combine) all-to-all of one MoE layer: each of its
    ``tokens`` goes to ``k`` experts as a ``hidden``-wide activation, the tensor-parallel group
    splitting the tokens (Megatron's sequence-parallel dispatcher): ``T·k·h·b / tp``. Of these,
    the ``1/ep`` share addressed to its own experts stays on the GPU."""
    k = spec.moe.experts_per_token if spec.moe is not None else 0
    return tokens * k * spec.hidden_size * tensor_bytes / tp


def expert_all_to_all_s(
    net: Network,
    nbytes: Any,
    ep: int,
    tp: Any,
    *,
    where: Callable[[Any, Any, Any], Any] = _where,
    minimum: Callable[[Any, Any], Any] = min,
    maximum: Callable[[Any, Any], Any] = max,
    spec: ModelSpec | None = None,
    dispatcher: str = "alltoall",
) -> Any:
    """Seconds of one all-to-all in which each of ``ep`` ranks (spaced ``tp`` GPUs apart) sends
    ``nbytes``, ``nbytes / ep`` to each rank. With ``dispatcher="deepep"`` (and the MoE
    ``spec``) the bytes bound for other nodes shrink to one copy per node reached
    (:func:`node_copy_share`) and the node's NVLink carries the forwarded copies.

    Inside a node: ``(ep−1)/ep · B`` over the GPU's link, as a reduce-scatter. Across nodes the
    ``m`` ranks of a node also reach each other over NVLink, at the same time, while the
    ``(ep−m)/ep · B`` addressed to other nodes leave through the GPU's share of the node's NICs
    (``nics · rate / gpus_per_node``; the NIC's rate where the network gives no NIC count). Unlike
    a ring, an all-to-all cannot stripe one GPU's bytes over the other GPUs' NICs: every GPU of
    the node sends its own at once (DeepSeek-V3 report §3.2.2: cross-node all-to-all at the IB
    rate, 50 GB/s per GPU, 3.2x less than NVLink's 160 GB/s). The per-peer latency ``(ep−1)α`` and
    the collective's base latency as :func:`suanli.estimate.comm.all_to_all_s`, the larger of
    the two links' across nodes however many ranks share a node."""
    if ep <= 1:
        return 0.0 * tp
    inside = ep * tp <= net.gpus_per_node
    intra_bw = net.intra.group_effective_bytes_per_s(ep, minimum=minimum, maximum=maximum)
    intra_bw = intra_bw * net.intra.gather_share
    per_node = net.ranks_per_node(ep, tp, minimum=minimum, maximum=maximum)
    nic_share = net.nics_per_node / net.gpus_per_node if net.nics_per_node > 0 else 1.0
    nic_bw = net.inter.effective_bytes_per_s * nic_share * net.inter.gather_share
    node_bw = net.intra.group_effective_bytes_per_s(per_node, minimum=minimum, maximum=maximum)
    node_bw = node_bw * net.intra.gather_share
    remote = (ep - per_node) / ep * nbytes
    local = (per_node - 1) / ep * nbytes
    if dispatcher == "deepep" and spec is not None:
        # One copy a node over the NIC; every copy for another GPU of the node over NVLink.
        remote = remote * node_copy_share(spec, ep, per_node)
        local = (per_node - 1) / per_node * nbytes
    across = maximum(remote / nic_bw, local / node_bw)
    inside_s = (ep - 1) / ep * nbytes / intra_bw + (ep - 1) * net.intra.latency_s
    across_s = across + (ep - 1) * net.inter.latency_s
    # One NCCL kernel of point-to-point sends whatever the ranks' placement: across nodes it
    # pays the larger base even with one rank a node (a ring's intra-node phase is not the
    # reason here), so spreading the ranks out never looks cheaper than keeping them adjacent.
    base = where(inside, net.intra.base_latency_s, net.spanning_base_latency(ep, 1))
    return where(inside, inside_s, across_s) + base


def moe_op_bytes(spec: ModelSpec, work: TrainWork, *, fused: bool) -> dict[str, float]:
    """Forward bytes per token of one layer's MoE routing and permutation kernels, averaged over
    the layers by the share that are MoE (docs/speed.md, "Routing and token permutation"):
    ``moe_permute`` the copies of the ``k`` routed rows of width ``h`` (permute 1 and unpermute
    always; permute 2 and its unsort where the all-to-all dispatcher meets ``ep > 1`` and more
    than one local expert), ``router`` the fp32 softmax/top-k side over ``E`` logits. Fused
    (Transformer Engine's ``moe_permute``, Megatron's fused router) or eager (``index_select``,
    ``mul``, ``zeros``, ``scatter_add_``); every fused count is at most its eager one. Zeros for
    a dense model."""
    moe = spec.moe
    if moe is None or not spec.moe_layers:
        return {"moe_permute": 0.0, "router": 0.0}
    share = len(spec.moe_layers) / spec.num_layers
    h, b, k, e = spec.hidden_size, work.tensor_bytes, moe.experts_per_token, moe.num_experts
    row = h * b
    if fused:
        permute, unpermute, router = (k + 1) * row, (k + 1) * row, 5 * e + 12 * k
    else:
        permute, unpermute, router = 2 * k * row, (3 * k + 2) * row, 16 * e + 12 * k
    ep = work.parallel.ep
    # Permute 2 (sort_chunks_by_idxs) and its unsort run on the rows the busiest rank received.
    regroup = _sorts_chunks(spec, work) * 2 * 2 * k * row * LOAD_IMBALANCE if ep > 1 else 0.0
    return {
        "moe_permute": float(share * (permute + unpermute + regroup)),
        "router": float(share * router),
    }


def _sorts_chunks(spec: ModelSpec, work: TrainWork) -> bool:
    """Megatron's all-to-all dispatcher regroups the received rows by local expert (permute 2)
    where ``ep > 1`` and a GPU holds more than one expert; DeepEP sorts inside its kernels."""
    moe = spec.moe
    held = local_experts(moe.num_experts, work.parallel.ep) if moe is not None else 0
    return work.parallel.ep > 1 and held > 1 and work.ep_dispatcher == "alltoall"


def moe_kernels_per_layer(spec: ModelSpec, work: TrainWork) -> float:
    """Routing and permutation kernels of one layer's forward, averaged over the layers: fused,
    permute and unpermute, permute 2 and unsort (:func:`moe_op_bytes`) and one router kernel;
    eager, ``index_select``, the router's four passes and unpermute's ``mul``, ``zeros``,
    ``scatter_add_`` and cast, and the two chunk sorts."""
    if spec.moe is None or not spec.moe_layers:
        return 0.0
    share = len(spec.moe_layers) / spec.num_layers
    sorts = 2 if _sorts_chunks(spec, work) else 0
    return share * ((2 + 1 + sorts) if work.fused_kernels else (1 + 4 + 4 + sorts))
