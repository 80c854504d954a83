"""The serving simulator: queueing theory, batching policies, KV limits, sizing, published runs.

Figures the docs quote (docs/capacity.md) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.serving import (
    EngineConfig,
    Lengths,
    ReplicaCost,
    Requests,
    make_requests,
    parse_trace,
    plan_replicas,
    replica_cost,
    simulate,
)
from suanli.estimate.workload import InferWork
from suanli.models.spec import ModelSpec

from .serving_helpers import Seq, decode_one_token, summary

GPUS = bundled_gpus()
H100 = find_gpu("h100-sxm-80gb", GPUS)


# --- queueing theory ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["static", "continuous"])
def test_md1_mean_wait(h100_cost: ReplicaCost, policy: str) -> None:
    """One server, batch 1, deterministic service (fixed lengths), Poisson arrivals: the mean
    wait in queue is the M/D/1 value rho S / (2 (1 - rho)) (Pollaczek-Khinchine)."""
    config = EngineConfig(policy=policy, max_batch=1, batch_timeout_s=0.0)
    prompt, output = Lengths(mean=256), Lengths(mean=64)
    alone = simulate(h100_cost, make_requests(rate=1, prompt=prompt, output=output, requests=1))
    service = alone.e2e_s["mean"]
    reqs = make_requests(rate=0.5 / service, prompt=prompt, output=output, requests=60_000, seed=3)
    result = simulate(h100_cost, reqs, config)
    arrivals = reqs.arrival_s
    rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])  # the sample's own rate
    rho = rate * service
    theory = rho * service / (2 * (1 - rho))
    error = result.queue_wait_mean_s / theory - 1
    print(
        f"\nM/D/1 ({policy}): S = {service * 1e3:.1f} ms, rho = {rho:.3f}, mean wait "
        f"{result.queue_wait_mean_s * 1e3:.1f} ms vs {theory * 1e3:.1f} ms ({error:+.2%}); "
        f"busy {result.gpu_utilization:.3f}"
    )
    assert abs(error) < 0.05
    assert result.gpu_utilization == pytest.approx(rho, rel=0.02)
    assert result.e2e_s["p50"] >= service


def test_single_request_matches_the_speed_model(llama8b: ModelSpec, h100_cost: ReplicaCost) -> None:
    """Alone on the GPU, TTFT and TPOT are the speed estimator's batch-1 figures."""
    prompt, output = 1024, 256
    reqs = make_requests(
        rate=1, prompt=Lengths(mean=prompt), output=Lengths(mean=output), requests=1
    )
    r = simulate(h100_cost, reqs)
    perf = inference_perf(
        llama8b, InferWork(batch=1, context=prompt + output), h100_cost.device, prompt, output
    )
    assert r.ttft_s["mean"] == pytest.approx(perf.ttft_s, rel=0.1)
    # The simulator linearises an iteration with the kernel floors as a fixed term; the speed
    # estimator sums the GEMMs kernel by kernel (suanli.estimate.kernels).
    assert r.tpot_s["mean"] == pytest.approx(perf.tpot_s, rel=0.1)


# --- policies ----------------------------------------------------------------------------------


