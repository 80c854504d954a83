"""What does this machine really reach? Matmul FLOP/s, memory and host<->device bandwidth and
all-reduce bus bandwidth, measured, graded against the catalog, and saved as a calibration for
``suanli perf`` (``suanli bench``).

PyTorch is imported when the measurements run, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from suanli.answers.base import FLATTEN, Answer
from suanli.errors import MissingExtra
from suanli.i18n import N_
from suanli.live import bench as live_bench
from suanli.live.bench import (
    BenchResult,
    ProgressFn,
    local_calibration_path,
    parse_sizes,
    write_calibration,
)


@dataclass(frozen=True)
class BenchRequest:
    """What to measure, and where to save the calibration."""

    quick: bool = False
    """Small problems: seconds on a CPU, about a minute on a GPU."""
    device: str | None = None
    """``cpu``, ``cuda`` or ``cuda:N`` (default: CUDA when available, else the CPU)."""
    processes: int | None = None
    """All-reduce ranks (default: 2 on the CPU, every GPU on CUDA; 1 skips the all-reduce)."""
    sizes: str | None = None
    """All-reduce message sizes, e.g. ``1M,16M,256M`` (bytes; K/M/G are binary)."""
    save: bool = True
    """Save the calibration to ``calibration/<gpu_id>.toml`` in
    :func:`suanli.paths.config_dir` (``~/.config/suanli`` on Linux)."""
    output: str | None = None
    """Write the calibration TOML to this file instead (written even when ``save`` is off)."""


@dataclass(frozen=True, kw_only=True)
class BenchAnswer(Answer):
    """Every measurement of the run, graded, and where the calibration went."""

    schema_name = "bench"

    result: BenchResult = field(metadata=FLATTEN)
    """The measurements (FLOP/s, bytes/s, bytes, seconds), written at this level."""
    calibration_path: str | None
    """The calibration file written (``None`` when nothing was saved)."""


def torch_available() -> bool:
    """Whether PyTorch is installed (found without importing it)."""
    return importlib.util.find_spec("torch") is not None


def bench(req: BenchRequest, *, progress: ProgressFn | None = None) -> BenchAnswer:
    """Run the measurements ``req`` asks for and save the calibration.

    ``progress(description, done, total)`` is called as the steps finish. Raises ``ValueError``
    on bad sizes, device or process count; :class:`MissingExtra` without PyTorch.
    """
    if not torch_available():
        raise MissingExtra(N_("suanli bench needs PyTorch: pip install 'suanli[torch]'"))
    size_list = parse_sizes(req.sizes) if req.sizes is not None else None
    # Looked up on the package at call time, so a replaced run_bench (tests) is the one run.
    result = live_bench.run_bench(
        quick=req.quick,
        device=req.device,
        processes=req.processes,
        progress=progress,
        sizes=size_list,
    )
    saved: str | None = None
    if req.output or req.save:
        path = req.output or local_calibration_path(result.gpu_id)
        saved = str(write_calibration(result, path))
    return BenchAnswer(result=result, calibration_path=saved)
