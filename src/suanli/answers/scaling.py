"""Does data parallelism scale? The same DDP training step on 1 and N processes of this machine
(``suanli doctor scaling``), or on 1 node and N nodes with the all-reduce bus bandwidth of each
tier (``suanli doctor scaling --nnodes N``): speed-up, efficiency, communication share and its
cause, next to what the speed model predicts.

PyTorch is imported when the ranks start, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer, from_result
from suanli.errors import MissingExtra
from suanli.i18n import N_
from suanli.live.multinode import DEFAULT_SIZES_BYTES, NodesResult, Tier, measure_nodes
from suanli.live.scaling import (
    ScalingResult,
    communication_share,
    measure_scaling,
    share_cause,
    step_speedup,
)


@dataclass(frozen=True)
class ScalingRequest:
    """The multi-process run: ranks and the size of the MLP each trains."""

    procs: int = 2
    """Ranks in the multi-process run (gloo on the CPU, NCCL on GPUs)."""
    hidden: int = 1024
    layers: int = 4
    batch: int = 16
    """Per-rank batch (weak scaling)."""
    steps: int = 12
    """Timed steps per run."""


@dataclass(frozen=True, kw_only=True)
class ScalingAnswer(Answer):
    """One-rank vs N-rank step times (seconds), the prediction, and the cause in one line."""

    schema_name = "scaling"

    processes: int
    backend: str
    """``gloo`` (CPU) or ``nccl`` (GPUs)."""
    params: int
    """Parameters of the MLP (the gradient all-reduced each step)."""
    step_1_s: float
    step_n_s: float
    allreduce_s: float
    """A bare all-reduce of the gradient buffer on N ranks."""
    predicted_step_n_s: float
    """The speed model's N-rank step from the 1-rank step and the measured all-reduce."""
    prediction_error: float
    """predicted / measured - 1."""
    speedup: float
    """Throughput of N ranks over one (same per-rank batch)."""
    efficiency: float
    """Speed-up per rank."""
    communication_share: float
    """The N-rank step's time beyond the one-rank step, as a share of it."""
    cause: str


#: The largest MLP a scaling run builds (256 MiB of fp32 weights per rank, as much again for the
#: gradients and DDP's buckets): bounded work on any machine.
MAX_MLP_PARAMS = 64 * 2**20


def check_mlp(hidden: int, layers: int) -> None:
    """ValueError with one sentence when the MLP would be larger than :data:`MAX_MLP_PARAMS`."""
    params = layers * (hidden * hidden + hidden)
    if params > MAX_MLP_PARAMS:
        raise ValueError(
            N_(
                "the MLP would have {params} parameters (at most {cap}): lower --hidden or --layers"
            ).format(params=f"{params:,}", cap=f"{MAX_MLP_PARAMS:,}")
        )


def scaling_answer(result: ScalingResult) -> ScalingAnswer:
    """The answer's view of a measured :class:`ScalingResult`."""
    return ScalingAnswer(**result.as_dict())


def scaling(req: ScalingRequest) -> ScalingAnswer:
    """Measure the step on 1 and ``req.procs`` ranks; ValueError on bad counts,
    :class:`MissingExtra` without PyTorch."""
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(N_("suanli doctor scaling needs PyTorch: pip install 'suanli[torch]'"))
    check_mlp(req.hidden, req.layers)
    return scaling_answer(measure_scaling(req.procs, req.hidden, req.layers, req.batch, req.steps))


# --- 1 node against N nodes -------------------------------------------------------------------


@dataclass(frozen=True)
class NodesScalingRequest:
    """``suanli doctor scaling --nnodes N``: the nodes, the message sizes and the MLP."""

    nnodes: int = 2
    procs_per_node: int = 2
    """Local processes per simulated node (without a launcher; under torchrun or srun the
    launcher decides)."""
    sizes_bytes: tuple[int, ...] = DEFAULT_SIZES_BYTES
    """All-reduce message sizes timed on each tier."""
    backend: str = "auto"
    """``auto`` (NCCL with GPUs, else gloo), ``gloo`` or ``nccl``."""
    inter_node: str | None = None
    """The link between nodes the speed model assumes (default by GPU form factor)."""
    hidden: int = 1024
    layers: int = 4
    batch: int = 16
    steps: int = 12


