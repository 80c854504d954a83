"""Serving simulation speed: 100,000 requests per run.

Target (issue 9): simulating 100,000 requests takes under 5 s on a 2-core CPU. Each case
simulates Llama-3.1-8B on H100 (bf16) with 512-token prompts and lognormal outputs (mean 256);
times are the median of 3 runs (request generation excluded, printed apart). The last line times
a capacity plan over the whole catalog (1,000 requests per simulation).
Run: python benchmarks/bench_serving.py
"""

from __future__ import annotations

import statistics
import time

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.serving import (
    EngineConfig,
    Lengths,
    make_requests,
    plan_capacity,
    replica_cost,
    simulate,
)
from suanli.models.resolve import load_model

N = 100_000
CASES = [
    # (label, policy, rate, replicas, dispatch)
    ("continuous, 1 replica, 20 req/s", "continuous", 20.0, 1, "round-robin"),
    ("chunked, 1 replica, 20 req/s", "chunked", 20.0, 1, "round-robin"),
    ("static (batch 256), 1 replica, 5 req/s", "static", 5.0, 1, "round-robin"),
    ("continuous, 8 replicas least-loaded, 150 req/s", "continuous", 150.0, 8, "least-loaded"),
    ("continuous, 1 replica overloaded, 60 req/s", "continuous", 60.0, 1, "round-robin"),
]


def main() -> None:
    spec = load_model("llama-3.1-8b").spec
    gpu = find_gpu("h100-sxm-80gb", bundled_gpus())
    device = device_for(gpu, "bf16")
    prompt, output = (
        Lengths(mean=512, dist="uniform"),
        Lengths(mean=256, dist="lognormal", spread=0.8),
    )
    for label, policy, rate, replicas, dispatch in CASES:
        config = EngineConfig(policy=policy)
        cost = replica_cost(
            spec, device, memory_bytes=gpu.memory_bytes, config=config, reference_context=640
        )
        start = time.perf_counter()
        reqs = make_requests(rate=rate, prompt=prompt, output=output, requests=N, seed=1)
        generate = time.perf_counter() - start
        times = []
        for _ in range(3):
            start = time.perf_counter()
            result = simulate(cost, reqs, config, replicas=replicas, dispatch=dispatch)
            times.append(time.perf_counter() - start)
        print(
            f"{label:48s} {N:,} requests in {statistics.median(times):5.2f} s "
            f"(+{generate:.2f} s to draw them); {result.iterations:,} iterations, "
            f"{result.tokens_per_s:,.0f} tok/s, TTFT p95 {result.ttft_s['p95']:.3f} s"
        )
    reqs = make_requests(rate=20, prompt=prompt, output=output, requests=1000, seed=0)
    start = time.perf_counter()
    rows = plan_capacity(
        spec, bundled_gpus(), reqs, slo_ttft_s=1.0, slo_tpot_s=0.05, config=EngineConfig()
    )
    sims = sum(r.simulations for r in rows)
    print(
        f"capacity plan over {len(rows)} catalog GPUs (20 req/s, TTFT p95 <= 1 s, TPOT p95 <= "
        f"50 ms): {sims} simulations in {time.perf_counter() - start:.2f} s"
    )


if __name__ == "__main__":
    main()