def test_continuous_beats_static_for_mixed_output_lengths(h100_cost: ReplicaCost) -> None:
    """Mixed output lengths: static batches decode to their longest member and admit nobody
    meanwhile; continuous batching refills slots every iteration."""
    prompt, output = Lengths(mean=512), Lengths(mean=256, dist="lognormal", spread=1.0)
    static = EngineConfig(policy="static", max_batch=64, batch_timeout_s=0.5)
    cont = EngineConfig(policy="continuous", max_batch=64)
    offline = make_requests(rate=math.inf, prompt=prompt, output=output, requests=3000, seed=1)
    sat = {c.policy: simulate(h100_cost, offline, c) for c in (static, cont)}
    # A rate both policies sustain: static batching's latency is the price, not instability.
    online = make_requests(rate=1, prompt=prompt, output=output, requests=3000, seed=1)
    lat = {c.policy: simulate(h100_cost, online, c) for c in (static, cont)}
    print("\nsaturated (3,000 requests at once, batch <= 64):")
    for name, r in sat.items():
        print(f"  {name:10s} {summary(r)}")
    print("at 1 request/s (Poisson):")
    for name, r in lat.items():
        print(f"  {name:10s} {summary(r)}")
    assert sat["continuous"].tokens_per_s > 1.5 * sat["static"].tokens_per_s
    # Both sustain the offered rate: their request rates agree within 2%.
    assert lat["static"].requests_per_s == pytest.approx(lat["continuous"].requests_per_s, 0.02)
    assert lat["continuous"].e2e_s["p95"] < lat["static"].e2e_s["p95"]
    assert lat["continuous"].ttft_s["p95"] < lat["static"].ttft_s["p95"]


def test_chunked_prefill_bounds_the_decode_stall(h100_cost: ReplicaCost) -> None:
    """Long prompts joining a running batch stall its decode for a whole prefill unless the
    prefill is chunked: chunking lowers the p99 TPOT."""
    prompt, output = Lengths(mean=6000, dist="uniform", spread=0.5), Lengths(mean=200)
    reqs = make_requests(rate=2, prompt=prompt, output=output, requests=800, seed=2)
    cont = simulate(h100_cost, reqs, EngineConfig(policy="continuous"))
    chunk = simulate(h100_cost, reqs, EngineConfig(policy="chunked", max_batched_tokens=512))
    print(f"\nlong prompts: continuous {summary(cont)}\n              chunked    {summary(chunk)}")
    assert chunk.tpot_s["p99"] < cont.tpot_s["p99"]
    assert chunk.completed == cont.completed == len(reqs)


def test_static_batch_waits_for_a_full_batch_or_the_timeout(h100_cost: ReplicaCost) -> None:
    arrivals = Requests(
        arrival_s=np.array([0.0, 0.1, 5.0]),
        prompt=np.array([100, 100, 100]),
        output=np.array([10] * 3),
    )
    r = simulate(h100_cost, arrivals, EngineConfig(policy="static", max_batch=2, batch_timeout_s=1))
    # The first two fill a batch at 0.1 s; the third starts alone after its 1 s timeout.
    assert r.queue_wait_mean_s == pytest.approx((0.1 + 0.0 + 1.0) / 3, rel=1e-6)


# --- KV capacity -------------------------------------------------------------------------------


def test_kv_capacity_limits_concurrency(llama8b: ModelSpec) -> None:
    """A GPU with little memory left after the weights holds few sequences: requests queue,
    and with on-demand allocation running ones are preempted."""
    device = device_for(H100, "bf16")
    prompt, output = Lengths(mean=1000), Lengths(mean=500)
    reqs = make_requests(rate=8, prompt=prompt, output=output, requests=600, seed=4)
    big = replica_cost(llama8b, device, memory_bytes=H100.memory_bytes, reference_context=1250)
    tiny_bytes = (big.non_kv_bytes + 8 * 1500 * big.kv_bytes) / 0.9  # room for ~8 requests
    tiny = replica_cost(llama8b, device, memory_bytes=tiny_bytes, reference_context=1250)
    assert tiny.kv_blocks * tiny.block_size == pytest.approx(8 * 1500, rel=0.01)
    roomy = simulate(big, reqs)
    cramped = simulate(tiny, reqs)
    reserved = simulate(tiny, reqs, EngineConfig(kv_policy="reserve"))
    print(
        f"\nKV {big.kv_blocks * 16:,} tokens: {summary(roomy)}, max running {roomy.max_running}"
        f"\nKV {tiny.kv_blocks * 16:,} tokens (preempt): {summary(cramped)}, max running "
        f"{cramped.max_running}, preemptions {cramped.preemptions}"
        f"\nKV {tiny.kv_blocks * 16:,} tokens (reserve): {summary(reserved)}, max running "
        f"{reserved.max_running}"
    )
    assert roomy.max_running > 12 and roomy.kv_usage_max < 0.25
    assert reserved.max_running <= 8 and reserved.preemptions == 0
    assert cramped.max_running <= 12  # prompts' blocks only at admission, at most 1000/16 each
    assert cramped.preemptions > 0
    assert cramped.kv_usage_max <= 1.0 and reserved.kv_usage_max <= 1.0
    for r in (cramped, reserved):
        assert r.queue_wait_mean_s > 10 * roomy.queue_wait_mean_s
        assert r.completed == len(reqs)


