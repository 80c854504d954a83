"""``run_bench``: every measurement on one device, in order, graded."""

from __future__ import annotations

import contextlib
import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from suanli.i18n import N_
from suanli.live.bench.collectives import bench_allreduce
from suanli.live.bench.compute import (
    CPU_QUICK_SHAPES,
    CPU_SHAPES,
    CUDA_QUICK_SHAPES,
    CUDA_SHAPES,
    bench_matmul,
    dtypes_for,
    warm_up_gpu,
)
from suanli.live.bench.device import resolve_device
from suanli.live.bench.grading import grade_allreduce, grade_host, grade_matmul, grade_memory
from suanli.live.bench.health import busy_cpu_note, cpu_health, gpu_health, merge_health
from suanli.live.bench.memory import bench_memory
from suanli.live.bench.profile import BenchResult, cpu_name, hostname, local_gpu
from suanli.live.bench.transfer import bench_host_transfer

#: ``progress(description, completed_steps, total_steps)``.
ProgressFn = Callable[[str, int, int], None]


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
        raise ValueError(N_("--processes must be at least 1"))
    if cuda and nproc > 1 and nproc > torch.cuda.device_count():
        raise ValueError(
            N_("--processes {count} needs {count} GPUs; this machine has {gpus}").format(
                count=nproc, gpus=torch.cuda.device_count()
            )
        )
    available = dtypes_for(dev)
    if dtypes is None:
        dtypes = available
    else:
        unknown = [d for d in dtypes if d not in available]
        if unknown:
            raise ValueError(
                N_("dtype {dtype!r} cannot be measured on {device}; use {known}").format(
                    dtype=unknown[0], device=dev, known=", ".join(available)
                )
            )
    if cuda:
        name = torch.cuda.get_device_name(dev)
        gpu, gpu_id = local_gpu(name)
        why = (
            ""
            if gpu is not None
            else N_("{name} is not in the GPU catalog: no datasheet").format(name=name)
        )
    else:
        name, gpu, gpu_id = cpu_name(), None, f"cpu-{hostname()}"
        why = N_("CPU: no datasheet in the catalog")
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
        progress(N_("starting"), 0, total)
    # Events, streams and allocations on the chosen GPU, without changing the process default.
    with torch.cuda.device(dev) if cuda else contextlib.nullcontext():
        health = gpu_health(dev) if cuda else cpu_health()
        busy = "" if cuda else busy_cpu_note(health)
        if cuda:
            if progress:
                progress(N_("warming up the GPU"), 0, total)
            warm_up_gpu(dev, 2.0 if quick else 10.0)
        matmuls = [bench_matmul(d, dev, quick=quick, shapes=shapes, step=step) for d in dtypes]
        health = merge_health(health, gpu_health(dev))  # right after the load: clocks
        memory = bench_memory(dev, quick=quick)
        step(N_("memory bandwidth"))
        transfers = bench_host_transfer(dev, quick=quick)
        health = merge_health(health, gpu_health(dev))  # PCIe link while it is still up
        for r in transfers:
            step(r.name)
    allreduce = bench_allreduce(nproc, dev, quick=quick, sizes=sizes, timeout_s=allreduce_timeout_s)
    if nproc > 1:
        step("all-reduce")

    graded = tuple(replace(m, grade=grade_matmul(m, gpu, health, quick, why)) for m in matmuls)
    return BenchResult(
        device=dev,
        device_name=name,
        gpu_id=gpu_id,
        in_catalog=gpu is not None,
        quick=quick,
        torch_version=str(torch.__version__),
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        matmul=graded,
        memory=replace(memory, grade=grade_memory(memory, gpu, health, why)),
        host_transfer=tuple(replace(t, grade=grade_host(t, gpu, health, why)) for t in transfers),
        allreduce=replace(allreduce, grade=grade_allreduce(allreduce, gpu, health, quick, why)),
        health=health,
        seconds=time.perf_counter() - started,
        notes=(busy,) if busy else (),
    )
