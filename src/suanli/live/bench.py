"""``suanli bench``: measure what this machine really reaches, grade it, write a calibration file.

Four measurements, each timed after warm-up iterations and reported as a median:

- **matmul FLOP/s** per dtype (fp32, tf32 and fp8 on CUDA, bf16, fp16) over a sweep of square and
  LLM-like shapes, ``2·M·N·K`` FLOPs per call. On CUDA each timed call sits between CUDA events
  and an L2 flush (a write to a buffer larger than L2) runs before it, as in stas00's
  mamf-finder; on the CPU ``time.perf_counter`` times the synchronous call. The best shape wins.
- **device memory bandwidth** from a large ``copy_`` (bytes read + bytes written); on the CPU the
  host memory bandwidth from a tensor copy well beyond the last-level cache.
- **host<->device bandwidth**, pinned and pageable, both directions (CUDA only).
- **all-reduce** algorithm and bus bandwidth over message sizes across N processes
  (``busbw = algbw · 2(n-1)/n``, nccl-tests PERFORMANCE.md), NCCL on GPUs, gloo on the CPU,
  run by :mod:`suanli.live.bench_worker` in separate processes with a deadline.

Each figure is graded against the catalog datasheet and the known achievable ceiling
(:func:`suanli.catalog.network.ceiling_for`): ``pass`` (>= 90% of the ceiling), ``warn``
(>= 75%), ``fail`` with a likely cause, or ``info`` where there is no datasheet (the CPU, a GPU
missing from the catalog). torch (and NVML) are imported inside the functions, so this module
imports without them.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

#: ``progress(description, completed_steps, total_steps)``.
ProgressFn = Callable[[str, int, int], None]

#: Grade thresholds, as a share of the achievable ceiling.
PASS_AT = 0.90
WARN_AT = 0.75

#: Pinned host<->device copies reach about this share of the PCIe line rate: 0.88 (stas00,
#: 55.43 GB/s host-to-device on H200, Gen5) and 0.83 (Azure nvbandwidth, 26.3 GB/s on A100,
#: Gen4); see the pcie4-x16 and pcie5-x16 notes in catalog/data/interconnect.toml.
HOST_COPY_FRACTION = 0.85
HOST_COPY_SOURCE = (
    "pinned copies reach 0.83-0.88 of the PCIe line rate (Azure nvbandwidth A100 Gen4; "
    "stas00 H200 Gen5); catalog/data/interconnect.toml"
)

#: Catalog precision measured for each benchmark dtype.
PRECISION_OF = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}

#: (M, N, K) shapes: squares and LLM-like GEMMs (tokens x out x in of Llama-3 8B/70B layers:
#: fused QKV 4096->6144, fused gate/up 4096->28672, down 14336->4096, 70B down 28672->8192).
CUDA_SHAPES = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 16384, 16384),
    (8192, 6144, 4096),
    (8192, 28672, 4096),
    (8192, 4096, 14336),
    (8192, 8192, 28672),
)
CUDA_QUICK_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 4096))
CPU_SHAPES = (
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (1024, 3072, 1024),
    (1024, 1024, 3072),
)
CPU_QUICK_SHAPES = ((256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (512, 1536, 512))

#: All-reduce message sizes in bytes.
MiB = 1024**2
CUDA_SIZES = (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
CUDA_QUICK_SIZES = (1 * MiB, 16 * MiB, 256 * MiB)
CPU_SIZES = (64 * 1024, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB)
CPU_QUICK_SIZES = (64 * 1024, 1 * MiB, 4 * MiB)


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


# --------------------------------------------------------------------------- grading


def busbw(algbw_bytes_per_s: float, ranks: int) -> float:
    """All-reduce bus bandwidth, nccl-tests convention: ``algbw · 2(n-1)/n``."""
    if ranks < 1:
        raise ValueError("ranks must be at least 1")
    return algbw_bytes_per_s * 2 * (ranks - 1) / ranks


def _causes(kind: str, health: Health) -> list[str]:
    """Specific causes NVML can show for ``kind``, most telling first."""
    causes = []
    if kind in ("matmul", "memory") and health.throttle_reasons:
        causes.append(f"throttling ({', '.join(health.throttle_reasons)})")
    if kind in ("matmul", "memory", "allreduce") and health.other_processes:
        causes.append(f"busy GPU: {health.other_processes} other process(es) on it")
    if (
        kind == "matmul"
        and health.sm_clock_mhz
        and health.max_sm_clock_mhz
        and health.sm_clock_mhz < 0.85 * health.max_sm_clock_mhz
    ):
        causes.append(
            f"throttling: SM clock {health.sm_clock_mhz} of {health.max_sm_clock_mhz} MHz"
        )
    if kind == "host" and health.pcie_gen and health.max_pcie_gen and health.pcie_width:
        slow_gen = health.pcie_gen < health.max_pcie_gen
        narrow = bool(health.max_pcie_width and health.pcie_width < health.max_pcie_width)
        if slow_gen or narrow:
            causes.append(
                f"slow link: PCIe Gen{health.pcie_gen} x{health.pcie_width} "
                f"(the GPU supports Gen{health.max_pcie_gen} x{health.max_pcie_width})"
            )
    return causes


#: The usual suspects when NVML shows nothing specific.
GENERIC_CAUSE = {
    "matmul": "throttling (power or thermal cap), a busy GPU, or an old cuBLAS/driver; "
    "check 'nvidia-smi -q -d PERFORMANCE' and other processes in 'nvidia-smi'",
    "memory": "a busy GPU, reduced memory clocks or throttling; "
    "check 'nvidia-smi -q -d CLOCK,PERFORMANCE'",
    "host": "slow link: PCIe trained below its generation or width, the process on the far "
    "NUMA node, or virtualisation/IOMMU overhead; check 'nvidia-smi -q' (GPU Link Info) and "
    "'nvidia-smi topo -m'",
    "allreduce": "slow link: NCCL not using NVLink/P2P (check 'nvidia-smi topo -m', "
    "NCCL_P2P_DISABLE, NCCL_DEBUG=INFO) or another job sharing the links",
}


def grade_figure(
    measured: float,
    datasheet: float | None,
    ceiling_fraction: float | None,
    kind: str,
    *,
    health: Health | None = None,
    ceiling_source: str = "",
    no_datasheet: str = "no datasheet figure to compare with",
    small_problem: bool = False,
) -> Grade:
    """Grade ``measured`` against ``datasheet`` x ``ceiling_fraction``.

    ``kind`` (matmul, memory, host, allreduce) picks the likely causes of a shortfall;
    ``small_problem`` adds that quick-mode problems may be too small to reach the ceiling.
    """
    if not datasheet or datasheet <= 0:
        return Grade("info", cause=no_datasheet)
    fraction = ceiling_fraction if ceiling_fraction and ceiling_fraction > 0 else 1.0
    ceiling = datasheet * fraction
    of_ceiling = measured / ceiling
    of_datasheet = measured / datasheet
    if of_ceiling >= PASS_AT:
        grade, cause = "pass", ""
        if of_datasheet > 1.05:
            cause = "above the datasheet: boost clocks above the rated ones"
    else:
        grade = "warn" if of_ceiling >= WARN_AT else "fail"
        causes = _causes(kind, health or Health()) or [GENERIC_CAUSE.get(kind, "unknown")]
        if small_problem:
            causes.append(
                "problems may be too small to reach the ceiling (use a full run, and all-reduce "
                "messages of 256 MiB or more)"
            )
        cause = "; ".join(causes)
    return Grade(
        grade=grade,
        datasheet=datasheet,
        ceiling=ceiling,
        percent_of_datasheet=100 * of_datasheet,
        percent_of_ceiling=100 * of_ceiling,
        cause=cause,
        ceiling_source=ceiling_source,
    )


# --------------------------------------------------------------------------- identity


def _hostname() -> str:
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


def _config_home() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else Path.home() / ".config"


def local_calibration_path(gpu_id: str) -> Path:
    """Where ``suanli bench`` saves the profile of ``gpu_id`` and perf/plan look for it:
    ``$XDG_CONFIG_HOME/suanli/calibration/<gpu_id>.toml`` (``~/.config`` by default)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", gpu_id).strip("-") or "device"
    return _config_home() / "suanli" / "calibration" / f"{safe}.toml"


