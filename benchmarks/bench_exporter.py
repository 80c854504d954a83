"""Scrape latency of `suanli export` while 50 clients stall (issue 22; target p99 < 100 ms).

Starts the exporter in its own process over the fake 8-GPU node (as Prometheus would reach it),
then times 500 sequential scrapes three ways: nobody else connected; 50 clients that connect and
never send a byte; 50 clients that send half a request and wait. The stalled connections are held
for the whole run (the exporter's 5-second per-connection timeout is lengthened in the child so
they do not drop out mid-measurement). Prints p50 / p99 of each (docs/live.md).

Run: python benchmarks/bench_exporter.py
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"
SCRAPES = 500
STALLED = 50

CHILD = """
import sys
from suanli.live import exporter
exporter.QuietHandler.timeout = 600.0  # hold the stalled clients for the whole run
server = exporter.make_server("127.0.0.1", 0)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def scrapes(port: int, n: int) -> list[float]:
    """Seconds of ``n`` sequential scrapes, each checked to be a full 8-GPU answer."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
            body = resp.read()
        out.append(time.perf_counter() - t0)
        if body.count(b"suanli_gpu_memory_total_bytes{") != 8:
            raise SystemExit("the exporter answered something other than the 8 fake GPUs")
    return out


def silent(sock: socket.socket) -> None:
    """Connect and never send."""


def half_request(sock: socket.socket) -> None:
    """Send a request line and one header, never the blank line that ends the request."""
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")


def measure(port: int, stall: Callable[[socket.socket], None] | None) -> list[float]:
    """Scrape times with :data:`STALLED` connections held open by ``stall`` (none if None)."""
    held = []
    if stall is not None:
        for _ in range(STALLED):
            sock = socket.create_connection(("127.0.0.1", port))
            stall(sock)
            held.append(sock)
    try:
        scrapes(port, 20)  # warm-up
        return scrapes(port, SCRAPES)
    finally:
        for sock in held:
            sock.close()


def main() -> None:
    """Measure and print."""
    env = {
        **os.environ,
        "SUANLI_FAKE_GPUS": "healthy-8xh100",
        "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        for label, stall in (
            ("no other client", None),
            (f"{STALLED} clients connected, sending nothing", silent),
            (f"{STALLED} clients holding half-sent requests", half_request),
        ):
            xs = measure(port, stall)
            p99 = statistics.quantiles(xs, n=100)[98]
            print(
                f"{label}: p50 {statistics.median(xs) * 1e3:.1f} ms, "
                f"p99 {p99 * 1e3:.1f} ms ({len(xs)} scrapes)"
            )
    finally:
        child.terminate()
        child.wait(timeout=10)


if __name__ == "__main__":
    main()
