"""Plan searches in worker processes, so that the server's event loop keeps its interpreter lock.

A search is CPU-bound Python. In a thread it shares the interpreter lock with the event loop, and
a request for the GPU list waited its turn at every switch (p99 322 ms under 20 searches); in a
process of its own it waits for nothing. The pool is one per server process, made on first use
with the ``spawn`` start method (a fork of a threaded server can inherit a held lock). Each
worker runs at a lower priority (``nice`` +5) and under a memory guard: its address space is
capped at ``SUANLI_WORKER_MEMORY_GIB`` (default 4 GiB), so a search that would need more fails
with a 503 instead of swapping or taking the server down. A worker that dies is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from suanli.i18n import N_
from suanli.web.security import ApiError

#: The address-space cap of a worker process (GiB); ``SUANLI_WORKER_MEMORY_GIB`` overrides it.
WORKER_MEMORY_GIB = 4.0

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def _worker_setup(memory_bytes: int, server_pid: int) -> None:
    """In each worker: ends with the server, a lower priority than the event loop, and the
    memory guard."""
    import resource

    _die_with_server(server_pid)
    with contextlib.suppress(OSError):
        os.nice(5)
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _die_with_server(server: int) -> None:
    """End this worker when the server process (pid ``server``) is gone, however it went
    (SIGKILL too, even before this worker finished starting): a daemon thread watches for the
    worker being handed to another parent. (Linux's parent-death
    signal is not used: it fires when the thread that started the worker ends, and a server
    starts workers from short-lived threads.)"""

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="suanli-server-watch", daemon=True).start()


def shutdown() -> None:
    """Stop the worker processes (the server is stopping)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _memory_bytes() -> int:
    raw = os.environ.get("SUANLI_WORKER_MEMORY_GIB", "")
    try:
        gib = float(raw) if raw else WORKER_MEMORY_GIB
    except ValueError:
        gib = WORKER_MEMORY_GIB
    return int(max(gib, 1.0) * 2**30)


def _get_pool(workers: int) -> ProcessPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_setup,
                initargs=(_memory_bytes(), os.getpid()),
            )
        return _pool


def _drop_pool(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _pool_lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


async def in_worker(workers: int, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a worker process (``fn`` and ``args`` picklable); a worker out of
    memory or killed is a 503 with one sentence, and the pool is made afresh."""
    pool = _get_pool(workers)
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(pool, fn, *args)
    except MemoryError:
        raise ApiError(
            503,
            N_(
                "this search needs more than the {gib:g} GiB a request may use "
                "on this server; narrow it (fewer GPUs, a smaller max_gpus)"
            ).format(gib=_memory_bytes() / 2**30),
        ) from None
    except BrokenProcessPool:
        _drop_pool(pool)
        raise ApiError(
            503, N_("the search's worker process stopped (out of memory?); retry or narrow it")
        ) from None


def warm(workers: int) -> None:
    """Start the worker processes now (their imports take a second), not on the first search."""
    pool = _get_pool(workers)
    for _ in range(workers):
        pool.submit(_ready)


def _ready() -> bool:
    import suanli.answers.plan  # noqa: F401  (the search's imports, done before it is needed)

    return True


def plan_body(request: Any, loaded: Any, lang: str = "en") -> bytes:
    """The JSON body of ``POST /api/plan``, its sentences in ``lang`` (in a worker: the model
    was resolved by the server)."""
    from suanli.answers.plan import plan
    from suanli.web.security import render_json

    answer = plan(request, loader=lambda _name: loaded)
    return render_json(answer.to_json(), lang)
