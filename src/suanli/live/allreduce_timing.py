"""Time an all-reduce the way nccl-tests' ``all_reduce_perf`` does, in torch.distributed.

Used by ``suanli bench``'s ranks (:mod:`suanli.live.bench_worker`) and by ``suanli doctor
scaling`` (one node and N nodes): warm-up all-reduces, one probe that sizes the timed loop so it
lasts about ``target_s`` (every rank takes the slowest rank's probe, so all run the same count),
then the loop between barriers; the time per all-reduce is averaged over the group's ranks
(nccl-tests' default ``-a 1``). Bus bandwidth follows from it with
:func:`suanli.live.bench.grading.busbw`.

torch is imported when a measurement runs, never when this module is imported.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple


class AllReduceTiming(NamedTuple):
    """One measured message size."""

    seconds: float
    """Per all-reduce, averaged over the group's ranks."""
    iterations: int
    """All-reduces in the timed loop."""


def time_allreduce(
    buf: Any,
    group: Any = None,
    *,
    warmup: int = 5,
    target_s: float = 1.0,
    max_iterations: int = 200,
) -> AllReduceTiming:
    """Seconds per all-reduce of ``buf`` over ``group`` (None: every rank), averaged over the
    group's ranks, and the loop's length. Every rank of the group must call it with the same
    arguments."""
    import torch
    import torch.distributed as dist

    def sync() -> None:
        if buf.device.type == "cuda":
            torch.cuda.synchronize(buf.device)

    for _ in range(warmup):
        dist.all_reduce(buf, group=group)
    sync()
    dist.barrier(group=group)
    start = time.perf_counter()
    dist.all_reduce(buf, group=group)
    sync()
    probe = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=buf.device)
    dist.all_reduce(probe, op=dist.ReduceOp.MAX, group=group)  # every rank runs the same count
    iterations = max(3, min(max_iterations, int(target_s / max(probe.item(), 1e-9))))
    dist.barrier(group=group)
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buf, group=group)
    sync()
    elapsed = torch.tensor(
        [(time.perf_counter() - start) / iterations], dtype=torch.float64, device=buf.device
    )
    dist.all_reduce(elapsed, group=group)
    return AllReduceTiming(float(elapsed.item()) / dist.get_world_size(group), iterations)
