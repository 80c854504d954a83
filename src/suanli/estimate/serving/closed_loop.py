"""Closed-loop load: ``C`` clients start together and each sends its next request when its last
one ends (vLLM's ``benchmark_serving --max-concurrency``, SGLang's ``bench_serving``, NVIDIA
genai-perf ``--concurrency``, AIPerf). Part of :mod:`suanli.estimate.serving`.

The arrivals of a closed loop depend on the completions, so the replicas run the loop
themselves: the first ``C`` requests arrive at time 0; request ``C + k`` arrives at the
``k``-th completion (zero think time, as those tools run). Each round runs every replica to the
earliest time any of them can complete a request (:meth:`EngineState.safe_until`: exact while it
only decodes, a lower bound otherwise), which stops each at the first iteration boundary at or
after that time and never past its own next completion. A completion is replaced once every
replica with work has reached its time (none can still complete one before it), in the order
the completions came.

A request that arrives during another replica's iteration waits for that iteration's end, where
the replica already is: no iteration boundary lies between the round's time and the replica's
clock. (A replay of the arrival times found, as an open loop, would not do: the decode runs'
closed-form sums, split at other times, land a rounding away from the same boundaries.)
``tests/estimate/test_closed_loop.py`` checks that every request after the first ``C`` arrives
at a completion, and that at most ``C`` are ever in flight. Least-loaded dispatch reads each
replica's requests in flight at the replica's own clock, which may be up to one iteration past
the arrival.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np

from suanli.estimate.serving.arrivals import Requests
from suanli.estimate.serving.config import EngineConfig
from suanli.estimate.serving.engine import SharedState
from suanli.estimate.serving.scheduler import Replica
from suanli.estimate.serving.timing import ReplicaCost
from suanli.i18n import N_

#: Queue-length grid when none is asked for: nothing is sampled.
_NO_SAMPLES = 1e300


def closed_loop(
    cost: ReplicaCost,
    requests: Requests,
    config: EngineConfig,
    *,
    concurrency: int,
    replicas: int = 1,
    dispatch: str = "round-robin",
    grid: float = _NO_SAMPLES,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Requests, SharedState, list[Replica]]:
    """Run ``replicas`` replicas serving ``requests`` (their lengths; arrival times ignored)
    to a closed loop of ``concurrency`` clients, each request going to the next replica in turn
    (round-robin) or to the one with the fewest requests in flight: the requests with the
    arrival times found, and the run's state for :func:`~suanli.estimate.serving.simulate`'s
    result (queue samples every ``grid`` seconds)."""
    if concurrency < 1:
        raise ValueError(
            N_("--{option} must be >= 1, got {value}").format(
                option="concurrency", value=concurrency
            )
        )
    n = len(requests)
    shared = SharedState(requests)
    shared.arrival = [math.inf] * n
    reps = [Replica(cost, config, shared, grid) for _ in range(replicas)]
    step = max(1, n // 100)
    in_flight: set[int] = set()

    def send(rid: int, at: float) -> None:
        shared.arrival[rid] = at
        if replicas == 1 or dispatch == "round-robin":
            i = rid % replicas
        else:
            i = min(range(replicas), key=lambda j: reps[j].assigned - reps[j].completed)
        target = reps[i]
        target.run(at)
        target.add(rid)
        in_flight.add(rid)
        if progress is not None and rid % step == 0:
            progress(rid, n)

    nxt = min(concurrency, n)
    for rid in range(nxt):
        send(rid, 0.0)
    found: list[tuple[float, int]] = []  # completions seen, not yet replaced (a heap)
    seen = 0  # completions taken from shared.finished
    stall = 0.0

    def due(r: Replica) -> float:
        """When ``r`` can next change what it holds: its earliest completion (a bound) or, for
        a static batch short of full, just after its timeout starts it."""
        t = r.safe_until()
        if r.static and r.waiting and not r.batch_running and len(r.waiting) < r.max_batch:
            start = shared.arrival[r.waiting[0]] + config.batch_timeout_s
            t = max(t, math.nextafter(max(start, r.clock), math.inf))
        return t

    while in_flight:
        until = min(due(r) for r in reps) + stall
        if found:
            # No replica runs past a completion not yet replaced: its request arrives there.
            until = min(until, found[0][0])
        if math.isinf(until):
            raise ValueError(
                N_(
                    "a request cannot be admitted even on an empty replica; "
                    "raise GPU memory or shorten prompts"
                )
            )
        before = [r.clock for r in reps]
        for r in reps:
            r.run(until)
        # Only the requests completed since the last round (no scan of every client).
        for rid in shared.finished[seen:]:
            in_flight.discard(rid)
            heapq.heappush(found, (shared.finish[rid], rid))
        seen = len(shared.finished)
        # A completion is replaced once no replica can still complete one before it: every
        # replica with work is at or past it.
        horizon = min((r.clock for r in reps if r.has_work()), default=math.inf)
        replaced = False
        while found and found[0][0] <= horizon:
            at, _ = heapq.heappop(found)
            replaced = True
            if nxt < n:
                send(nxt, at)
                nxt += 1
        if not replaced and [r.clock for r in reps] == before:
            # Nothing moved (a guard: due() should always move a replica): step on, doubling.
            stall = max(2 * stall, reps[0].t_min)
        else:
            stall = 0.0
    arrival = np.asarray(shared.arrival, dtype=np.float64)
    timed = Requests(arrival_s=arrival, prompt=requests.prompt, output=requests.output)
    return timed, shared, reps
