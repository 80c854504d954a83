"""The bench profile: the result types of a ``suanli bench`` run, the identity of the
measured device (CPU name, catalog GPU, the profile's path) and the calibration file
(write and format; :func:`suanli.estimate.device.read_calibration` reads it back).
"""

from __future__ import annotations

import json
import platform
import re
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from suanli.i18n import N_
from suanli.paths import local_calibration_path

# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Grade:
    """A measured figure against the datasheet and the achievable ceiling."""

    grade: str
    """``pass``, ``warn``, ``fail`` or ``info`` (nothing to compare with)."""
    datasheet: float | None = None
    """The catalog figure (peak FLOP/s, bytes/s) or None."""
    ceiling: float | None = None
    """What real kernels reach: datasheet x the known achievable fraction."""
    percent_of_datasheet: float | None = None
    percent_of_ceiling: float | None = None
    cause: str = ""
    """The likely cause when below ``pass`` (or why the grade is ``info``)."""
    ceiling_source: str = ""


@dataclass(frozen=True)
class ShapeResult:
    """One matmul shape: ``(M, K) @ (K, N)``."""

    m: int
    n: int
    k: int
    flops_per_s: float
    median_s: float
    iterations: int


@dataclass(frozen=True)
class MatmulResult:
    """The shape sweep of one dtype; ``best_flops_per_s`` is 0 when it could not run."""

    dtype: str
    precision: str
    best_flops_per_s: float
    best_shape: tuple[int, int, int] | None
    shapes: tuple[ShapeResult, ...]
    skipped: tuple[str, ...] = ()
    """Shapes or the whole dtype left out, with the reason."""
    grade: Grade = field(default_factory=lambda: Grade("info"))


@dataclass(frozen=True)
class BandwidthResult:
    """A copy bandwidth: bytes read plus bytes written per second (copies: bytes moved)."""

    name: str
    bytes_per_s: float | None
    """None when not available on this device (see ``note``)."""
    bytes: int = 0
    median_s: float = 0.0
    iterations: int = 0
    note: str = ""
    grade: Grade = field(default_factory=lambda: Grade("info"))


@dataclass(frozen=True)
class AllReduceSize:
    """One message size: nccl-tests' time, algbw and busbw."""

    bytes: int
    iterations: int
    time_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float


@dataclass(frozen=True)
class AllReduceResult:
    """All-reduce across ``processes`` ranks; ``sizes`` is empty when skipped or failed."""

    backend: str
    processes: int
    sizes: tuple[AllReduceSize, ...]
    best_busbw_bytes_per_s: float | None
    note: str = ""
    grade: Grade = field(default_factory=lambda: Grade("info"))


@dataclass(frozen=True)
class Health:
    """Read-only GPU state from NVML (when installed); empty on the CPU."""

    throttle_reasons: tuple[str, ...] = ()
    other_processes: int | None = None
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    temperature_c: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    max_pcie_gen: int | None = None
    max_pcie_width: int | None = None
    cpu_busy_percent: float | None = None
    """CPU time other processes used just before the run, % of all cores (Linux)."""
    cpu_count: int | None = None


@dataclass(frozen=True)
class BenchResult:
    """Everything ``suanli bench`` measured on one device."""

    device: str
    """``cpu`` or ``cuda:N``."""
    device_name: str
    gpu_id: str
    """The catalog id of the local GPU, ``cpu-<hostname>``, or ``unknown-<name>``."""
    in_catalog: bool
    quick: bool
    torch_version: str
    date: str
    matmul: tuple[MatmulResult, ...]
    memory: BandwidthResult
    host_transfer: tuple[BandwidthResult, ...]
    allreduce: AllReduceResult
    health: Health = field(default_factory=Health)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()
    """Caveats for the whole run (a busy CPU, ...)."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (numbers in base units: FLOP/s, bytes/s, bytes, seconds)."""
        out: dict[str, Any] = _jsonable(asdict(self))
        return out


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


