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

The package, by seam: :mod:`~suanli.live.bench.compute` (matmul),
:mod:`~suanli.live.bench.memory` (copy bandwidth), :mod:`~suanli.live.bench.transfer`
(host<->device), :mod:`~suanli.live.bench.collectives` (all-reduce),
:mod:`~suanli.live.bench.health` (NVML and CPU load), :mod:`~suanli.live.bench.grading`,
:mod:`~suanli.live.bench.profile` (result types, calibration path and file),
:mod:`~suanli.live.bench.device` (shared device helpers) and :mod:`~suanli.live.bench.run`
(:func:`run_bench`). Every public name is re-exported here.
"""

from __future__ import annotations

from suanli.live.bench.collectives import (
    CPU_QUICK_SIZES,
    CPU_SIZES,
    CUDA_QUICK_SIZES,
    CUDA_SIZES,
    bench_allreduce,
    free_port,
    parse_sizes,
)
from suanli.live.bench.compute import (
    CPU_QUICK_SHAPES,
    CPU_SHAPES,
    CUDA_QUICK_SHAPES,
    CUDA_SHAPES,
    PRECISION_OF,
    bench_matmul,
    dtypes_for,
    warm_up_gpu,
)
from suanli.live.bench.device import MiB, Timer, iteration_count, resolve_device, sync
from suanli.live.bench.grading import (
    GENERIC_CAUSE,
    HOST_COPY_FRACTION,
    HOST_COPY_SOURCE,
    PASS_AT,
    WARN_AT,
    busbw,
    grade_allreduce,
    grade_figure,
    grade_host,
    grade_matmul,
    grade_memory,
)
from suanli.live.bench.health import busy_cpu_note, cpu_health, gpu_health, merge_health
from suanli.live.bench.memory import bench_memory
from suanli.live.bench.profile import (
    AllReduceResult,
    AllReduceSize,
    BandwidthResult,
    BenchResult,
    Grade,
    Health,
    MatmulResult,
    ShapeResult,
    calibration_toml,
    cpu_name,
    hostname,
    local_gpu,
    write_calibration,
)
from suanli.live.bench.run import ProgressFn, default_processes, run_bench
from suanli.live.bench.transfer import bench_host_transfer

# Where a profile is saved is the platform's config directory's business (suanli.paths, which
# the estimators read it from too); kept here for `from suanli.live.bench import ...`.
from suanli.paths import local_calibration_path

__all__ = [
    "CPU_QUICK_SHAPES",
    "CPU_QUICK_SIZES",
    "CPU_SHAPES",
    "CPU_SIZES",
    "CUDA_QUICK_SHAPES",
    "CUDA_QUICK_SIZES",
    "CUDA_SHAPES",
    "CUDA_SIZES",
    "GENERIC_CAUSE",
    "HOST_COPY_FRACTION",
    "HOST_COPY_SOURCE",
    "PASS_AT",
    "PRECISION_OF",
    "WARN_AT",
    "AllReduceResult",
    "AllReduceSize",
    "BandwidthResult",
    "BenchResult",
    "Grade",
    "Health",
    "MatmulResult",
    "MiB",
    "ProgressFn",
    "ShapeResult",
    "Timer",
    "bench_allreduce",
    "bench_host_transfer",
    "bench_matmul",
    "bench_memory",
    "busbw",
    "busy_cpu_note",
    "calibration_toml",
    "cpu_health",
    "cpu_name",
    "default_processes",
    "dtypes_for",
    "free_port",
    "gpu_health",
    "grade_allreduce",
    "grade_figure",
    "grade_host",
    "grade_matmul",
    "grade_memory",
    "hostname",
    "iteration_count",
    "local_calibration_path",
    "local_gpu",
    "merge_health",
    "parse_sizes",
    "resolve_device",
    "run_bench",
    "sync",
    "warm_up_gpu",
    "write_calibration",
]
