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


class _Session:
    def __init__(self, warmup: int, all_ranks: bool = False) -> None:
        self.warmup = warmup
        self.all_ranks = all_ranks
        self.rank: int | None = None
        """The rank seen when training started (None before)."""
        self._cm: Any = None
        self.recorder: Any = None
        self.report: Report | None = None

    def start(self) -> None:
        from suanli.live.profiler import profile

        self.rank = current_rank()
        if self.rank != 0 and not self.all_ranks:
            return  # rank 0 speaks for the run: the other ranks are not even instrumented
        self._cm = profile()
        self.recorder = self._cm.__enter__()

    def stop(self, echo: bool) -> None:
        if self._cm is None:
            return
        self._cm.__exit__(None, None, None)
        self._cm = None
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


def hf_callback(warmup: int = 2, echo: bool = True, all_ranks: bool = False) -> Any:
    """A ``transformers.TrainerCallback`` that records the steps of ``Trainer.train()``.

    ``warmup`` first steps are left out of the verdict; ``echo`` prints it when training ends;
    ``all_ranks`` records and prints on every rank (each line prefixed ``[rank N]``) instead of
    rank 0 alone."""
    from transformers import TrainerCallback

    class SuanliDoctorCallback(TrainerCallback):  # type: ignore[misc]
        """Prints the training-loop verdict when training ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup, all_ranks)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.session.start()

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorCallback()


def lightning_callback(warmup: int = 2, echo: bool = True, all_ranks: bool = False) -> Any:
    """A Lightning ``Callback`` that records the steps of ``Trainer.fit()``.

    The options are those of :func:`hf_callback`: rank 0 alone records and prints unless
    ``all_ranks``."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback

    class SuanliDoctorLightning(Callback):  # type: ignore[misc]
        """Prints the training-loop verdict when fitting ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup, all_ranks)

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.session.start()

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorLightning()