# --------------------------------------------------------------------------- identity


def hostname() -> str:
    """This machine's host name, lower-case letters, digits and dashes (``localhost`` if empty)."""
    name = re.sub(r"[^a-z0-9-]+", "-", socket.gethostname().lower()).strip("-")
    return name or "localhost"


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (Linux) or the platform module."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def local_gpu(name: str) -> tuple[Any, str]:
    """The catalog GPU for a device name (``None`` if not found) and the gpu_id to record."""
    from suanli.catalog import CatalogError, bundled_gpus, find_gpu
    from suanli.catalog.lookup import normalize

    try:
        gpu = find_gpu(name, bundled_gpus())
    except CatalogError:
        return None, f"unknown-{normalize(name) or 'gpu'}"
    return gpu, gpu.id


# --------------------------------------------------------------------------- calibration


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def calibration_toml(result: BenchResult) -> str:
    """The calibration document: ``[[ceiling]]`` rows as
    :func:`suanli.estimate.device.read_calibration` reads them (one per measured precision), plus
    ``[bench]`` metadata and ``[[allreduce]]``."""
    rows = [m for m in result.matmul if m.best_flops_per_s > 0]
    if not rows:
        raise ValueError(N_("no matmul was measured; nothing to calibrate"))
    day = result.date[:10]
    mode = "quick" if result.quick else "full"
    source = (
        f"suanli bench ({mode}) on {hostname()}: {result.device_name}, torch "
        f"{result.torch_version}; median of timed runs at the best shape"
    )
    lines = [
        f"# Measured ceilings of {result.device_name}, written by `suanli bench` on {day}.",
        "# Read by `suanli perf --calibration FILE` (matmul_flops in FLOP/s, bandwidths in "
        "bytes/s).",
        "",
        "[bench]",
    ]
    meta = {
        "gpu_id": result.gpu_id,
        "device": result.device,
        "device_name": result.device_name,
        "in_catalog": result.in_catalog,
        "quick": result.quick,
        "torch": result.torch_version,
        "date": result.date,
    }
    lines += [f"{k} = {_toml_value(v)}" for k, v in meta.items()]
    pinned = [t for t in result.host_transfer if t.bytes_per_s and t.name == "host->device pinned"]
    for m in rows:
        row: dict[str, Any] = {
            "gpu_id": result.gpu_id,
            "precision": m.precision,
            "matmul_flops": float(m.best_flops_per_s),
        }
        if m.best_shape:
            row["best_shape"] = "x".join(str(s) for s in m.best_shape)
        if result.memory.bytes_per_s:
            row["memory_bandwidth_bytes_per_s"] = float(result.memory.bytes_per_s)
        if pinned and pinned[0].bytes_per_s:
            row["host_to_device_bytes_per_s"] = float(pinned[0].bytes_per_s)
        if m.grade.percent_of_datasheet is not None:
            row["matmul_fraction"] = round(m.grade.percent_of_datasheet / 100, 4)
        row["source"] = source
        row["date"] = day
        lines += ["", "[[ceiling]]"] + [f"{k} = {_toml_value(v)}" for k, v in row.items()]
    for s in result.allreduce.sizes:
        ar = {
            "backend": result.allreduce.backend,
            "processes": result.allreduce.processes,
            "bytes": s.bytes,
            "algbw_bytes_per_s": float(s.algbw_bytes_per_s),
            "busbw_bytes_per_s": float(s.busbw_bytes_per_s),
        }
        lines += ["", "[[allreduce]]"] + [f"{k} = {_toml_value(v)}" for k, v in ar.items()]
    return "\n".join(lines) + "\n"


def write_calibration(result: BenchResult, path: str | Path | None = None) -> Path:
    """Write the calibration TOML to ``path`` (default :func:`local_calibration_path`) and
    return where it went; parent folders are created."""
    target = Path(path) if path is not None else local_calibration_path(result.gpu_id)
    text = calibration_toml(result)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