def test_a_request_larger_than_the_kv_cache_is_refused(h100_cost: ReplicaCost) -> None:
    small = replace(h100_cost, kv_blocks=10)
    reqs = make_requests(rate=1, prompt=Lengths(mean=150), output=Lengths(mean=20), requests=3)
    with pytest.raises(ValueError, match="KV cache holds 160 tokens"):
        simulate(small, reqs)


# --- an independent reference: one iteration, one sequence at a time ----------------------------


def _reference(cost: ReplicaCost, reqs: Requests, cfg: EngineConfig) -> dict[str, list[float]]:
    """The continuous and chunked policies stepped naively, per iteration and per sequence."""
    bs, free = cfg.block_size, cost.kv_blocks
    water = int(0.01 * cost.kv_blocks)
    reserve, chunked = cfg.kv_policy == "reserve", cfg.policy == "chunked"
    arrival = reqs.arrival_s.tolist()
    prompt, remaining = reqs.prompt.tolist(), reqs.output.tolist()
    n = len(arrival)
    out: dict[str, list[float]] = {k: [math.nan] * n for k in ("admit", "first", "finish")}
    held: dict[int, int] = {}
    waiting: deque[int] = deque()
    prefilling: list[Seq] = []
    decoding: list[Seq] = []
    nxt, clock, preemptions = 0, arrival[0], 0
    while nxt < n or waiting or prefilling or decoding:
        if not (waiting or prefilling or decoding):
            clock = max(clock, arrival[nxt])
        while nxt < n and arrival[nxt] <= clock:
            waiting.append(nxt)
            nxt += 1
        need, preempted = 0, False
        if not reserve and decoding:
            need = sum(1 for d in decoding if d.ctx % bs == 0)
            if need > free:
                while need > free and decoding:
                    d = decoding.pop()
                    if d.ctx % bs == 0:
                        need -= 1
                    free += -(-d.ctx // bs)
                    prompt[d.rid] += d.produced  # recomputed: prompt and output so far
                    remaining[d.rid] -= d.produced
                    waiting.appendleft(d.rid)
                    preemptions += 1
                preempted = bool(decoding)
        chunks: list[tuple[Seq, int, int]] = []
        budget = cfg.token_budget
        if chunked:
            budget = max(budget - len(decoding), 0)
            for e in prefilling:
                if budget <= 0:
                    break
                c = min(prompt[e.rid] - e.done, budget)
                chunks.append((e, c, e.done))
                budget -= c
        if not preempted:
            slots, used = cfg.max_batch - len(decoding) - len(prefilling), 0
            while waiting and slots > 0:
                rid = waiting[0]
                p = prompt[rid]
                if chunked:
                    if budget <= 0:
                        break
                    c = min(p, budget)
                else:
                    if used and used + p > budget:
                        break
                    c = p
                blocks = -(-(p + remaining[rid]) // bs) if reserve else -(-p // bs)
                floor = need + (water if (decoding or prefilling) and not reserve else 0)
                if blocks > free - floor:
                    break
                waiting.popleft()
                free -= blocks
                held[rid] = blocks
                if math.isnan(out["admit"][rid]):
                    out["admit"][rid] = clock
                e = Seq(rid)
                prefilling.append(e)
                chunks.append((e, c, 0))
                used += c
                if chunked:
                    budget -= c
                slots -= 1
        assert chunks or decoding, "stuck"
        tokens = logits = len(decoding)
        keys = positions = float(sum(d.ctx + 1 for d in decoding))
        completing = []
        for e, c, p in chunks:
            tokens += c
            keys += c * p + c * (c + 1) / 2
            positions += p + c
            e.done = p + c
            if e.done >= prompt[e.rid]:
                logits += 1
                completing.append(e)
        free -= need
        clock += cost.iteration_s(tokens, logits, keys, positions, cfg.step_overhead_s)
        decoding, freed = decode_one_token(decoding, clock, out["finish"], held, reserve, bs)
        free += freed
        for e in completing:
            prefilling.remove(e)
            if math.isnan(out["first"][e.rid]):
                out["first"][e.rid] = clock
            if remaining[e.rid] <= 1:
                out["finish"][e.rid] = clock
                free += held[e.rid]
            else:
                decoding.append(Seq(e.rid, prompt[e.rid], 1, remaining[e.rid]))
    assert free == cost.kv_blocks, "blocks leaked"
    out["preemptions"] = [float(preemptions)]
    return out


@pytest.mark.parametrize(
    ("policy", "kv_policy", "blocks"),
    [
        ("continuous", "preempt", 100_000),
        ("continuous", "preempt", 120),
        ("continuous", "reserve", 120),
        ("chunked", "preempt", 120),
        ("chunked", "reserve", 120),
    ],
)
def test_matches_a_step_by_step_reference(
    h100_cost: ReplicaCost, policy: str, kv_policy: str, blocks: int
) -> None:
    """The aggregate bookkeeping and closed-form decode runs give the same times as stepping
    every iteration and every sequence, preemptions included."""
    cost = replace(h100_cost, kv_blocks=blocks)
    cfg = EngineConfig(policy=policy, kv_policy=kv_policy, max_batch=24, max_batched_tokens=700)
    reqs = make_requests(
        rate=40,
        prompt=Lengths(mean=300, dist="uniform", spread=0.9),
        output=Lengths(mean=120, dist="lognormal", spread=0.8),
        requests=400,
        seed=5,
    )
    reqs = Requests(
        arrival_s=reqs.arrival_s, prompt=reqs.prompt, output=np.minimum(reqs.output, 1500)
    )
    ref = _reference(cost, reqs, cfg)
    got = simulate(cost, reqs, cfg)
    assert got.preemptions == ref["preemptions"][0]
    if blocks == 120 and kv_policy == "preempt":
        assert got.preemptions > 0
    arrival = reqs.arrival_s
    for key, stats in (("first", got.ttft_s), ("finish", got.e2e_s)):
        times = np.asarray(ref[key]) - arrival
        assert stats["mean"] == pytest.approx(times.mean(), rel=1e-9)
        assert stats["p95"] == pytest.approx(np.percentile(times, 95), rel=1e-9)
    wait = (np.asarray(ref["admit"]) - arrival).mean()
    assert got.queue_wait_mean_s == pytest.approx(wait, rel=1e-9, abs=1e-12)


# --- prefill-first (vLLM v0's default scheduler) ----------------------------------------------


def test_replicas_share_the_load(h100_cost: ReplicaCost) -> None:
    reqs = make_requests(
        rate=60,
        prompt=Lengths(mean=512),
        output=Lengths(mean=256, dist="lognormal", spread=1.0),
        requests=6000,
    )
    one = simulate(h100_cost, reqs)
    rr = simulate(h100_cost, reqs, replicas=4)
    ll = simulate(h100_cost, reqs, replicas=4, dispatch="least-loaded")
    print(f"\n1 replica:          {summary(one)}")
    print(f"4, round-robin:     {summary(rr)}")
    print(f"4, least-loaded:    {summary(ll)}")
    assert rr.ttft_s["p95"] < one.ttft_s["p95"]
    assert rr.tpot_s["p95"] < one.tpot_s["p95"]
    assert ll.tpot_s["p95"] <= rr.tpot_s["p95"] * 1.05
    assert rr.completed == ll.completed == len(reqs)
    assert rr.gpus == 4


def test_capacity_search_meets_the_slo_when_resimulated(llama8b: ModelSpec) -> None:
    device = device_for(H100, "bf16")
    reqs = make_requests(
        rate=40,
        prompt=Lengths(mean=1024, dist="lognormal", spread=0.6),
        output=Lengths(mean=256, dist="lognormal", spread=0.6),
        requests=1500,
        seed=7,
    )
    slo = {"slo_ttft_s": 0.5, "slo_tpot_s": 0.03}
    tp, replicas, result, sims, reason = plan_replicas(
        llama8b, device, H100.memory_bytes, reqs, **slo, usd_per_gpu_hour=3.78
    )
    assert result is not None, reason
    print(
        f"\n40 req/s, TTFT p95 <= 0.5 s, TPOT p95 <= 30 ms: {replicas} x tp{tp} H100 ({sims} runs)"
    )
    print(f"  {summary(result)}, ${result.usd_per_hour:.2f}/h")
    cfg = EngineConfig()
    ref = int(reqs.prompt.mean() + reqs.output.mean() / 2)
    cost = replica_cost(
        llama8b, device, tp=tp, memory_bytes=H100.memory_bytes, config=cfg, reference_context=ref
    )
    again = simulate(cost, reqs, cfg, replicas=replicas)
    assert again.meets(**slo)
    assert again.ttft_s == result.ttft_s
    assert replicas * tp > 1
    fewer = replicas - 1
    if fewer:
        assert not simulate(cost, reqs, cfg, replicas=fewer).meets(**slo)


def test_an_impossible_tpot_slo_is_explained(llama8b: ModelSpec) -> None:
    reqs = make_requests(rate=1, prompt=Lengths(mean=512), output=Lengths(mean=128), requests=50)
    _, _, result, _, reason = plan_replicas(
        llama8b,
        device_for(find_gpu("t4", GPUS), "bf16"),
        find_gpu("t4", GPUS).memory_bytes,
        reqs,
        slo_ttft_s=None,
        slo_tpot_s=0.001,
    )
    assert result is None
    assert "TPOT alone" in reason


# --- workload generation --------------------------------------------------------------------


def test_deterministic_with_a_seed(h100_cost: ReplicaCost) -> None:
    def run(seed: int) -> dict[str, Any]:
        reqs = make_requests(
            rate=10,
            prompt=Lengths(mean=400, dist="lognormal"),
            output=Lengths(mean=200, dist="uniform"),
            requests=500,
            arrivals="bursty",
            seed=seed,
        )
        return simulate(h100_cost, reqs).as_dict()

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_arrival_processes_and_lengths() -> None:
    rng_free = {"prompt": Lengths(mean=100), "output": Lengths(mean=50)}
    poisson = make_requests(rate=50, requests=40_000, seed=1, **rng_free)
    bursty = make_requests(rate=50, requests=40_000, seed=1, arrivals="bursty", **rng_free)
    for reqs in (poisson, bursty):
        span = reqs.arrival_s[-1] - reqs.arrival_s[0]
        assert len(reqs) / span == pytest.approx(50, rel=0.1)
        assert (np.diff(reqs.arrival_s) >= 0).all()

    def dispersion(times: np.ndarray) -> float:  # variance / mean of counts per second
        counts = np.bincount(times.astype(np.int64))
        return float(counts.var() / counts.mean())

    assert dispersion(poisson.arrival_s) == pytest.approx(1.0, abs=0.15)
    assert dispersion(bursty.arrival_s) > 5
    timed = make_requests(rate=20, duration_s=100, seed=2, **rng_free)
    assert timed.arrival_s[-1] <= 100 and len(timed) == pytest.approx(2000, rel=0.1)
    rng = np.random.default_rng(0)
    logn = Lengths(mean=500, dist="lognormal", spread=0.8).sample(rng, 50_000)
    assert logn.mean() == pytest.approx(500, rel=0.03) and logn.min() >= 1
    uni = Lengths(mean=500, dist="uniform", spread=0.5).sample(rng, 10_000)
    assert uni.min() >= 250 and uni.max() <= 750
    offline = make_requests(rate=math.inf, requests=10, **rng_free)
    assert (offline.arrival_s == 0).all()


def test_trace_csv() -> None:
    text = "arrival_s,prompt_tokens,output_tokens\n1.5,100,20\n0.5,200,40\n"
    reqs = parse_trace(text)
    assert reqs.arrival_s.tolist() == [0.5, 1.5]
    assert reqs.prompt.tolist() == [200, 100]
    assert (
        make_requests(
            rate=1, prompt=Lengths(mean=1), output=Lengths(mean=1), arrivals="trace", trace=reqs
        )
        is reqs
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Lengths(mean=0), "integers >= 1"),
        (lambda: Lengths(mean=10, dist="gamma"), "not one of"),
        (lambda: Lengths(mean=10, dist="uniform", spread=1.5), "--spread"),
        (lambda: EngineConfig(policy="magic"), "--policy"),
        (lambda: EngineConfig(max_batch=0), "--max-batch"),
        (lambda: EngineConfig(kv_policy="swap"), "kv policy"),
        (lambda: EngineConfig(gpu_memory_utilization=1.5), "--gpu-memory-utilization"),
        (
            lambda: make_requests(
                rate=0, prompt=Lengths(mean=1), output=Lengths(mean=1), requests=5
            ),
            "--rate",
        ),
        (
            lambda: make_requests(rate=1, prompt=Lengths(mean=1), output=Lengths(mean=1)),
            "--requests",
        ),
        (
            lambda: make_requests(
                rate=1, prompt=Lengths(mean=1), output=Lengths(mean=1), requests=0
            ),
            "--requests",
        ),
        (
            lambda: make_requests(
                rate=1, prompt=Lengths(mean=1), output=Lengths(mean=1), requests=5, arrivals="x"
            ),
            "--arrivals",
        ),
        (
            lambda: make_requests(
                rate=1, prompt=Lengths(mean=1), output=Lengths(mean=1), requests=5, arrivals="trace"
            ),
            "--trace",
        ),
        (lambda: parse_trace("a,b\n1,2\n"), "header"),
        (lambda: parse_trace("arrival_s,prompt_tokens,output_tokens\n1,x,2\n"), "integers"),
        (lambda: parse_trace("arrival_s,prompt_tokens,output_tokens\n-1,5,2\n"), ">= 0"),
    ],
)
def test_bad_inputs_raise_value_error(call: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_layouts_raise_value_error(llama8b: ModelSpec, h100_cost: ReplicaCost) -> None:
    device = device_for(H100, "bf16")
    with pytest.raises(ValueError, match="--tp"):
        replica_cost(llama8b, device, tp=3, memory_bytes=H100.memory_bytes)
    with pytest.raises(ValueError, match="--kv-dtype"):
        replica_cost(llama8b, device, kv_dtype="fp4", memory_bytes=H100.memory_bytes)
    reqs = make_requests(rate=1, prompt=Lengths(mean=10), output=Lengths(mean=10), requests=2)
    with pytest.raises(ValueError, match="--replicas"):
        simulate(h100_cost, reqs, replicas=0)
    with pytest.raises(ValueError, match="dispatch"):
        simulate(h100_cost, reqs, replicas=2, dispatch="random")
    with pytest.raises(ValueError, match="--slo-tpot"):
        plan_replicas(llama8b, device, H100.memory_bytes, reqs, slo_ttft_s=1, slo_tpot_s=-1)
    with pytest.raises(ValueError, match="KV cache"):
        simulate(replica_cost(llama8b, device, memory_bytes=16e9), reqs)


# --- published serving benchmarks --------------------------------------------------------------
