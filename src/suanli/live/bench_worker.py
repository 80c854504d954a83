"""One rank of the ``suanli bench`` all-reduce measurement (nccl-tests' all_reduce_perf, in torch).

Run by :func:`suanli.live.bench.bench_allreduce`, or by hand under torchrun::

    torchrun --nproc-per-node 2 -m suanli.live.bench_worker --backend gloo \\
        --sizes 1048576,16777216 --output allreduce.json

Reads torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). For each
message size: warm-up all-reduces, an iteration count agreed by all ranks, then a timed loop
between barriers; the time per all-reduce is averaged over the ranks (nccl-tests' default
``-a 1``). ``algbw = bytes / time`` and ``busbw = algbw · 2(n-1)/n`` (nccl-tests
PERFORMANCE.md). Rank 0 writes the JSON result to ``--output``.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import timedelta
from typing import Any

from suanli.i18n import N_
from suanli.live.allreduce_timing import time_allreduce
from suanli.live.bench.grading import busbw


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m suanli.live.bench_worker")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    p.add_argument("--sizes", required=True, help="comma-separated message sizes in bytes")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--target-seconds", type=float, default=1.0, help="timed loop per size")
    p.add_argument("--max-iterations", type=int, default=200)
    p.add_argument("--timeout", type=int, default=120, help="process-group timeout, seconds")
    p.add_argument("--output", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    import torch
    import torch.distributed as dist

    args = _args(argv)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if args.backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    timeout = timedelta(seconds=args.timeout)
    if args.backend == "nccl":
        dist.init_process_group(
            "nccl", rank=rank, world_size=world, timeout=timeout, device_id=device
        )
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)

    # Correctness once: every rank contributes 1.
    check = torch.ones(1024, device=device)
    dist.all_reduce(check)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if not bool((check == world).all()):
        raise RuntimeError(
            N_("all-reduce returned {got}, expected {want}").format(got=check[0].item(), want=world)
        )

    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",") if s):
        numel = max(1, size // 4)
        buf = torch.zeros(numel, dtype=torch.float32, device=device)
        nbytes = numel * 4
        per_op, iterations = time_allreduce(
            buf,
            warmup=args.warmup,
            target_s=args.target_seconds,
            max_iterations=args.max_iterations,
        )
        algbw = nbytes / per_op
        rows.append(
            {
                "bytes": nbytes,
                "iterations": iterations,
                "time_s": per_op,
                "algbw_bytes_per_s": algbw,
                "busbw_bytes_per_s": busbw(algbw, world),
            }
        )
        del buf
    if rank == 0:
        doc = {"backend": args.backend, "world_size": world, "sizes": rows}
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, args.output)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
