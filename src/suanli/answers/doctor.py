"""Is this machine set up right? Verdicts on the driver, the PyTorch build, the CUDA versions and
the devices, each with the exact fix (``suanli doctor``).

PyTorch and NVML are imported when the machine is probed, never when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.answers.base import Answer
from suanli.live.env import Environment, Verdict, diagnose, probe


@dataclass(frozen=True)
class DoctorAnswer(Answer):
    """The environment verdicts; ``healthy`` is false when any of them failed."""

    schema_name = "doctor"

    healthy: bool
    verdicts: tuple[Verdict, ...]
    """Each check: ``ok``, ``warn``, ``fail`` or ``info``, what was seen, and the fix."""


def doctor(env: Environment | None = None) -> DoctorAnswer:
    """The verdicts on ``env`` (default: this machine, probed now)."""
    verdicts = tuple(diagnose(env if env is not None else probe()))
    return DoctorAnswer(
        healthy=not any(v.status == "fail" for v in verdicts),
        verdicts=verdicts,
    )
