"""Scrape latency of `suanli export` while 50 clients hold half-sent requests (issue 18).

Prints p50 / p99 of 200 scrapes of the fake 8-GPU node with and without the held connections,
measured in one run (docs/security.md).

Run: python benchmarks/bench_exporter.py
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "src"))

from suanli.live import exporter


def scrapes(port: int, n: int) -> list[float]:
    """Seconds of ``n`` sequential scrapes."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
            resp.read()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    """Measure and print."""
    os.environ.setdefault("SUANLI_FAKE_GPUS", "healthy-8xh100")
    server = exporter.make_server("127.0.0.1", 0)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    quiet = scrapes(port, 200)
    held = []
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        held.append(s)
    busy = scrapes(port, 200)
    for s in held:
        s.close()
    server.shutdown()
    for label, xs in (("no held connections", quiet), ("50 half-open connections", busy)):
        p99 = statistics.quantiles(xs, n=100)[98]
        print(f"{label}: p50 {statistics.median(xs) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
