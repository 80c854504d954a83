"""Plan searches in worker processes: the memory guard and a dying worker are 503s with one
sentence, the pool is made afresh, and the answer is the thread path's, byte for byte."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")

from suanli.web.security import ApiError
from suanli.web.workers import in_worker


def allocate(gib: float) -> int:
    """Ask for ``gib`` GiB at once (in a worker capped at 4 GiB of address space)."""
    return len(bytearray(int(gib * 2**30)))


def die() -> None:
    os._exit(9)


def test_a_search_past_the_memory_guard_is_a_503() -> None:
    assert asyncio.run(in_worker(1, allocate, 0.01)) == int(0.01 * 2**30)
    with pytest.raises(ApiError) as caught:
        asyncio.run(in_worker(1, allocate, 16))
    assert caught.value.status == 503 and "GiB a request may use" in caught.value.message


def test_a_dead_worker_is_a_503_and_the_pool_recovers() -> None:
    with pytest.raises(ApiError) as caught:
        asyncio.run(in_worker(1, die))
    assert caught.value.status == 503 and "worker process stopped" in caught.value.message
    assert asyncio.run(in_worker(1, allocate, 0.001)) == int(0.001 * 2**30)


def test_an_api_error_in_a_worker_comes_back_whole() -> None:
    import pickle

    again = pickle.loads(pickle.dumps(ApiError(404, "gone")))
    assert (again.status, again.message) == (404, "gone")


def test_process_and_thread_searches_give_the_same_bytes() -> None:
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    body = {"model": "llama-3.1-8b", "task": "lora", "max_gpus": 1}
    answers = []
    for processes in (True, False):
        app = create_app(
            allow_hub=False,
            plan_cache_size=0,
            search_processes=processes,
            allow_hosts=("testserver",),
        )
        with TestClient(app) as client:
            res = client.post("/api/plan", json=body)
            assert res.status_code == 200, res.text
            answers.append(res.content)
    assert answers[0] == answers[1]


def test_search_workers_end_when_the_server_is_killed() -> None:
    """SIGKILL gives the server no shutdown: its workers notice and end by themselves."""
    import signal
    import time

    from .real_server import start_serve

    psutil = pytest.importorskip("psutil")
    server, _port = start_serve()
    try:
        deadline = time.monotonic() + 60
        workers: list[Any] = []
        while time.monotonic() < deadline and not workers:
            time.sleep(0.2)
            children = psutil.Process(server.pid).children()
            workers = [c for c in children if "spawn_main" in " ".join(c.cmdline())]
        assert workers, "the server started no search worker"
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
    _gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"workers left running: {[p.pid for p in alive]}"
