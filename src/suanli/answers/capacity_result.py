"""What ``suanli capacity`` answers: a simulated deployment (:class:`CapacitySimulation`) or the
fewest GPUs of each catalog type (:class:`CapacityPlan`), and the views of the estimator's
results they are built from (:func:`serving_stats`, :func:`plan_row`).

Numbers are in base units (seconds, tokens, USD); one the run leaves undefined is ``None``, and
``to_json()`` writes any other non-finite float as ``null`` (:func:`finite`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from suanli.answers.base import FLATTEN, FLATTEN_OPTIONAL, Answer
from suanli.catalog.prices import Price

if TYPE_CHECKING:
    from suanli.estimate.serving import CapacityRow, ServingResult


@dataclass(frozen=True, kw_only=True)
class CapacityWorkload:
    """The requests and the engine: the keys both documents open with."""

    model: str
    rate_requests_per_s: float | None
    """Mean arrival rate; null for a trace and for arrivals all at once."""
    all_at_once: bool
    """All requests arrive at time 0 (an offline benchmark, ``rate`` inf)."""
    arrivals: str
    """poisson, bursty, even, trace, or closed (a closed loop of ``concurrency`` clients)."""
    concurrency: int | None = None
    """Clients of a closed loop, each sending its next request when its last one ends; null
    for arrivals at a rate or from a trace."""
    requests: int
    prompt_tokens_mean: float
    output_tokens_mean: float
    policy: str
    kv_policy: str
    weight_format: str
    kv_dtype: str
    seed: int
    clipped_requests: int
    """Sampled requests cut to the model's context (a heavy tail can pass it)."""
    slo_ttft_s: float | None
    slo_tpot_s: float | None


@dataclass(frozen=True, kw_only=True)
class ServingStats:
    """What one simulated deployment measured (rates per second of all replicas)."""

    duration_s: float
    requests_per_s: float
    tokens_per_s: float
    """Output tokens per second."""
    input_tokens_per_s: float
    ttft_mean_s: float | None
    ttft_p50_s: float | None
    ttft_p95_s: float | None
    ttft_p99_s: float | None
    tpot_mean_s: float | None
    """Null when no completed request has more than one output token."""
    tpot_p50_s: float | None
    tpot_p95_s: float | None
    tpot_p99_s: float | None
    e2e_mean_s: float | None
    e2e_p50_s: float | None
    e2e_p95_s: float | None
    e2e_p99_s: float | None
    queue_wait_mean_s: float | None
    gpu_utilization: float
    kv_usage_mean: float
    kv_usage_max: float
    kv_blocks_per_replica: int
    max_running_per_replica: int
    preemptions: int
    iterations: int
    usd_per_gpu_hour: float | None
    usd_per_hour: float | None
    usd_per_million_tokens: float | None
    """Rent per million output tokens at the simulated throughput."""


@dataclass(frozen=True, kw_only=True)
class QueueSeries:
    """Requests waiting (all replicas) sampled over the run."""

    t_s: tuple[float, ...]
    """Seconds since the first arrival."""
    waiting: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class CapacitySimulation(Answer):
    """A simulated deployment: ``replicas`` x ``tp`` GPUs serving the arrivals."""

    schema_name = "capacity-simulation"

    workload: CapacityWorkload = field(metadata=FLATTEN)
    gpu: str
    """Catalog id."""
    dispatch: str
    kv_tokens_per_replica: int
    meets_slo: bool | None
    """p95 TTFT and TPOT within the targets; null when no target was given."""
    completed: int
    replicas: int
    tp: int
    gpus: int
    stats: ServingStats = field(metadata=FLATTEN)
    queue_series: QueueSeries
    assumptions: tuple[str, ...]
    overloaded: bool = False
    """More requests arrive than the deployment serves: the queue grows as long as the load
    lasts, and the latencies grow with the run's length (they are not the deployment's)."""
    overload: str | None = None
    """When overloaded: one sentence with the rates and how many replicas hold the load."""
    rent: Price | None = None
    """The rent per GPU-hour the cost stands on, with its provider, kind and date: the one
    every view shows for the card, or the request's ``price`` (``given``)."""

    def to_json(self) -> dict[str, Any]:
        """The JSON document; a non-finite float is written as null."""
        doc: dict[str, Any] = finite(super().to_json())
        return doc


