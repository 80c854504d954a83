"""Attach the training-loop doctor to Hugging Face ``Trainer`` and PyTorch Lightning.

Both callbacks open :func:`suanli.live.profiler.profile` when training starts and print (and
keep, as ``.report``) the verdict when it ends. The framework is imported only when a callback is
created, so suanli does not depend on either.
"""

from __future__ import annotations

from typing import Any

from suanli.i18n import N_, sentence
from suanli.live.diagnosis import Report


class _Session:
    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self._cm: Any = None
        self.recorder: Any = None
        self.report: Report | None = None

    def start(self) -> None:
        from suanli.live.profiler import profile

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
            print(format_report(self.report))


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


def hf_callback(warmup: int = 2, echo: bool = True) -> Any:
    """A ``transformers.TrainerCallback`` that records the steps of ``Trainer.train()``."""
    from transformers import TrainerCallback

    class SuanliDoctorCallback(TrainerCallback):  # type: ignore[misc]
        """Prints the training-loop verdict when training ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup)

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.session.start()

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorCallback()


def lightning_callback(warmup: int = 2, echo: bool = True) -> Any:
    """A Lightning ``Callback`` that records the steps of ``Trainer.fit()``."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback

    class SuanliDoctorLightning(Callback):  # type: ignore[misc]
        """Prints the training-loop verdict when fitting ends (``.session.report``)."""

        def __init__(self) -> None:
            self.session = _Session(warmup)

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.session.start()

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.session.stop(echo)

    return SuanliDoctorLightning()
