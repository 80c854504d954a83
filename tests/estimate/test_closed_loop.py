"""Closed-loop load (``capacity --concurrency``): C clients start together and each sends its
next request when its last one ends; the arrival times come from the replicas themselves."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.serving import (
    EngineConfig,
    Lengths,
    Requests,
    closed_loop,
    make_requests,
    replica_cost,
    simulate,
)
from suanli.models.resolve import load_model


def _setup(policy: str = "continuous") -> tuple[Any, EngineConfig]:
    spec = load_model("llama-3.1-8b").spec
    gpu = find_gpu("h100", bundled_gpus())
    config = EngineConfig(policy=policy)
    cost = replica_cost(
        spec,
        device_for(gpu, "bf16"),
        tp=1,
        weight_format="bf16",
        kv_dtype="bf16",
        memory_bytes=gpu.memory_bytes,
        config=config,
        reference_context=1024 + 128,
    )
    return cost, config


def _requests(n: int, spread: bool = True) -> Requests:
    dist = "uniform" if spread else "fixed"
    return make_requests(
        rate=float("inf"),
        prompt=Lengths(mean=1024, dist=dist, spread=0.5),
        output=Lengths(mean=256, dist=dist, spread=0.5),
        requests=n,
        seed=3,
    )


@pytest.mark.parametrize("policy", ["continuous", "chunked", "prefill-first", "static"])
@pytest.mark.parametrize(
    ("replicas", "dispatch"), [(1, "round-robin"), (3, "round-robin"), (2, "least-loaded")]
)
def test_each_later_request_arrives_at_a_completion(
    policy: str, replicas: int, dispatch: str
) -> None:
    """The definition: the first C arrive at 0, request C + k at the k-th completion, so
    exactly C are in flight until the requests run out."""
    cost, config = _setup(policy)
    concurrency = 8
    result = simulate(
        cost, _requests(60), config, replicas=replicas, dispatch=dispatch, concurrency=concurrency
    )
    arrival, finish = result.arrival_s, result.finish_s
    assert np.all(arrival[:concurrency] == 0)
    assert np.all(np.diff(arrival) >= 0)
    later = arrival[concurrency:]
    np.testing.assert_array_equal(later, np.sort(finish)[: len(later)])
    in_flight = [(arrival <= t).sum() - (finish <= t).sum() for t in arrival]
    assert max(in_flight) == concurrency
    assert result.completed == 60


def test_one_client_waits_for_each_answer() -> None:
    """Concurrency 1: requests one after another, each arriving when the last ends; no queue,
    so every TTFT is the same one prefill."""
    cost, config = _setup()
    result = simulate(cost, _requests(5, spread=False), config, concurrency=1)
    np.testing.assert_array_equal(result.arrival_s[1:], result.finish_s[:-1])
    assert result.ttft_s["p99"] == pytest.approx(result.ttft_s["p50"], rel=1e-9)


def test_more_clients_more_throughput_never_above_the_client_count() -> None:
    cost, config = _setup()
    rates = []
    for concurrency in (1, 8, 64):
        result = simulate(cost, _requests(200, spread=False), config, concurrency=concurrency)
        rates.append(result.tokens_per_s)
    assert rates[0] < rates[1] < rates[2]
    # No speed-up above the client count: 8 clients never serve more than 8 single clients.
    assert rates[1] <= 8 * rates[0] * 1.001


def test_the_closed_loop_queues_nothing_beyond_its_clients() -> None:
    """Many clients against a small batch: the clients the batch cannot hold wait, and TTFT
    grows with the queue (the load benchmarks measure)."""
    cost, _config = _setup()
    small = EngineConfig(max_batch=16)
    light = simulate(cost, _requests(200, spread=False), small, concurrency=16)
    heavy = simulate(cost, _requests(200, spread=False), small, concurrency=64)
    waiting = np.asarray(heavy.queue_series["waiting"])
    assert waiting.max() < 64
    assert np.median(waiting) == 64 - 16  # the steady state: a full batch, the rest waiting
    assert len(waiting) <= 2 * 100
    assert heavy.ttft_s["p50"] > 2 * light.ttft_s["p50"]


def test_concurrency_must_be_positive() -> None:
    cost, config = _setup()
    with pytest.raises(ValueError, match="concurrency"):
        closed_loop(cost, _requests(4), config, concurrency=0)