@dataclass(frozen=True, kw_only=True)
class DeploymentResult:
    """The simulation of a plan row's deployment."""

    requests: int
    completed: int
    policy: str
    stats: ServingStats = field(metadata=FLATTEN)


@dataclass(frozen=True, kw_only=True)
class CapacityPlanRow:
    """The cheapest deployment of one GPU type that meets the SLOs, or why there is none."""

    gpu: str
    """Catalog id."""
    fits: bool
    reason: str
    """Why no deployment meets the SLOs (empty when one does)."""
    tp: int | None
    replicas: int | None
    gpus: int | None
    weight_format: str | None
    simulations: int
    rent: Price | None = None
    """The rent per GPU-hour the cost stands on (as :attr:`CapacitySimulation.rent`)."""
    result: DeploymentResult | None = field(default=None, metadata=FLATTEN_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class CapacityPlan(Answer):
    """The fewest GPUs of each catalog type meeting the SLOs, ranked by cost per hour (priced
    first, then unpriced by GPU count, then those without an answer)."""

    schema_name = "capacity-plan"

    workload: CapacityWorkload = field(metadata=FLATTEN)
    max_gpus: int
    rows: tuple[CapacityPlanRow, ...]

    def to_json(self) -> dict[str, Any]:
        """The JSON document; a non-finite float is written as null."""
        doc: dict[str, Any] = finite(super().to_json())
        return doc


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (in dicts and lists) as ``None``: strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Mapping):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def finite_number(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not finite."""
    return None if value is None or not math.isfinite(value) else float(value)


def _usd(value: float | None) -> float | None:
    # An infinite price stays infinite here (the table shows it); to_json writes it as null.
    return None if value is None else float(value)


def serving_stats(result: ServingResult) -> ServingStats:
    """The answer's view of an estimator :class:`~suanli.estimate.serving.ServingResult`."""
    ttft, tpot, e2e = result.ttft_s, result.tpot_s, result.e2e_s
    return ServingStats(
        duration_s=float(result.duration_s),
        requests_per_s=float(result.requests_per_s),
        tokens_per_s=float(result.tokens_per_s),
        input_tokens_per_s=float(result.input_tokens_per_s),
        ttft_mean_s=finite_number(ttft["mean"]),
        ttft_p50_s=finite_number(ttft["p50"]),
        ttft_p95_s=finite_number(ttft["p95"]),
        ttft_p99_s=finite_number(ttft["p99"]),
        tpot_mean_s=finite_number(tpot["mean"]),
        tpot_p50_s=finite_number(tpot["p50"]),
        tpot_p95_s=finite_number(tpot["p95"]),
        tpot_p99_s=finite_number(tpot["p99"]),
        e2e_mean_s=finite_number(e2e["mean"]),
        e2e_p50_s=finite_number(e2e["p50"]),
        e2e_p95_s=finite_number(e2e["p95"]),
        e2e_p99_s=finite_number(e2e["p99"]),
        queue_wait_mean_s=finite_number(result.queue_wait_mean_s),
        gpu_utilization=float(result.gpu_utilization),
        kv_usage_mean=float(result.kv_usage_mean),
        kv_usage_max=float(result.kv_usage_max),
        kv_blocks_per_replica=int(result.kv_blocks),
        max_running_per_replica=int(result.max_running),
        preemptions=int(result.preemptions),
        iterations=int(result.iterations),
        usd_per_gpu_hour=_usd(result.usd_per_gpu_hour),
        usd_per_hour=_usd(result.usd_per_hour),
        usd_per_million_tokens=_usd(result.usd_per_million_tokens),
    )


def plan_row(row: CapacityRow, rent: Price | None = None) -> CapacityPlanRow:
    """The answer's view of an estimator :class:`~suanli.estimate.serving.CapacityRow`, with
    the GPU's ``rent``."""
    res = row.result
    return CapacityPlanRow(
        gpu=row.gpu_id,
        fits=row.fits,
        reason=row.reason,
        tp=row.tp or None,
        replicas=row.replicas or None,
        gpus=row.gpus or None,
        weight_format=row.weight_format or None,
        simulations=row.simulations,
        result=None
        if res is None
        else DeploymentResult(
            requests=res.requests,
            completed=res.completed,
            policy=res.policy,
            stats=serving_stats(res),
        ),
        rent=rent,
    )
