"""The training-loop verdict: pure rules over recorded step timings.

Each rule names its threshold and where the threshold comes from; the verdict is the first rule
that fires, in the order below, and the fixes are ranked by their estimated gain. The recorder
(:mod:`suanli.live.profiler`) fills :class:`StepRecord`; tests feed recorded timings directly
and compare with golden verdicts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from suanli.i18n import N_

PHASES = ("data", "h2d", "forward", "backward", "optimizer", "communication", "other")

#: Data wait above this share of the step means the GPU (or CPU) waits on the input pipeline.
#: The PyTorch performance tuning guide treats data loading that does not overlap compute as the
#: first thing to fix; a third of the step is the point where the fix (workers, pinning,
#: prefetching) typically buys more than any kernel tuning (docs/doctor.md).
INPUT_SHARE = 0.30
#: Communication above this share: scaling is limited by the network, not the GPUs
#: (the speed model's "communication" bound; docs/speed.md).
COMM_SHARE = 0.30
#: More synchronising calls per step than this (``.item()``, ``.cpu()``, ``print(loss)``) stall
#: the launch queue every time (torch.cuda.set_sync_debug_mode reports each).
SYNCS_PER_STEP = 3
#: A step whose compute (forward + backward + optimizer) takes less than this is dominated by
#: kernel-launch and Python overhead (a CUDA launch costs ~5-10 us; a few hundred launches per
#: step reach milliseconds): bigger batches, CUDA graphs or torch.compile help.
LAUNCH_BOUND_S = 0.010


@dataclass(frozen=True)
class StepRecord:
    """Seconds spent in each phase of one step."""

    data: float = 0.0
    h2d: float = 0.0
    forward: float = 0.0
    backward: float = 0.0
    optimizer: float = 0.0
    communication: float = 0.0
    other: float = 0.0
    syncs: int = 0
    """Synchronising calls seen during the step."""

    @property
    def total(self) -> float:
        """Wall time of the step."""
        return sum(float(getattr(self, p)) for p in PHASES)

    @property
    def compute(self) -> float:
        """Forward, backward and optimizer."""
        return self.forward + self.backward + self.optimizer


@dataclass(frozen=True)
class Fix:
    """A remedy and what it is expected to give."""

    action: str
    expected_speedup: float
    """Step-time ratio before / after, estimated from the measurements."""
    basis: str
    """How the gain was estimated."""


@dataclass(frozen=True)
class Report:
    """One verdict with ranked fixes."""

    verdict: str
    """``input-bound``, ``communication-bound``, ``sync-bound``, ``launch-bound``, or
    ``compute-bound`` (healthy)."""
    explanation: str
    shares: dict[str, float]
    step_time_s: float
    steps: int
    fixes: tuple[Fix, ...] = ()
    data_free_step_s: float | None = None
    """Median step time when batches were replayed from memory ("what if data were free")."""
    extras: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "verdict": self.verdict,
            "explanation": self.explanation,
            "shares": self.shares,
            "step_time_s": self.step_time_s,
            "steps": self.steps,
            "fixes": [
                {"action": f.action, "expected_speedup": f.expected_speedup, "basis": f.basis}
                for f in self.fixes
            ],
            "data_free_step_s": self.data_free_step_s,
            **self.extras,
        }


def _median(records: Sequence[StepRecord], phase: str) -> float:
    return statistics.median(float(getattr(r, phase)) for r in records)


def diagnose_steps(
    records: Sequence[StepRecord],
    *,
    warmup: int = 1,
    data_free_step_s: float | None = None,
    batch_size: int | None = None,
    multi_process: bool = False,
) -> Report:
    """The verdict for recorded steps (the first ``warmup`` steps are ignored)."""
    steady = list(records[warmup:]) or list(records)
    if not steady:
        raise ValueError(N_("no steps were recorded; run at least two training steps"))
    medians = {p: _median(steady, p) for p in PHASES}
    step = sum(medians.values())
    shares = {p: (medians[p] / step if step else 0.0) for p in PHASES}
    syncs = statistics.median(r.syncs for r in steady)
    compute = medians["forward"] + medians["backward"] + medians["optimizer"]
    fixes: list[Fix] = []
    if shares["data"] >= INPUT_SHARE:
        free = data_free_step_s if data_free_step_s is not None else step - medians["data"]
        gain = step / free if free > 0 else 1.0
        basis = (
            N_("measured: the same steps with batches replayed from memory")
            if data_free_step_s is not None
            else N_("estimated: step time minus data wait")
        )
        # Amdahl's law: removing the data wait entirely speeds the step up by at most
        # 1 / (1 - data share). A replayed step can be faster still for other reasons (warm
        # caches, no decode on the host); that part is not the loader's to claim.
        bound = 1.0 / max(1.0 - shares["data"], 1e-9)
        if gain > bound:
            gain = bound
            basis += "; " + N_("capped by Amdahl's law: data is {share:.0%} of the step").format(
                share=shares["data"]
            )
        fixes += [
            Fix(
                N_(
                    "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, "
                    "prefetch_factor=4): load batches in parallel with compute"
                ),
                gain,
                basis,
            ),
            Fix(
                N_(
                    "cache or memory-map the decoded dataset; move decoding/augmentation off "
                    "the critical path; use faster storage"
                ),
                gain,
                basis,
            ),
        ]
        return Report(
            "input-bound",
            N_(
                "the loop waits {share:.0%} of each step for the next batch; with free data "
                "the step would take {free:.1f} ms instead of {step:.1f} ms"
            ).format(share=shares["data"], free=free * 1e3, step=step * 1e3),
            shares,
            step,
            len(steady),
            tuple(fixes),
            data_free_step_s,
        )
    if multi_process and shares["communication"] >= COMM_SHARE:
        gain = step / max(step - medians["communication"] * 0.8, 1e-9)
        fixes += [
            Fix(
                N_(
                    "a bigger per-GPU batch or gradient accumulation (fewer all-reduces per sample)"
                ),
                gain,
                N_("estimated: 80% of the communication hidden"),
            ),
            Fix(
                N_(
                    "overlap communication with backward (DDP bucket_cap_mb, FSDP prefetch) or "
                    "compress gradients"
                ),
                gain,
                N_("estimated: 80% of the communication hidden"),
            ),
        ]
        return Report(
            "communication-bound",
            N_("gradient communication takes {share:.0%} of the step").format(
                share=shares["communication"]
            ),
            shares,
            step,
            len(steady),
            tuple(fixes),
            data_free_step_s,
        )
    if syncs > SYNCS_PER_STEP:
        gain = step / max(step - medians["other"], 1e-9) if medians["other"] else 1.1
        fixes.append(
            Fix(
                N_(
                    "remove host syncs from the loop: log loss.item() every N steps, "
                    "avoid .cpu()/.tolist()/print on tensors inside the step"
                ),
                gain,
                N_("estimated: the time outside the phases"),
            )
        )
        return Report(
            "sync-bound",
            N_("{syncs:.0f} synchronising calls per step stall the GPU queue").format(syncs=syncs),
            shares,
            step,
            len(steady),
            tuple(fixes),
            data_free_step_s,
        )
    if compute < LAUNCH_BOUND_S:
        fixes += [
            Fix(
                N_("a bigger batch (with bf16 mixed precision to keep memory in check)"),
                2.0,
                N_("estimated: launch overhead amortised over twice the work"),
            ),
            Fix(
                N_("torch.compile(model) or CUDA graphs to cut per-kernel launch overhead"),
                1.5,
                N_("estimated: typical gain for launch-bound small models"),
            ),
        ]
        return Report(
            "launch-bound",
            (
                N_(
                    "compute takes only {compute:.2f} ms per step at batch {batch}: "
                    "kernel-launch and Python overhead dominate"
                )
                if batch_size
                else N_(
                    "compute takes only {compute:.2f} ms per step: kernel-launch and Python "
                    "overhead dominate"
                )
            ).format(compute=compute * 1e3, batch=batch_size),
            shares,
            step,
            len(steady),
            tuple(fixes),
            data_free_step_s,
        )
    compute_share = shares["forward"] + shares["backward"] + shares["optimizer"]
    return Report(
        "compute-bound",
        N_(
            "healthy: {share:.0%} of the step is compute; compare MFU with the ceiling "
            "(suanli perf) for what is left"
        ).format(share=compute_share),
        shares,
        step,
        len(steady),
        (),
        data_free_step_s,
    )
