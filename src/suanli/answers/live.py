"""What are the GPUs doing right now? One reading of every device, with the problems it shows
(``suanli top``, ``GET /api/live``).

On a machine without a GPU the reading is the CPU's, so the report still says something true.
The vendor libraries (NVML, AMD SMI) and psutil are imported inside the providers, when read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from suanli.answers.base import FLATTEN, NOT_IN_JSON, Answer
from suanli.i18n import N_
from suanli.live.devices import DeviceSample, gpu_samples
from suanli.live.devices import providers as find_providers
from suanli.live.monitor import Flag, flags

#: The note when no GPU answered and the CPU was read instead.
CPU_NOTE = N_("no GPU found on this machine; showing the CPU")
#: The note (and the missing extra) when no GPU answered and psutil is not installed.
PSUTIL_NOTE = N_("no GPU found, and the CPU sample needs psutil: pip install 'suanli[live]'")


@dataclass(frozen=True, kw_only=True)
class DeviceReading:
    """One reading of one device (``None``: not reported) and the problems it shows."""

    sample: DeviceSample = field(metadata=FLATTEN)
    """The fields of the reading, written at this level (index, name, memory_used_bytes...)."""
    flags: tuple[Flag, ...] = ()
    """Idle-but-full memory, throttling, a down-trained link, an unknown process, a lost GPU."""


@dataclass(frozen=True, kw_only=True)
class LiveAnswer(Answer):
    """One reading of every GPU, or of the CPU when there is no GPU."""

    schema_name = "live"

    time: float
    """When the devices were read (Unix seconds)."""
    gpus: bool
    """Whether GPUs answered (false: the samples are the CPU's, or empty)."""
    note: str
    """Why the samples are not GPUs ("" when they are)."""
    samples: tuple[DeviceReading, ...]
    missing_extra: str = field(default="", metadata=NOT_IN_JSON)
    """The install command when nothing could be read for want of psutil ("" otherwise)."""

    def top(self) -> TopAnswer:
        """The document of ``suanli top --json``: this reading's devices."""
        return TopAnswer(devices=self.samples)


@dataclass(frozen=True, kw_only=True)
class TopAnswer(Answer):
    """One reading of every device (``suanli top --json``; ``GET /api/live`` serves the same
    readings as ``samples`` with the time and a note)."""

    schema_name = "top"

    devices: tuple[DeviceReading, ...]
    """One object per device: its reading's fields, then its flags."""


def live_report(
    providers: Sequence[Any] | None = None, *, clock: Callable[[], float] = time.time
) -> LiveAnswer:
    """Read every device through ``providers`` (default: those found on this machine).

    The web app keeps its providers between requests and passes them in; ``clock`` gives the
    reading's time (tests pass a fixed one).
    """
    provs = list(providers) if providers is not None else find_providers()
    samples = gpu_samples(provs)
    has_gpus = bool(samples)
    note = ""
    missing = ""
    if not samples:  # no GPU: show the CPU so the report still says something true
        cpu = next((p for p in provs if p.name == "cpu"), None)
        try:
            samples = cpu.sample() if cpu is not None else []
        except ImportError:
            samples = []
            note = missing = PSUTIL_NOTE
        else:
            note = CPU_NOTE
    return LiveAnswer(
        time=clock(),
        gpus=has_gpus,
        note=note,
        samples=tuple(DeviceReading(sample=s, flags=tuple(flags(s))) for s in samples),
        missing_extra=missing,
    )