@dataclass(frozen=True, kw_only=True)
class NodesScalingAnswer(Answer):
    """1 node against N: all-reduce bus bandwidth per tier with the speed model's figure, and
    a DDP step on node 0 alone against every node, measured and predicted (seconds, bytes/s)."""

    schema_name = "scaling-nodes"

    launcher: str
    """``torchrun``, ``slurm`` or ``simulated`` (local processes counted as nodes)."""
    backend: str
    nnodes: int
    ranks_per_node: int
    nodes: tuple[str, ...]
    gpu: str | None
    """The catalog GPU the tiers' predictions use (None on CPUs or an unknown GPU)."""
    tiers: tuple[Tier, ...]
    """``intra-node``, ``inter-node`` and ``all``: each message size's median time, bus
    bandwidth and, with a prediction, the speed model's figure and measured/predicted."""
    params: int
    step_1_node_s: float
    step_n_nodes_s: float
    allreduce_s: float
    """An all-reduce of the gradient buffer over every rank."""
    predicted_step_n_s: float
    """The speed model's N-node step from the 1-node step and the measured all-reduce."""
    prediction_error: float
    speedup: float
    """Throughput of N nodes over one (same per-rank batch)."""
    efficiency: float
    communication_share: float
    cause: str
    prediction_note: str | None = field(default=None, metadata=OMIT_NONE)
    """Why the tiers have no speed-model figure."""
    rank: int = field(default=0, metadata=NOT_IN_JSON)


#: Below this share of the speed model's bus bandwidth a tier is called out as the cause.
SLOW_LINK_RATIO = 0.5
#: Where each tier's all-reduce runs, as the cause says it.
_WHERE = {
    "intra-node": N_("inside a node"),
    "inter-node": N_("between nodes"),
    "all": N_("over every rank"),
}


def _nodes_cause(result: NodesResult, share: float) -> str:
    for tier in result.tiers:
        last = tier.points[-1]  # the largest size: bandwidth-bound
        if (
            last.measured_over_predicted is not None
            and last.measured_over_predicted < SLOW_LINK_RATIO
        ):
            return N_(
                "the all-reduce {where} reaches {ratio} of the bus bandwidth the speed model "
                "expects of {link}: check the fabric (NCCL_DEBUG=INFO names the transport NCCL "
                "picked)"
            ).format(
                where=_WHERE[tier.name], ratio=f"{last.measured_over_predicted:.0%}", link=tier.link
            )
    return share_cause(share)


def nodes_answer(result: NodesResult, rank: int = 0) -> NodesScalingAnswer:
    """The answer's view of rank 0's :class:`NodesResult`."""
    nnodes = len(result.nodes)
    speedup = step_speedup(nnodes, result.step_1_node_s, result.step_n_nodes_s)
    share = communication_share(result.step_1_node_s, result.step_n_nodes_s)
    # The measured fields (launcher, nodes, tiers, step times, ...) come from the result.
    return from_result(
        NodesScalingAnswer,
        result,
        nnodes=nnodes,
        prediction_error=result.predicted_step_n_s / result.step_n_nodes_s - 1,
        speedup=speedup,
        efficiency=speedup / nnodes,
        communication_share=share,
        cause=_nodes_cause(result, share),
        rank=rank,
    )


def scaling_nodes(req: NodesScalingRequest) -> NodesScalingAnswer | None:
    """Measure 1 node against ``req.nnodes``: as one rank under torchrun or srun (rank 0 gets
    the answer, the other ranks None), or over simulated local nodes. ValueError on bad counts,
    sizes or placements; :class:`MissingExtra` without PyTorch."""
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(N_("suanli doctor scaling needs PyTorch: pip install 'suanli[torch]'"))
    check_mlp(req.hidden, req.layers)
    result = measure_nodes(
        req.nnodes,
        req.procs_per_node,
        sizes_bytes=req.sizes_bytes,
        backend=req.backend,
        inter_node=req.inter_node,
        hidden=req.hidden,
        layers=req.layers,
        batch=req.batch,
        steps=req.steps,
    )
    return None if result is None else nodes_answer(result)
