"""A bounded number of expensive computations at once, with a queue deadline.

Plan searches are CPU-bound Python: twenty at once in the thread pool share one interpreter
lock with everything else, and a request for the GPU list waited behind them for up to 1.4 s.
Searches take a slot first (``SEARCH_SLOTS``, by default half the CPUs, at least one); the rest
wait on the event loop, where waiting costs nothing, and a request that waits longer than
``QUEUE_DEADLINE_S`` gets a 503 with one sentence instead of an answer minutes later. Cheap
endpoints never take a slot. The slot's thread still shares the interpreter lock with the event
loop, so a cheap request can wait a few of the search's switch intervals (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from suanli.i18n import N_
from suanli.web.security import ApiError

T = TypeVar("T")

#: Searches that run at once by default.
SEARCH_SLOTS = max(1, (os.cpu_count() or 2) // 2)
#: Seconds a search may wait for a slot before the request is refused (503).
QUEUE_DEADLINE_S = 60.0


class WorkerSlots:
    """``slots`` computations in the thread pool at once; the others queue on the event loop."""

    def __init__(self, slots: int = SEARCH_SLOTS, deadline_s: float = QUEUE_DEADLINE_S) -> None:
        self.slots = max(1, slots)
        self.deadline_s = deadline_s
        self._semaphore: asyncio.Semaphore | None = None

    def _sem(self) -> asyncio.Semaphore:
        # Created on first use, inside the server's event loop.
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        return self._semaphore

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in the thread pool once a slot is free; ApiError 503 when
        none frees up within the deadline."""
        async with self._slot():
            return await run_in_threadpool(fn, *args, **kwargs)

    async def run_in_process(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker process (:mod:`suanli.web.workers`) once a slot is free."""
        from suanli.web.workers import in_worker

        async with self._slot():
            return await in_worker(self.slots, fn, *args)  # type: ignore[no-any-return]

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        """Hold one slot; ApiError 503 when none frees up within the deadline."""
        sem = self._sem()
        try:
            await asyncio.wait_for(sem.acquire(), timeout=self.deadline_s)
        except asyncio.TimeoutError:
            raise ApiError(
                503, N_("the server is busy with other searches; retry in a minute")
            ) from None
        try:
            yield
        finally:
            sem.release()
