"""``suanli serve`` sheds load instead of falling over (issue 39): with more idle connections
held than its open-file limit allows, it keeps answering, closes idle connections to make room,
and writes no "Too many open files" tracebacks.

Scaled down from the issue's 1,100 connections on a 1,024 limit (benchmarks/bench_web_idle.py
runs that one and reports the latency) to 300 on a 256 limit, so the test stays quick.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from .real_server import start_serve

LIMIT = 256
IDLE = 300


def _get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


def test_idle_connections_beyond_the_file_limit_do_not_stop_answers() -> None:
    server, port = start_serve(open_files=LIMIT, stderr=subprocess.PIPE)
    idle: list[socket.socket] = []
    try:
        assert _get(port, "/api/gpus") == 200
        for _ in range(IDLE):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break  # the backlog is full: the server is shedding, as it should
        time.sleep(0.5)
        latencies = []
        for _ in range(20):
            start = time.monotonic()
            assert _get(port, "/api/gpus") == 200
            latencies.append(time.monotonic() - start)
        assert max(latencies) < 2.0
        assert server.poll() is None
    finally:
        for sock in idle:
            sock.close()
        server.terminate()
        _, err = server.communicate(timeout=30)
    text = err.decode("utf-8", "replace")
    assert "Too many open files" not in text and "Traceback" not in text
