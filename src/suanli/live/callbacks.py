"""Attach the training-loop doctor to Hugging Face ``Trainer`` and PyTorch Lightning.

Both callbacks open :func:`suanli.live.profiler.profile` when training starts and print (and
keep, as ``.report``) the verdict when it ends. The framework is imported only when a callback is
created, so suanli does not depend on either.

In a multi-process run (DDP, FSDP, DeepSpeed: one process per GPU) only rank 0 records and
reports by default, so the verdict is printed once, not once per GPU; ``all_ranks=True`` records
on every rank and prefixes each rank's lines with ``[rank N]``. The rank is
``torch.distributed.get_rank()`` once the process group is initialised (both frameworks
initialise it before training starts), else the ``RANK`` then ``LOCAL_RANK`` environment
variables that launchers (torchrun, accelerate, deepspeed, SLURM wrappers) set, else 0.

With ``publish=True`` (or ``SUANLI_JOBS_DIR`` set) each instrumented rank also reports its step
time, data-wait share and, where the FLOPs are known, MFU to ``suanli export`` while training
runs (:mod:`suanli.live.jobs`): the Hugging Face callback takes the FLOPs from
``state.total_flos``, the Lightning one from ``flops_per_step=``; the peak is the catalog's for
the GPU at the training precision.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from suanli.i18n import N_, sentence
from suanli.live.diagnosis import Report


def current_rank() -> int:
    """This process's rank: the initialised process group's, else ``RANK``, else
    ``LOCAL_RANK``, else 0 (a single process)."""
    dist = sys.modules.get("torch.distributed")  # imported by whoever set up distributed
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # a half-set-up group: fall back on the launcher's variables
        pass
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def world_size() -> int:
    """Ranks in the initialised process group, else ``WORLD_SIZE``, else 1."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:
        pass
    value = os.environ.get("WORLD_SIZE", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else 1


def gpu_peak_flops(precision: str) -> float | None:
    """The catalog's dense peak FLOP/s of this process's GPU at ``precision`` (None on the CPU,
    for a GPU the catalog lacks, or without a figure)."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return None
        from suanli.live.bench.profile import local_gpu

        gpu, _gpu_id = local_gpu(torch.cuda.get_device_name())
        return None if gpu is None else gpu.peak_flops(precision)
    except Exception:  # unknown GPU or precision: no MFU, training goes on
        return None


def _publishing(publish: bool | None) -> bool:
    from suanli.live.jobs import JOBS_ENV

    return bool(os.environ.get(JOBS_ENV)) if publish is None else publish


class _Session:
    def __init__(
        self,
        warmup: int,
        all_ranks: bool = False,
        publish: bool | None = None,
        job: str | None = None,
        flops_per_step: float | None = None,
    ) -> None:
        self.warmup = warmup
        self.all_ranks = all_ranks
        self.publish = _publishing(publish)
        self.job = job or os.path.basename(sys.argv[0] or "") or "python"
        self.flops_per_step = flops_per_step
        self.rank: int | None = None
        """The rank seen when training started (None before)."""
        self._cm: Any = None
        self.recorder: Any = None
        self.report: Report | None = None
        self.publisher: Any = None
        """The :class:`~suanli.live.jobs.JobPublisher` while training runs and publishes."""

    def start(self, precision: str = "bf16") -> None:
        from suanli.live.profiler import profile

        self.rank = current_rank()
        if self.rank != 0 and not self.all_ranks:
            return  # rank 0 speaks for the run: the other ranks are not even instrumented
        if self.publish:
            from suanli.live.jobs import JobPublisher

            self.publisher = JobPublisher(self.job, self.rank, peak_flops=gpu_peak_flops(precision))
            self.publisher.flops_per_step = self.flops_per_step
        self._cm = profile(on_step=self.publisher)
        self.recorder = self._cm.__enter__()

    def stop(self, echo: bool) -> None:
        if self._cm is None:
            return
        self._cm.__exit__(None, None, None)
        self._cm = None
        if self.publisher is not None:
            self.publisher.close()
        try:
            self.report = self.recorder.report(warmup=self.warmup)
        except ValueError:
            self.report = None
        if echo and self.report is not None:
            text = format_report(self.report)
            if self.all_ranks:
                label = sentence(N_("rank {rank}").format(rank=self.rank))
                text = "\n".join(f"[{label}] {line}" for line in text.splitlines())
            print(text, flush=True)


def format_report(report: Report) -> str:
    """A few plain lines: the verdict, the shares, the fixes."""
    shares = ", ".join(f"{k} {v:.0%}" for k, v in report.shares.items() if v >= 0.01)
    lines = [
        sentence(
            N_("suanli doctor: {verdict} — {explanation}").format(
                verdict=report.verdict, explanation=report.explanation
            )
        ),
        "  "
        + sentence(
            N_("step {step:.1f} ms over {steps} steps: {shares}").format(
                step=report.step_time_s * 1e3, steps=report.steps, shares=shares
            )
        ),
    ]
    for fix in report.fixes:
        lines.append(
            "  "
            + sentence(
                N_("fix ({speedup:.1f}x): {action}").format(
                    speedup=fix.expected_speedup, action=fix.action
                )
            )
        )
    return "\n".join(lines)


def hf_precision(args: Any) -> str:
    """The catalog precision of ``TrainingArguments`` (``bf16``, ``fp16``, ``tf32``, ``fp32``)."""
    if getattr(args, "bf16", False):
        return "bf16"
    if getattr(args, "fp16", False):
        return "fp16"
    return "tf32" if getattr(args, "tf32", False) else "fp32"


def hf_callback(
    warmup: int = 2,
    echo: bool = True,
    all_ranks: bool = False,
    publish: bool | None = None,
    job: str | None = None,
) -> Any:
    """A ``transformers.TrainerCallback`` that records the steps of ``Trainer.train()``.

    ``warmup`` first steps are left out of the verdict; ``echo`` prints it when training ends;
    ``all_ranks`` records and prints on every rank (each line prefixed ``[rank N]``) instead of
    rank 0 alone. ``publish`` (default: when ``SUANLI_JOBS_DIR`` is set) reports the step time,
    data-wait share and MFU (from ``state.total_flos``) to ``suanli export`` as job ``job``
    (default: ``args.run_name``, else the script's name)."""
    from transformers import TrainerCallback

    class SuanliDoctorCallback(TrainerCallback):
        """Prints the training-loop verdict when training ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup, all_ranks, publish, job)
            self._flos = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if job is None and getattr(args, "run_name", None):
                self.session.job = str(args.run_name)
            self.session.start(hf_precision(args))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            publisher = self.session.publisher
            flos = float(getattr(state, "total_flos", 0.0) or 0.0)
            step = int(getattr(state, "global_step", 0) or 0)
            # Trainer sums every rank's FLOPs into total_flos when it logs (6 x parameters x
            # tokens, forward and backward): per rank and step at that moment.
            if publisher is not None and flos > self._flos and step > 0:
                self._flos = flos
                publisher.flops_per_step = flos / world_size() / step

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorCallback()


def lightning_precision(trainer: Any) -> str:
    """The catalog precision of a Lightning trainer (``"bf16-mixed"`` -> ``bf16``)."""
    text = str(getattr(trainer, "precision", "32"))
    if text.startswith("bf16"):
        return "bf16"
    if text.startswith("16"):
        return "fp16"
    return "fp32"


def lightning_callback(
    warmup: int = 2,
    echo: bool = True,
    all_ranks: bool = False,
    publish: bool | None = None,
    job: str | None = None,
    flops_per_step: float | None = None,
) -> Any:
    """A Lightning ``Callback`` that records the steps of ``Trainer.fit()``.

    The options are those of :func:`hf_callback`: rank 0 alone records and prints unless
    ``all_ranks``; ``publish`` reports to ``suanli export``, with MFU when ``flops_per_step``
    (model FLOPs of one optimizer step on one rank, e.g. 6 x parameters x tokens) is given."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback

    class SuanliDoctorLightning(Callback):  # type: ignore[misc]
        """Prints the training-loop verdict when fitting ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup, all_ranks, publish, job, flops_per_step)

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.session.start(lightning_precision(trainer))

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorLightning()
