"""Layout search speed: Llama-3.1-405B over up to 16,384 GPUs.

Target (issue 5): under 2 s on a 2-core CPU. For scale: Calculon's exhaustive search did not
finish a 175B / 1,024-GPU search in 500 s on this kind of machine (as reported in the issue).
Run: python benchmarks/bench_plan.py
"""

from __future__ import annotations

import statistics
import time

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.workload import TrainWork
from suanli.models.resolve import load_model
from suanli.plan.search import SearchSpace, search_train


def main() -> None:
    spec = load_model("llama-3.1-405b").spec
    work = TrainWork(task="pretrain", seq=8192)
    space = SearchSpace(max_gpus=16384, global_batch=2048)
    gpu = find_gpu("h100", bundled_gpus())
    search_train(spec, work, gpu, space)  # warm imports
    times = []
    for _ in range(5):
        start = time.perf_counter()
        result = search_train(spec, work, gpu, space)
        times.append(time.perf_counter() - start)
    best = result.best
    print(
        f"405B on H100, up to 16,384 GPUs: {result.evaluated:,} layouts "
        f"({result.fitting:,} fit) in {statistics.median(times):.3f} s (median of 5)"
    )
    if best:
        print(
            f"  best: {best.gpus} GPUs, tp{best.tp} pp{best.pp} dp{best.dp} zero{best.zero} "
            f"{best.recompute}, {best.tokens_per_s:,.0f} tokens/s, MFU {best.mfu:.1%}"
        )
    start = time.perf_counter()
    evaluated = 0
    for g in bundled_gpus():
        evaluated += search_train(spec, work, g, space).evaluated
    print(
        f"same search over all {len(bundled_gpus())} catalog GPUs: {evaluated:,} layouts in "
        f"{time.perf_counter() - start:.2f} s"
    )


if __name__ == "__main__":
    main()