# --------------------------------------------------------------------------- device helpers


def resolve_device(device: str | None) -> str:
    """``cpu`` or ``cuda:N``; None picks CUDA when available. ValueError for anything else."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = device.strip().lower()
    if device == "cpu":
        return "cpu"
    if device == "cuda" or re.fullmatch(r"cuda:\d+", device):
        if not torch.cuda.is_available():
            raise ValueError("CUDA is not available on this machine; use --device cpu")
        index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"no CUDA device {index}; this machine has {torch.cuda.device_count()}"
            )
        return f"cuda:{index}"
    raise ValueError(f"unknown device {device!r}; use cpu or cuda")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def _last_level_cache_bytes() -> int:
    """The largest CPU cache (Linux sysfs), 32 MiB when unknown."""
    best = 0
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in base.glob("index*"):
            text = (idx / "size").read_text().strip().upper()
            mult = {"K": 1024, "M": MiB, "G": 1024 * MiB}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                best = max(best, int(digits) * mult)
    except OSError:
        pass
    return best or 32 * MiB


class _Timer:
    """Times single calls: CUDA events on CUDA, perf_counter on the CPU; an optional L2 flush
    (a write to a buffer larger than L2) runs before each timed call, outside the timing."""

    def __init__(self, device: str, flush: bool) -> None:
        import torch

        self.device = device
        self.cuda = device.startswith("cuda")
        self.flush_buf: Any = None
        if self.cuda and flush:
            props = torch.cuda.get_device_properties(device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 50 * MiB)
            # mamf-finder writes 256 MB (the largest LLC, MI300X); at least twice L2 here.
            size = max(2 * l2, 256 * MiB)
            self.flush_buf = torch.empty(size, dtype=torch.int8, device=device)

    def time(self, fn: Callable[[], Any], iterations: int) -> list[float]:
        """Seconds per call for ``iterations`` calls of ``fn``."""
        import torch

        if self.cuda:
            pairs = []
            for _ in range(iterations):
                if self.flush_buf is not None:
                    self.flush_buf.zero_()
                start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                start.record()
                fn()
                end.record()
                pairs.append((start, end))
            torch.cuda.synchronize(self.device)
            return [s.elapsed_time(e) / 1e3 for s, e in pairs]
        times = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times


def _iterations(per_call_s: float, target_s: float, low: int, high: int) -> int:
    if per_call_s <= 0:
        return high
    return max(low, min(high, int(target_s / per_call_s)))


# --------------------------------------------------------------------------- matmul


def _dtypes_for(device: str) -> tuple[str, ...]:
    import torch

    if not device.startswith("cuda"):
        return ("fp32", "bf16", "fp16")
    out = ["fp32", "tf32", "bf16", "fp16"]
    if torch.cuda.get_device_capability(device) >= (8, 9) and hasattr(torch, "_scaled_mm"):
        out.append("fp8")
    return tuple(out)


class _Fp32Precision:
    """Turn TF32 matmuls on or off for a block, restoring the previous setting."""

    def __init__(self, tf32: bool) -> None:
        self.tf32 = tf32
        self.saved: Any = None

    def __enter__(self) -> None:
        import torch

        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):
            self.saved = ("fp32_precision", mm.fp32_precision)
            mm.fp32_precision = "tf32" if self.tf32 else "ieee"
        else:  # pragma: no cover - torch < 2.9
            self.saved = ("allow_tf32", mm.allow_tf32)
            mm.allow_tf32 = self.tf32

    def __exit__(self, *exc: object) -> None:
        import torch

        name, value = self.saved
        setattr(torch.backends.cuda.matmul, name, value)


def _matmul_call(dtype: str, m: int, n: int, k: int, device: str) -> Callable[[], Any]:
    import torch

    if dtype == "fp8":
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32}.get(
        dtype, torch.bfloat16 if dtype == "bf16" else torch.float16
    )
    a = torch.randn(m, k, device=device, dtype=torch_dtype)
    # B column-major, as nn.Linear's x @ W.t() and mamf-finder lay it out.
    b = torch.randn(n, k, device=device, dtype=torch_dtype).t()
    out = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.mm(a, b, out=out)


def bench_matmul(
    dtype: str,
    device: str = "cpu",
    *,
    quick: bool = True,
    shapes: Sequence[tuple[int, int, int]] | None = None,
    step: Callable[[str], None] | None = None,
) -> MatmulResult:
    """Matmul FLOP/s of ``dtype`` over a shape sweep; the best shape's median wins.

    Shapes run cheapest first; a dtype too slow for the time budget (bf16/fp16 on most CPUs)
    stops early and lists the shapes it left out. ``step`` is called once per shape.
    """
    import torch

    cuda = device.startswith("cuda")
    if shapes is None:
        if cuda:
            shapes = CUDA_QUICK_SHAPES if quick else CUDA_SHAPES
        else:
            shapes = CPU_QUICK_SHAPES if quick else CPU_SHAPES
    order = sorted(shapes, key=lambda s: s[0] * s[1] * s[2])
    warmup = (5 if quick else 20) if cuda else (2 if quick else 5)
    target_s = 0.25 if quick else 1.0
    max_call_s = 0.15 if quick else 1.0
    low, high = (3, 50) if quick else (10, 100)

    results: list[ShapeResult] = []
    skipped: list[str] = []
    timer = _Timer(device, flush=True)
    best_rate = 0.0  # FLOP/s of the fastest shape so far, to predict the next one's time
    with _Fp32Precision(tf32=dtype == "tf32") if cuda else contextlib.nullcontext():
        for m, n, k in order:
            label = f"{m}x{n}x{k}"
            flops = 2.0 * m * n * k
            if best_rate and flops / best_rate > max_call_s:
                skipped.append(f"{label}: too slow (~{flops / best_rate:.2f} s a call)")
                if step:
                    step(f"matmul {dtype} {label}")
                continue
            try:
                fn = _matmul_call(dtype, m, n, k, device)
                t0 = time.perf_counter()
                fn()
                _sync(device)
                first = time.perf_counter() - t0
                if first * low >= target_s:  # slow call: a short warm-up, no probe
                    fn()
                    per_call = first
                else:
                    for _ in range(warmup - 1):
                        fn()
                    _sync(device)
                    per_call = statistics.median(timer.time(fn, 2))
                _sync(device)
                times = timer.time(fn, _iterations(per_call, target_s, low, high))
            except (RuntimeError, TypeError) as exc:  # unsupported dtype/shape, out of memory
                skipped.append(f"{label}: {str(exc).splitlines()[0][:120]}")
                if cuda:
                    torch.cuda.empty_cache()
                if step:
                    step(f"matmul {dtype} {label}")
                continue
            median = statistics.median(times)
            results.append(ShapeResult(m, n, k, flops / median, median, len(times)))
            best_rate = max(best_rate, flops / median)
            del fn
            if step:
                step(f"matmul {dtype} {label}")
    if cuda:
        torch.cuda.empty_cache()
    best = max(results, key=lambda r: r.flops_per_s, default=None)
    return MatmulResult(
        dtype=dtype,
        precision=PRECISION_OF[dtype],
        best_flops_per_s=best.flops_per_s if best else 0.0,
        best_shape=(best.m, best.n, best.k) if best else None,
        shapes=tuple(results),
        skipped=tuple(skipped),
    )


def warm_up_gpu(device: str, seconds: float) -> None:
    """Keep the GPU busy with bf16 matmuls for ``seconds`` so clocks and temperature settle
    before timing (mamf-finder warms the accelerator for 30 s: a cold GPU scores higher)."""
    import torch

    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(10):
            torch.mm(a, b)
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- bandwidth


def _copy_times(device: str, numel: int, target_s: float, high: int) -> list[float]:
    """Seconds per ``dst.copy_(src)`` of ``numel`` fp32 elements (the tensors die on return)."""
    import torch

    src = torch.ones(numel, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timer = _Timer(device, flush=False)
    for _ in range(3):  # first touch, warm-up
        dst.copy_(src)
    _sync(device)
    per_call = statistics.median(timer.time(lambda: dst.copy_(src), 2))
    return timer.time(lambda: dst.copy_(src), _iterations(per_call, target_s, 5, high))


def bench_memory(
    device: str = "cpu", *, quick: bool = True, nbytes: int | None = None
) -> BandwidthResult:
    """Device (or, on the CPU, host) memory bandwidth of ``dst.copy_(src)``: 2 x the tensor's
    bytes (one read, one write) per copy, median over iterations."""
    import torch

    cuda = device.startswith("cuda")
    if nbytes is None:
        if cuda:
            nbytes = (512 if quick else 2048) * MiB
        else:
            nbytes = max(4 * _last_level_cache_bytes(), (128 if quick else 512) * MiB)
    numel = nbytes // 4
    times = _copy_times(device, numel, 0.3 if quick else 1.5, 50 if quick else 100)
    median = statistics.median(times)
    moved = 2 * numel * 4
    name = "device memory (copy)" if cuda else "host memory (copy)"
    if cuda:
        torch.cuda.empty_cache()
    return BandwidthResult(name, moved / median, moved, median, len(times))


def _transfer_times(
    device: str, nbytes: int, direction: str, pinned: bool, quick: bool
) -> list[float]:
    """Seconds per host<->device copy of ``nbytes`` (the buffers die on return)."""
    import torch

    numel = nbytes // 4
    dev = torch.empty(numel, dtype=torch.float32, device=device)
    host = torch.ones(numel, dtype=torch.float32, pin_memory=pinned)
    if direction == "host->device":
        fn: Callable[[], Any] = lambda: dev.copy_(host, non_blocking=pinned)  # noqa: E731
    else:
        fn = lambda: host.copy_(dev, non_blocking=pinned)  # noqa: E731
    for _ in range(2):
        fn()
    _sync(device)
    return _Timer(device, flush=False).time(fn, 5 if quick else 20)


def bench_host_transfer(device: str = "cpu", *, quick: bool = True) -> tuple[BandwidthResult, ...]:
    """Host-to-device and device-to-host copy bandwidth from pinned and pageable host memory
    (CUDA only; on the CPU one entry saying it is not available)."""
    if not device.startswith("cuda"):
        return (BandwidthResult("host<->device", None, note="not available: no CUDA device"),)
    import torch

    nbytes = (256 if quick else 1024) * MiB
    out = []
    for memory in ("pinned", "pageable"):
        for direction in ("host->device", "device->host"):
            times = _transfer_times(device, nbytes, direction, memory == "pinned", quick)
            median = statistics.median(times)
            out.append(
                BandwidthResult(
                    f"{direction} {memory}", nbytes / median, nbytes, median, len(times)
                )
            )
    torch.cuda.empty_cache()
    return tuple(out)


# --------------------------------------------------------------------------- all-reduce


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"64K,1M,256M"`` -> bytes (K, M, G binary; a plain number is bytes)."""
    sizes = []
    for raw in text.replace(" ", "").split(","):
        if not raw:
            continue
        match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)(?:I?B)?", raw.upper())
        if not match:
            raise ValueError(f"bad message size {raw!r}; use bytes or K/M/G, e.g. 1M,64M")
        mult = {"": 1, "K": 1024, "M": MiB, "G": 1024 * MiB}[match.group(2)]
        value = int(float(match.group(1)) * mult)
        if value < 4:
            raise ValueError(f"message size {raw!r} is below 4 bytes")
        sizes.append(value)
    if not sizes:
        raise ValueError("no message sizes given")
    return tuple(sorted(set(sizes)))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def bench_allreduce(
    processes: int,
    device: str = "cpu",
    *,
    quick: bool = True,
    sizes: Sequence[int] | None = None,
    timeout_s: float | None = None,
    use_torchrun: bool = False,
) -> AllReduceResult:
    """All-reduce algbw/busbw over ``sizes`` across ``processes`` local ranks (gloo on the CPU,
    NCCL on GPUs), each rank a :mod:`suanli.live.bench_worker` process on 127.0.0.1 and a free
    port. The ranks are started directly with torchrun's environment (RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT), or through ``torchrun`` with ``use_torchrun``.
    Everything is killed after ``timeout_s``; a failure is reported in ``note``, not raised.
    """
    cuda = device.startswith("cuda")
    backend = "nccl" if cuda else "gloo"
    if processes < 2:
        return AllReduceResult(backend, processes, (), None, "skipped: needs 2 or more processes")
    if cuda:
        import torch

        if processes > torch.cuda.device_count():
            raise ValueError(
                f"--processes {processes} needs {processes} GPUs; "
                f"this machine has {torch.cuda.device_count()}"
            )
    if sizes is None:
        sizes = (
            (CUDA_QUICK_SIZES if quick else CUDA_SIZES)
            if cuda
            else (CPU_QUICK_SIZES if quick else CPU_SIZES)
        )
    sizes = tuple(sorted(set(int(s) for s in sizes)))
    per_size = 1.0 if quick else 3.0
    if timeout_s is None:
        timeout_s = 60.0 + per_size * 3 * len(sizes)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="suanli-bench-") as tmp:
        out_path = Path(tmp) / "allreduce.json"
        err_path = Path(tmp) / "stderr.txt"
        worker_args = [
            "-m",
            "suanli.live.bench_worker",
            "--backend",
            backend,
            "--sizes",
            ",".join(str(s) for s in sizes),
            "--target-seconds",
            str(per_size),
            "--warmup",
            "5" if quick else "20",
            "--timeout",
            str(int(timeout_s)),
            "--output",
            str(out_path),
        ]
        base_env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        if not cuda:
            threads = max(1, (os.cpu_count() or 1) // processes)
            base_env.setdefault("OMP_NUM_THREADS", str(threads))
        procs: list[subprocess.Popen[bytes]] = []
        with open(err_path, "wb") as err:
            if use_torchrun:
                cmd = [
                    sys.executable,
                    "-m",
                    "torch.distributed.run",
                    "--nnodes",
                    "1",
                    "--nproc-per-node",
                    str(processes),
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                    *worker_args,
                ]
                procs.append(
                    subprocess.Popen(
                        cmd, env=base_env, stdout=err, stderr=err, start_new_session=True
                    )
                )
            else:
                for rank in range(processes):
                    env = {
                        **base_env,
                        "RANK": str(rank),
                        "LOCAL_RANK": str(rank),
                        "WORLD_SIZE": str(processes),
                        "LOCAL_WORLD_SIZE": str(processes),
                    }
                    procs.append(
                        subprocess.Popen(
                            [sys.executable, *worker_args],
                            env=env,
                            stdout=err,
                            stderr=err,
                            start_new_session=True,
                        )
                    )
            deadline = time.monotonic() + timeout_s
            failed = ""
            for proc in procs:
                try:
                    code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    failed = f"timed out after {timeout_s:.0f} s"
                    break
                if code != 0 and not failed:
                    failed = f"a rank exited with status {code}"
            for proc in procs:
                if proc.poll() is None:
                    _kill_group(proc)
                    proc.wait()
        if failed or not out_path.exists():
            tail = err_path.read_text(errors="replace").strip().splitlines()[-3:]
            detail = " | ".join(line.strip() for line in tail)
            note = f"failed: {failed or 'no result written'}" + (f" ({detail})" if detail else "")
            return AllReduceResult(backend, processes, (), None, note)
        doc = json.loads(out_path.read_text())
    rows = tuple(
        AllReduceSize(
            bytes=int(r["bytes"]),
            iterations=int(r["iterations"]),
            time_s=float(r["time_s"]),
            algbw_bytes_per_s=float(r["algbw_bytes_per_s"]),
            busbw_bytes_per_s=float(r["busbw_bytes_per_s"]),
        )
        for r in doc["sizes"]
    )
    best = max((r.busbw_bytes_per_s for r in rows), default=None)
    return AllReduceResult(backend, processes, rows, best)


# --------------------------------------------------------------------------- health (NVML)


def gpu_health(device: str) -> Health:
    """Read-only NVML queries (throttle reasons, clocks, other processes, PCIe link) for the
    GPU behind ``device``; an empty :class:`Health` without CUDA or nvidia-ml-py."""
    if not device.startswith("cuda"):
        return Health()
    try:
        import pynvml  # type: ignore[import-untyped]
        import torch
    except ImportError:
        return Health()
    try:
        pynvml.nvmlInit()
    except Exception:  # NVML missing or no driver access
        return Health()
    try:
        # The same GPU as torch's: by UUID (CUDA_VISIBLE_DEVICES may renumber), else by index.
        handle = None
        uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "")
        if uuid:
            with contextlib.suppress(Exception):
                handle = pynvml.nvmlDeviceGetHandleByUUID(
                    uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
                )
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(device.split(":")[1]))

        def query(fn: str, *args: Any) -> Any:
            try:
                return getattr(pynvml, fn)(handle, *args)
            except Exception:
                return None

        reasons_mask = query("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons_mask is None:
            reasons_mask = query("nvmlDeviceGetCurrentClocksThrottleReasons")
        names = {
            0x2: "application clocks set below max",
            0x4: "software power cap",
            0x8: "hardware slowdown",
            0x20: "software thermal slowdown",
            0x40: "hardware thermal slowdown",
            0x80: "power brake",
        }
        reasons = tuple(v for bit, v in names.items() if reasons_mask and reasons_mask & bit)
        procs = query("nvmlDeviceGetComputeRunningProcesses")
        others = None if procs is None else sum(1 for p in procs if p.pid != os.getpid())
        return Health(
            throttle_reasons=reasons,
            other_processes=others,
            sm_clock_mhz=query("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_SM),
            max_sm_clock_mhz=query("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_SM),
            temperature_c=query("nvmlDeviceGetTemperature", pynvml.NVML_TEMPERATURE_GPU),
            pcie_gen=query("nvmlDeviceGetCurrPcieLinkGeneration"),
            pcie_width=query("nvmlDeviceGetCurrPcieLinkWidth"),
            max_pcie_gen=query("nvmlDeviceGetMaxPcieLinkGeneration"),
            max_pcie_width=query("nvmlDeviceGetMaxPcieLinkWidth"),
        )
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _proc_stat() -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs from /proc/stat, None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_health(window_s: float = 0.25) -> Health:
    """How busy the host's CPUs are (sampled over ``window_s`` while this process sleeps)."""
    before = _proc_stat()
    busy = None
    if before is not None:
        time.sleep(window_s)
        after = _proc_stat()
        if after is not None and after[1] > before[1]:
            busy = 100.0 * (after[0] - before[0]) / (after[1] - before[1])
    return Health(cpu_busy_percent=busy, cpu_count=os.cpu_count())


def busy_cpu_note(health: Health) -> str:
    """A note when other work keeps the CPUs busy (>= 25% of them), else ''."""
    if health.cpu_busy_percent is None or health.cpu_busy_percent < 25:
        return ""
    return (
        f"busy CPU: other processes used {health.cpu_busy_percent:.0f}% of "
        f"{health.cpu_count} cores just before the run; figures may be low"
    )


def _merge_health(a: Health, b: Health) -> Health:
    """``b`` where it has a value, else ``a``; throttle reasons united."""
    merged = {k: (v if v is not None else getattr(a, k)) for k, v in asdict(b).items()}
    merged["throttle_reasons"] = tuple(dict.fromkeys(a.throttle_reasons + b.throttle_reasons))
    return Health(**merged)


# --------------------------------------------------------------------------- grading a run


def _grade_matmul(r: MatmulResult, gpu: Any, health: Health, quick: bool, why: str) -> Grade:
    if not r.best_flops_per_s:
        return Grade("info", cause="not measured: " + ("; ".join(r.skipped) or "no shape ran"))
    if gpu is None:
        return Grade("info", cause=why)
    from suanli.catalog.network import ceiling_for

    peak = gpu.peak_flops(r.precision)
    if not peak:
        return Grade("info", cause=f"{gpu.id} has no {r.precision} peak in the catalog")
    ceiling = ceiling_for(gpu, r.precision)
    return grade_figure(
        r.best_flops_per_s,
        peak,
        ceiling.matmul_fraction,
        "matmul",
        health=health,
        ceiling_source=ceiling.source,
        small_problem=quick,
    )


def _grade_memory(r: BandwidthResult, gpu: Any, health: Health, why: str) -> Grade:
    if gpu is None or r.bytes_per_s is None:
        return Grade("info", cause=why)
    from suanli.catalog.network import ceiling_for

    ceiling = ceiling_for(gpu, "bf16" if gpu.peak_flops("bf16") else "fp32")
    return grade_figure(
        r.bytes_per_s,
        gpu.memory_bandwidth_bytes_per_s,
        ceiling.memory_fraction,
        "memory",
        health=health,
        ceiling_source=ceiling.source,
    )


def _grade_host(r: BandwidthResult, gpu: Any, health: Health, why: str) -> Grade:
    if r.bytes_per_s is None:
        return Grade("info", cause=r.note)
    if gpu is None:
        return Grade("info", cause=why)
    if "pageable" in r.name:
        return Grade(
            "info",
            cause="pageable copies are staged through a pinned buffer; pinned is the one graded",
        )
    gen = int(gpu.get("pcie_gen") or 4)
    lanes = int(gpu.get("pcie_lanes") or 16)
    from suanli.catalog.network import get_link

    try:
        link = get_link(f"pcie{min(max(gen, 3), 6)}-x16")
    except ValueError:
        return Grade("info", cause=f"no PCIe Gen{gen} link in the catalog")
    line_rate = link.unidirectional_bytes_per_s * lanes / 16
    return grade_figure(
        r.bytes_per_s,
        line_rate,
        HOST_COPY_FRACTION,
        "host",
        health=health,
        ceiling_source=f"{link.name} x{lanes}: {HOST_COPY_SOURCE}",
    )


def _grade_allreduce(r: AllReduceResult, gpu: Any, health: Health, quick: bool, why: str) -> Grade:
    if r.best_busbw_bytes_per_s is None:
        return Grade("info", cause=r.note)
    if gpu is None:
        return Grade("info", cause=why)
    from suanli.catalog.network import intra_node_link

    link = intra_node_link(gpu)
    small = quick or max(s.bytes for s in r.sizes) < 256 * MiB
    return grade_figure(
        r.best_busbw_bytes_per_s,
        link.bandwidth_bytes_per_s,
        link.efficiency,
        "allreduce",
        health=health,
        ceiling_source=f"{link.name}: bus efficiency from catalog/data/interconnect.toml",
        small_problem=small,
    )


# --------------------------------------------------------------------------- run_bench


def default_processes(device: str) -> int:
    """All-reduce ranks by default: 2 on the CPU, every GPU on CUDA."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.device_count())
    return 2


def run_bench(
    quick: bool = False,
    device: str | None = None,
    processes: int | None = None,
    progress: ProgressFn | None = None,
    *,
    sizes: Sequence[int] | None = None,
    dtypes: Sequence[str] | None = None,
    allreduce_timeout_s: float | None = None,
) -> BenchResult:
    """Measure matmul, memory, host<->device and all-reduce on ``device`` and grade them.

    ``device``: ``cpu``, ``cuda`` or ``cuda:N`` (None: CUDA when available). ``processes``:
    all-reduce ranks (None: 2 on the CPU, the GPU count on CUDA; 1 skips it). ``sizes``:
    all-reduce message sizes in bytes. ``progress(description, done, total)`` is called as the
    steps finish. ValueError for a bad device, dtype or process count.
    """
    import torch

    started = time.perf_counter()
    dev = resolve_device(device)
    cuda = dev.startswith("cuda")
    nproc = default_processes(dev) if processes is None else processes
    if nproc < 1:
        raise ValueError("--processes must be at least 1")
    if cuda and nproc > 1 and nproc > torch.cuda.device_count():
        raise ValueError(
            f"--processes {nproc} needs {nproc} GPUs; this machine has {torch.cuda.device_count()}"
        )
    available = _dtypes_for(dev)
    if dtypes is None:
        dtypes = available
    else:
        unknown = [d for d in dtypes if d not in available]
        if unknown:
            raise ValueError(
                f"dtype {unknown[0]!r} cannot be measured on {dev}; use {', '.join(available)}"
            )
    if cuda:
        name = torch.cuda.get_device_name(dev)
        gpu, gpu_id = local_gpu(name)
        why = "" if gpu is not None else f"{name} is not in the GPU catalog: no datasheet"
    else:
        name, gpu, gpu_id = cpu_name(), None, f"cpu-{_hostname()}"
        why = "CPU: no datasheet in the catalog"
    shapes: Sequence[tuple[int, int, int]]
    if cuda:
        shapes = CUDA_QUICK_SHAPES if quick else CUDA_SHAPES
    else:
        shapes = CPU_QUICK_SHAPES if quick else CPU_SHAPES
    n_transfer = 4 if cuda else 1
    total = len(dtypes) * len(shapes) + 1 + n_transfer + (1 if nproc > 1 else 0)
    done = 0

    def step(description: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(description, done, total)

    if progress:
        progress("starting", 0, total)
    # Events, streams and allocations on the chosen GPU, without changing the process default.
    with torch.cuda.device(dev) if cuda else contextlib.nullcontext():
        health = gpu_health(dev) if cuda else cpu_health()
        busy = "" if cuda else busy_cpu_note(health)
        if cuda:
            if progress:
                progress("warming up the GPU", 0, total)
            warm_up_gpu(dev, 2.0 if quick else 10.0)
        matmuls = [bench_matmul(d, dev, quick=quick, shapes=shapes, step=step) for d in dtypes]
        health = _merge_health(health, gpu_health(dev))  # right after the load: clocks
        memory = bench_memory(dev, quick=quick)
        step("memory bandwidth")
        transfers = bench_host_transfer(dev, quick=quick)
        health = _merge_health(health, gpu_health(dev))  # PCIe link while it is still up
        for r in transfers:
            step(r.name)
    allreduce = bench_allreduce(nproc, dev, quick=quick, sizes=sizes, timeout_s=allreduce_timeout_s)
    if nproc > 1:
        step("all-reduce")

    graded = tuple(replace(m, grade=_grade_matmul(m, gpu, health, quick, why)) for m in matmuls)
    return BenchResult(
        device=dev,
        device_name=name,
        gpu_id=gpu_id,
        in_catalog=gpu is not None,
        quick=quick,
        torch_version=str(torch.__version__),
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        matmul=graded,
        memory=replace(memory, grade=_grade_memory(memory, gpu, health, why)),
        host_transfer=tuple(replace(t, grade=_grade_host(t, gpu, health, why)) for t in transfers),
        allreduce=replace(allreduce, grade=_grade_allreduce(allreduce, gpu, health, quick, why)),
        health=health,
        seconds=time.perf_counter() - started,
        notes=(busy,) if busy else (),
    )


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
    """The calibration document: ``[[ceiling]]`` rows as :func:`suanli.hardware.read_calibration`
    reads them (one per measured precision), plus ``[bench]`` metadata and ``[[allreduce]]``."""
    rows = [m for m in result.matmul if m.best_flops_per_s > 0]
    if not rows:
        raise ValueError("no matmul was measured; nothing to calibrate")
    day = result.date[:10]
    mode = "quick" if result.quick else "full"
    source = (
        f"suanli bench ({mode}) on {_hostname()}: {result.device_name}, torch "
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
