"""The serving simulation: replicas sharing the arrivals, and what the run measured.

:func:`simulate` dispatches the requests to the replicas (round-robin or least-loaded) and
advances each replica's iteration loop (:mod:`suanli.estimate.serving.scheduler`) up to each
arrival; :class:`ServingResult` holds the latency percentiles, throughput, utilisation and KV
statistics. Part of :mod:`suanli.estimate.serving`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from suanli.estimate.serving.arrivals import Requests
from suanli.estimate.serving.closed_loop import closed_loop
from suanli.estimate.serving.config import EngineConfig
from suanli.estimate.serving.engine import SharedState
from suanli.estimate.serving.scheduler import Replica
from suanli.estimate.serving.timing import ReplicaCost
from suanli.i18n import N_

DISPATCH = ("round-robin", "least-loaded")


@dataclass(frozen=True, kw_only=True)
class ServingResult:
    """What a simulation measured; times in seconds, rates per second."""

    requests: int
    completed: int
    replicas: int
    tp: int
    policy: str
    duration_s: float
    requests_per_s: float
    tokens_per_s: float
    """Output tokens per second of all replicas."""
    input_tokens_per_s: float
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    e2e_s: dict[str, float]
    queue_wait_mean_s: float
    gpu_utilization: float
    kv_usage_mean: float
    kv_usage_max: float
    kv_blocks: int
    max_running: int
    preemptions: int
    iterations: int
    queue_series: dict[str, list[float]] = field(default_factory=dict)
    usd_per_gpu_hour: float | None = None
    arrival_s: Any = field(default=None, repr=False, compare=False)
    """Each request's arrival time, seconds (a closed loop's as it ran): a numpy array."""
    finish_s: Any = field(default=None, repr=False, compare=False)
    """Each request's completion time (NaN if unfinished), seconds: a numpy array."""

    @property
    def gpus(self) -> int:
        """GPUs in all replicas."""
        return self.replicas * self.tp

    @property
    def usd_per_hour(self) -> float | None:
        """Rent of all the GPUs."""
        return None if self.usd_per_gpu_hour is None else self.usd_per_gpu_hour * self.gpus

    @property
    def usd_per_million_tokens(self) -> float | None:
        """Rent per million output tokens at the simulated throughput."""
        if self.usd_per_hour is None or not self.tokens_per_s:
            return None
        return self.usd_per_hour / 3600 / self.tokens_per_s * 1e6

    def meets(self, slo_ttft_s: float | None, slo_tpot_s: float | None) -> bool:
        """p95 TTFT and p95 TPOT within the targets (all requests completed)."""
        if self.completed < self.requests:
            return False
        if slo_ttft_s is not None and not self.ttft_s["p95"] <= slo_ttft_s:
            return False
        return slo_tpot_s is None or self.tpot_s["p95"] <= slo_tpot_s

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the field names of the CLI (units in the names)."""
        doc: dict[str, Any] = {
            "requests": self.requests,
            "completed": self.completed,
            "replicas": self.replicas,
            "tp": self.tp,
            "gpus": self.gpus,
            "policy": self.policy,
            "duration_s": self.duration_s,
            "requests_per_s": self.requests_per_s,
            "tokens_per_s": self.tokens_per_s,
            "input_tokens_per_s": self.input_tokens_per_s,
        }
        for name, stats in (("ttft", self.ttft_s), ("tpot", self.tpot_s), ("e2e", self.e2e_s)):
            for key in ("mean", "p50", "p95", "p99"):
                doc[f"{name}_{key}_s"] = stats[key]
        doc.update(
            {
                "queue_wait_mean_s": self.queue_wait_mean_s,
                "gpu_utilization": self.gpu_utilization,
                "kv_usage_mean": self.kv_usage_mean,
                "kv_usage_max": self.kv_usage_max,
                "kv_blocks_per_replica": self.kv_blocks,
                "max_running_per_replica": self.max_running,
                "preemptions": self.preemptions,
                "iterations": self.iterations,
                "usd_per_gpu_hour": self.usd_per_gpu_hour,
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_tokens": self.usd_per_million_tokens,
                "queue_series": self.queue_series,
            }
        )
        return doc


def _stats(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "p99": math.nan}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"mean": float(values.mean()), "p50": float(p50), "p95": float(p95), "p99": float(p99)}


def simulate(
    cost: ReplicaCost,
    requests: Requests,
    config: EngineConfig | None = None,
    *,
    replicas: int = 1,
    dispatch: str = "round-robin",
    usd_per_gpu_hour: float | None = None,
    samples: int = 100,
    progress: Callable[[int, int], None] | None = None,
    concurrency: int | None = None,
) -> ServingResult:
    """Simulate ``replicas`` replicas of ``cost`` serving ``requests`` under ``config``; with
    ``concurrency``, as a closed loop of that many clients (the requests' arrival times are
    replaced by the loop's: :func:`suanli.estimate.serving.closed_loop.closed_loop`)."""
    config = config or EngineConfig()
    if replicas < 1:
        raise ValueError(
            N_("--{option} must be >= 1, got {value}").format(option="replicas", value=replicas)
        )
    if dispatch not in DISPATCH:
        raise ValueError(
            N_("dispatch {value!r} is not one of {allowed}").format(
                value=dispatch, allowed=", ".join(DISPATCH)
            )
        )
    if usd_per_gpu_hour is not None and usd_per_gpu_hour < 0:
        raise ValueError(N_("--price must be >= 0, got {value}").format(value=usd_per_gpu_hour))
    n = len(requests)
    if n == 0:
        raise ValueError(N_("no requests to simulate"))
    bs = cost.block_size
    longest = int((requests.prompt + requests.output).max())
    need = -(-longest // bs)
    if cost.max_context and longest > cost.max_context:
        raise ValueError(
            N_(
                "a request of {tokens:,} tokens (prompt + output) is longer than the model's "
                "context of {context:,}"
            ).format(tokens=longest, context=cost.max_context)
        )
    if cost.kv_blocks < max(need, 1):
        free_gib = cost.kv_blocks * bs * cost.kv_bytes / 2**30
        raise ValueError(
            N_(
                "the KV cache holds {tokens:,} tokens per replica "
                "({gib:,.2f} GiB per GPU after weights and overhead) but a request needs "
                "{longest:,}; use more memory, --tp, quantization or shorter requests"
            ).format(tokens=cost.kv_blocks * bs, gib=free_gib, longest=longest)
        )
    if concurrency is not None:
        # A request lasts at least its output's decode steps: the grid spans about the run.
        rounds = n / min(concurrency, n)
        grid = rounds * float(requests.output.mean()) * cost.weights_read(1) / cost.device.bandwidth
        timed, ran, ran_reps = closed_loop(
            cost,
            requests,
            config,
            concurrency=concurrency,
            replicas=replicas,
            dispatch=dispatch,
            grid=max(grid / samples, 1e-9),
            progress=progress,
        )
        for r in ran_reps:
            r.run(math.inf)
        # The grid was a guess: keep about ``samples`` of the queue's samples.
        thin = max(1, math.ceil(max(len(r.samples) for r in ran_reps) / samples))
        for r in ran_reps:
            r.samples = r.samples[::thin]
        if progress is not None:
            progress(n, n)
        return _collect(cost, config, ran, ran_reps, timed, usd_per_gpu_hour)
    shared = SharedState(requests)
    first_t = shared.arrival[0]
    span = shared.arrival[-1] - first_t
    grid = span / samples if span > 0 else 1.0
    reps = [Replica(cost, config, shared, grid) for _ in range(replicas)]
    for r in reps:
        r.clock = first_t
        r.next_sample = first_t
    arrival = shared.arrival
    step = max(1, n // 100)
    safe = [-math.inf] * replicas if (replicas > 1 and dispatch == "least-loaded") else []
    best = 0
    for rid in range(n):
        t = arrival[rid]
        if replicas == 1:
            target = reps[0]
            target.run(t)
        elif dispatch == "round-robin":
            target = reps[rid % replicas]
            target.run(t)
        else:
            # Least loaded: a replica whose next completion cannot come before t needs no
            # advancing to know its load; the others iterate up to t.
            best, load = 0, -1
            for i, r in enumerate(reps):
                if safe[i] < t:
                    r.run(t)
                    safe[i] = r.safe_until()
                out = r.assigned - r.completed
                if load < 0 or out < load:
                    best, load = i, out
            target = reps[best]
            target.run(t)
        target.add(rid)
        if safe:
            safe[best] = target.safe_until()
        if progress is not None and rid % step == 0:
            progress(rid, n)
    for r in reps:
        r.run(math.inf)
    if progress is not None:
        progress(n, n)
    return _collect(cost, config, shared, reps, requests, usd_per_gpu_hour)


#: Throughput of a run with arrivals spread in time is measured from this share of the arrival
#: span on (the system filling up is left out) to the last arrival (the drain is left out).
WARMUP_SHARE = 0.1


def _throughput(
    requests: Requests, first: np.ndarray, finish: np.ndarray, makespan: float
) -> tuple[float, float, float]:
    """Requests, output tokens and prompt tokens per second.

    All arrivals at once (an offline benchmark): everything over the whole run, as
    ``trtllm-bench`` and ``vllm bench`` count. Arrivals spread in time: over the steady window
    ``[t0 + 10% of the span, last arrival]``, which gives the arrival rate when the replicas keep
    up and their capacity when they do not; output tokens are counted as produced evenly between
    a request's first and last token.
    """
    arrival = requests.arrival_s
    t0, t1 = float(arrival[0]), float(arrival[-1])
    out = requests.output.astype(np.float64)
    done = ~np.isnan(finish)
    if t1 - t0 <= 0:
        return (
            float(done.sum()) / makespan,
            float(out[done].sum()) / makespan,
            float(requests.prompt[done].sum()) / makespan,
        )
    lo = t0 + WARMUP_SHARE * (t1 - t0)
    window = t1 - lo

    def produced(t: float) -> float:
        span = np.where(finish > first, finish - first, 1.0)
        share = np.clip((t - first) / span, 0.0, 1.0)
        tokens = np.where(t >= first, 1 + (out - 1) * share, 0.0)
        return float(np.nansum(np.where(t >= finish, out, tokens)))

    finished = int(((finish > lo) & (finish <= t1)).sum())
    prefilled = float(requests.prompt[(first > lo) & (first <= t1)].sum())
    return finished / window, (produced(t1) - produced(lo)) / window, prefilled / window


def _collect(
    cost: ReplicaCost,
    config: EngineConfig,
    shared: SharedState,
    reps: list[Replica],
    requests: Requests,
    usd_per_gpu_hour: float | None,
) -> ServingResult:
    arrival = requests.arrival_s
    first = np.asarray(shared.first)
    finish = np.asarray(shared.finish)
    admit = np.asarray(shared.admit)
    done = ~np.isnan(finish)
    completed = int(done.sum())
    end = float(np.nanmax(finish)) if completed else float(arrival[-1])
    duration = max(end - float(arrival[0]), 1e-12)
    req_rate, out_rate, in_rate = _throughput(requests, first, finish, duration)
    ttft = (first - arrival)[done]
    e2e = (finish - arrival)[done]
    multi = done & (requests.output > 1)
    tpot = (finish[multi] - first[multi]) / (requests.output[multi] - 1)
    wait = (admit - arrival)[done]
    busy = sum(r.busy for r in reps)
    area = sum(r.kv_area for r in reps)
    total_blocks = cost.kv_blocks * len(reps)
    length = max(len(r.samples) for r in reps)
    queue = [0.0] * length
    times = [0.0] * length
    for r in reps:
        for i, (t, q) in enumerate(r.samples):
            times[i] = t - float(arrival[0])
            queue[i] += q
    return ServingResult(
        requests=len(requests),
        completed=completed,
        replicas=len(reps),
        tp=cost.tp,
        policy=config.policy,
        duration_s=duration,
        requests_per_s=req_rate,
        tokens_per_s=out_rate,
        input_tokens_per_s=in_rate,
        ttft_s=_stats(ttft),
        tpot_s=_stats(tpot),
        e2e_s=_stats(e2e),
        queue_wait_mean_s=float(wait.mean()) if len(wait) else math.nan,
        # Busy time is summed iteration by iteration: rounding can carry it past the wall clock.
        gpu_utilization=min(1.0, busy / (duration * len(reps))),
        kv_usage_mean=area / (duration * total_blocks) if total_blocks else 0.0,
        kv_usage_max=max(r.kv_max for r in reps) / cost.kv_blocks if cost.kv_blocks else 0.0,
        kv_blocks=cost.kv_blocks,
        max_running=max(r.max_running for r in reps),
        preemptions=sum(r.preemptions for r in reps),
        iterations=sum(r.iterations for r in reps),
        queue_series={"t_s": times, "waiting": queue},
        usd_per_gpu_hour=usd_per_gpu_hour,
        arrival_s=arrival,
        finish_s=finish,
    )


def saturated_requests_per_s(cost: ReplicaCost, requests: Requests, config: EngineConfig) -> float:
    """What one replica serves when it never waits for work: the first requests of
    ``requests`` (at least 200, four full batches where the engine runs more) all arriving at
    once, as an offline benchmark measures it. A deployment of R replicas is overloaded when
    more than R times this arrives: the queue then grows as long as the load lasts."""
    count = min(len(requests), max(4 * config.max_batch, 200))
    probe = Requests(
        arrival_s=np.zeros(count), prompt=requests.prompt[:count], output=requests.output[:count]
    )
    return simulate(cost, probe, config).requests_per_s
