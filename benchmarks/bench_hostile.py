"""The hostile-input targets of issue 39, measured on this machine (docs/security.md).

1. ``suanli serve`` with a 1,024 open-file limit (soft and hard) while 1,100 idle connections are
   held: GET /api/gpus latency, 50 requests (target: p99 under 100 ms).
2. The exporter's jobs folder holding a FIFO, a symlink to /dev/zero and a 1 GB file beside one
   report: the time to read the reports a scrape reads (target: under 1 s).

Run: ``python benchmarks/bench_hostile.py`` (loopback only; the server stops by itself).
"""

from __future__ import annotations

import http.client
import os
import resource
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

IDLE = 1100
LIMIT = 1024
REQUESTS = 50


def serve_under_idle_connections() -> list[float]:
    """Latencies (s) of GET /api/gpus while IDLE idle connections are held."""
    from tests.web.real_server import start_serve

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * IDLE)), hard))
    server, port = start_serve(open_files=LIMIT)
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(1.0)
        out = []
        for _ in range(REQUESTS):
            start = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/api/gpus")
            conn.getresponse().read()
            conn.close()
            out.append(time.perf_counter() - start)
        return out
    finally:
        for sock in idle:
            sock.close()
        server.terminate()
        server.wait(timeout=30)


def hostile_jobs_folder_s() -> float:
    """Seconds to read the reports of a jobs folder with a FIFO, a link to /dev/zero and 1 GB."""
    from suanli.live.jobs import read_reports

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        os.mkfifo(path / "fifo.json")
        (path / "zero.json").symlink_to("/dev/zero")
        with open(path / "huge.json", "wb") as handle:
            handle.truncate(1 << 30)
        start = time.perf_counter()
        read_reports(path)
        return time.perf_counter() - start


def main() -> None:
    """Print both measurements."""
    latencies = sorted(serve_under_idle_connections())
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    print(
        f"serve, {IDLE} idle connections, open-file limit {LIMIT}: GET /api/gpus "
        f"median {statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
        f"({len(latencies)} requests; target p99 < 100 ms)"
    )
    jobs_ms = hostile_jobs_folder_s() * 1000
    print(f"exporter jobs folder with a FIFO, /dev/zero and 1 GB: {jobs_ms:.1f} ms")


if __name__ == "__main__":
    main()
