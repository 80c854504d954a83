"""Does data parallelism scale on this machine? The same DDP training step on 1 and N processes:
speed-up, efficiency, communication share and its cause, next to what the speed model predicts
from the measured all-reduce (``suanli doctor scaling``).

PyTorch is imported when the ranks start, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from suanli.answers.base import Answer
from suanli.errors import MissingExtra
from suanli.i18n import N_
from suanli.live.scaling import ScalingResult, measure_scaling


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


@dataclass(frozen=True)
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


def scaling_answer(result: ScalingResult) -> ScalingAnswer:
    """The answer's view of a measured :class:`ScalingResult`."""
    return ScalingAnswer(**result.as_dict())


def scaling(req: ScalingRequest) -> ScalingAnswer:
    """Measure the step on 1 and ``req.procs`` ranks; ValueError on bad counts,
    :class:`MissingExtra` without PyTorch."""
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(N_("suanli doctor scaling needs PyTorch: pip install 'suanli[torch]'"))
    return scaling_answer(measure_scaling(req.procs, req.hidden, req.layers, req.batch, req.steps))
