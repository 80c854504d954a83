"""Is this machine set up right? Verdicts on the driver, the PyTorch build, the CUDA versions and
the devices, each with the exact fix (``suanli doctor``).

PyTorch and NVML are imported when the machine is probed, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field

from suanli.answers.base import NOT_IN_JSON, Answer
from suanli.errors import MissingExtra
from suanli.i18n import N_
from suanli.live.env import diagnose, probe
from suanli.live.environment import Environment, Verdict
from suanli.live.ranks import Disagreement, RankFacts, collect_facts, compare, gather, rendezvous


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
class RanksAnswer(Answer):
    """Every rank's environment facts and the facts they disagree on (``suanli doctor
    --all-ranks``); ``healthy`` is false when a critical fact disagrees."""

    schema_name = "doctor-ranks"

    launcher: str
    """``torchrun`` or ``slurm``."""
    backend: str
    """``gloo`` or ``nccl``: how the facts were gathered."""
    world_size: int
    healthy: bool
    disagreements: tuple[Disagreement, ...]
    """Each fact the ranks disagree on, its values most common first with their ranks."""
    ranks: tuple[RankFacts, ...]
    """Every rank's facts, in rank order."""
    rank: int = field(default=0, metadata=NOT_IN_JSON)
    """The rank this process is (only rank 0 prints)."""


def doctor_ranks(environ: Mapping[str, str] | None = None) -> RanksAnswer:
    """Gather every rank's facts and compare them; run once per rank under torchrun or srun.
    ValueError outside a launcher, :class:`MissingExtra` without PyTorch."""
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(
            N_("suanli doctor --all-ranks needs PyTorch: pip install 'suanli[torch]'")
        )
    rdv = rendezvous(environ)
    backend, everyone = gather(rdv, collect_facts(rdv.rank, rdv.local_rank, environ))
    found = tuple(compare(everyone))
    return RanksAnswer(
        launcher=rdv.launcher,
        backend=backend,
        world_size=rdv.world_size,
        healthy=not any(d.critical for d in found),
        disagreements=found,
        ranks=tuple(everyone),
        rank=rdv.rank,
    )
