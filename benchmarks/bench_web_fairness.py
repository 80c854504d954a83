"""Does a cheap endpoint stay fast while the server runs expensive plans? (issue 18)

Starts the web app in a subprocess (uvicorn, 127.0.0.1, plan cache off), sends 20 distinct
``POST /api/plan`` at once from threads, and meanwhile times ``GET
/api/gpus`` every 50 ms; prints its p50 / p99 / max, the plans' answers by status, and how
long they took, measured in one run (docs/security.md).

Run: python benchmarks/bench_web_fairness.py [--plans 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from bench_web import PAGE_PLAN, SERVER, free_port, wait_ready


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--plans", type=int, default=20)
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), "0"])
    try:
        wait_ready(base, proc)
        httpx.get(base + "/api/gpus", timeout=30).raise_for_status()
        statuses: Counter[int] = Counter()
        plan_s: list[float] = []

        def plan(i: int) -> None:
            t0 = time.perf_counter()
            body = {**PAGE_PLAN, "tokens": 1e8 + i, "max_gpus": 2}
            res = httpx.post(base + "/api/plan", json=body, timeout=600)
            plan_s.append(time.perf_counter() - t0)
            statuses[res.status_code] += 1

        threads = [threading.Thread(target=plan, args=(i,)) for i in range(args.plans)]
        for t in threads:
            t.start()
        cheap: list[float] = []
        while any(t.is_alive() for t in threads):
            t0 = time.perf_counter()
            httpx.get(base + "/api/gpus", timeout=60).raise_for_status()
            cheap.append(time.perf_counter() - t0)
            time.sleep(0.05)
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    p99 = statistics.quantiles(cheap, n=100)[98] if len(cheap) >= 2 else cheap[0]
    print(
        f"GET /api/gpus during {args.plans} uncached plans: {len(cheap)} requests, "
        f"p50 {statistics.median(cheap) * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, "
        f"max {max(cheap) * 1e3:.0f} ms"
    )
    print(f"plans: {dict(statuses)}, {min(plan_s):.1f}-{max(plan_s):.1f} s each")


if __name__ == "__main__":
    main()
