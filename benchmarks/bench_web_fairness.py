"""Does a cheap endpoint stay fast while the server runs expensive plans? (issue 18)

Starts the web app in a subprocess (uvicorn, 127.0.0.1, plan cache off), sends 20 distinct
``POST /api/plan`` at once from threads of another process, and meanwhile times ``GET
/api/gpus`` every 50 ms over one kept-alive connection; prints its p50 / p99 / max against the
idle server, the plans' answers by status, and how long they took, measured in one run
(docs/security.md). ``--threads`` runs the searches in threads instead of worker processes.

Run: python benchmarks/bench_web_fairness.py [--plans 20] [--threads]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))

from bench_web import PAGE_PLAN, free_port, wait_ready

#: The app as suanli serve runs it (its HTTP protocol too), plan cache off.
SERVER = """
import sys, uvicorn
from suanli.web.app import create_app
app = create_app(allow_hub=False, plan_cache_size=0, search_processes=sys.argv[2] == "1")
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            http="suanli.web.protocol:JSONErrorH11Protocol")
"""

SENDER = """
import json, sys, threading, time, httpx
base, plans, body = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
statuses, seconds = [], []
def plan(i):
    t0 = time.perf_counter()
    res = httpx.post(base + "/api/plan", json={**body, "tokens": 1e8 + i, "max_gpus": 2},
                     timeout=600)
    seconds.append(time.perf_counter() - t0)
    statuses.append(res.status_code)
threads = [threading.Thread(target=plan, args=(i,)) for i in range(plans)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"statuses": statuses, "seconds": seconds}))
"""


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--plans", type=int, default=20)
    parser.add_argument(
        "--threads", action="store_true", help="searches in threads (the earlier server)"
    )
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = [sys.executable, "-c", SERVER, str(port), "0" if args.threads else "1"]
    proc = subprocess.Popen(server)
    try:
        wait_ready(base, proc)
        timer = httpx.Client(base_url=base, timeout=60)  # one kept-alive connection, as a browser
        timer.get("/api/gpus").raise_for_status()
        idle: list[float] = []
        for _ in range(20):  # the same request on an idle server, for comparison
            t0 = time.perf_counter()
            timer.get("/api/gpus").raise_for_status()
            idle.append(time.perf_counter() - t0)
        # The plans come from another process, so that the client's own threads do not delay
        # the timed requests (the first version measured its own interpreter lock too).
        sender = subprocess.Popen(
            [sys.executable, "-c", SENDER, base, str(args.plans), json.dumps(PAGE_PLAN)],
            stdout=subprocess.PIPE,
            text=True,
        )
        cheap: list[float] = []
        slowest: list[tuple[float, float]] = []  # (seconds, when after the plans were sent)
        start = time.perf_counter()
        while sender.poll() is None:
            t0 = time.perf_counter()
            timer.get("/api/gpus").raise_for_status()
            cheap.append(time.perf_counter() - t0)
            slowest.append((cheap[-1], t0 - start))
            time.sleep(0.05)
        sent = json.loads(sender.communicate()[0])
        statuses = Counter(sent["statuses"])
        plan_s = sent["seconds"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    p99 = (
        statistics.quantiles(cheap, n=100, method="inclusive")[98] if len(cheap) >= 2 else cheap[0]
    )
    print(
        f"searches in {'threads' if args.threads else 'worker processes'}: "
        f"GET /api/gpus during {args.plans} uncached plans: {len(cheap)} requests, "
        f"p50 {statistics.median(cheap) * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, "
        f"max {max(cheap) * 1e3:.0f} ms"
    )
    print(f"the same request on the idle server: p50 {statistics.median(idle) * 1e3:.0f} ms")
    print(f"plans: {dict(statuses)}, {min(plan_s):.1f}-{max(plan_s):.1f} s each")
    worst = ", ".join(f"{s * 1e3:.0f} ms at {at:.1f} s" for s, at in sorted(slowest)[-3:])
    print(f"slowest GPU-list requests: {worst}")


if __name__ == "__main__":
    main()
