"""The serving simulator's prefill-first policy (vLLM v0: a prefill-only iteration pauses the
decodes) against a step-by-step reference, and what it trades against the continuous policy."""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import replace

import click
import numpy as np
import pytest
from click.testing import CliRunner

from suanli.answers.capacity import CapacityRequest, capacity
from suanli.answers.capacity_result import CapacitySimulation
from suanli.cli.capacity import capacity_cmd
from suanli.cli.main import cli
from suanli.estimate.serving import (
    POLICIES,
    EngineConfig,
    Lengths,
    ReplicaCost,
    Requests,
    make_requests,
    simulate,
)

from .serving_helpers import Seq, decode_one_token, summary


def _reference_prefill_first(
    cost: ReplicaCost, reqs: Requests, cfg: EngineConfig
) -> dict[str, list[float]]:
    """vLLM v0's default scheduler stepped naively, per iteration and per sequence: an
    iteration prefills the prompts that can be admitted and nothing else; when none can be, it
    decodes every running sequence, preempting the newest when blocks run short."""
    bs, free = cfg.block_size, cost.kv_blocks
    water = int(0.01 * cost.kv_blocks)
    reserve = cfg.kv_policy == "reserve"
    arrival = reqs.arrival_s.tolist()
    prompt, remaining = reqs.prompt.tolist(), reqs.output.tolist()
    n = len(arrival)
    out: dict[str, list[float]] = {k: [math.nan] * n for k in ("admit", "first", "finish")}
    held: dict[int, int] = {}
    waiting: deque[int] = deque()
    decoding: list[Seq] = []
    nxt, clock, preemptions, prefill_only = 0, arrival[0], 0, 0
    while nxt < n or waiting or decoding:
        if not (waiting or decoding):
            clock = max(clock, arrival[nxt])
        while nxt < n and arrival[nxt] <= clock:
            waiting.append(nxt)
            nxt += 1
        admitted: list[int] = []
        slots, used = cfg.max_batch - len(decoding), 0
        while waiting and slots > 0:
            rid = waiting[0]
            p = prompt[rid]
            if used and used + p > cfg.token_budget:
                break
            blocks = -(-(p + remaining[rid]) // bs) if reserve else -(-p // bs)
            if blocks > free - (water if decoding and not reserve else 0):
                break
            waiting.popleft()
            free -= blocks
            held[rid] = blocks
            if math.isnan(out["admit"][rid]):
                out["admit"][rid] = clock
            admitted.append(rid)
            used += p
            slots -= 1
        if admitted:  # a prefill-only iteration: the running sequences wait
            keys = 0.0
            for rid in admitted:
                keys += prompt[rid] * (prompt[rid] + 1) / 2
            clock += cost.iteration_s(used, len(admitted), keys, float(used), cfg.step_overhead_s)
            prefill_only += bool(decoding)
            for rid in admitted:
                if math.isnan(out["first"][rid]):
                    out["first"][rid] = clock
                if remaining[rid] <= 1:
                    out["finish"][rid] = clock
                    free += held[rid]
                else:
                    decoding.append(Seq(rid, prompt[rid], 1, remaining[rid]))
            continue
        assert decoding, "stuck"
        need = 0
        if not reserve:
            need = sum(1 for d in decoding if d.ctx % bs == 0)
            while need > free and decoding:
                d = decoding.pop()
                if d.ctx % bs == 0:
                    need -= 1
                free += -(-d.ctx // bs)
                prompt[d.rid] += d.produced
                remaining[d.rid] -= d.produced
                waiting.appendleft(d.rid)
                preemptions += 1
            if not decoding:
                continue
        free -= need
        b = len(decoding)
        keys = float(sum(d.ctx + 1 for d in decoding))
        clock += cost.iteration_s(b, b, keys, keys, cfg.step_overhead_s)
        decoding, freed = decode_one_token(decoding, clock, out["finish"], held, reserve, bs)
        free += freed
    assert free == cost.kv_blocks, "blocks leaked"
    out["preemptions"] = [float(preemptions)]
    out["paused"] = [float(prefill_only)]
    return out


@pytest.mark.parametrize(
    ("kv_policy", "blocks"), [("preempt", 100_000), ("preempt", 120), ("reserve", 120)]
)
def test_prefill_first_matches_a_step_by_step_reference(
    h100_cost: ReplicaCost, kv_policy: str, blocks: int
) -> None:
    """Prefill-only iterations leave the decode-step count (the aggregate bookkeeping's clock)
    alone: the simulator's times equal stepping every iteration and every sequence."""
    cost = replace(h100_cost, kv_blocks=blocks)
    cfg = EngineConfig(
        policy="prefill-first", kv_policy=kv_policy, max_batch=24, max_batched_tokens=700
    )
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
    ref = _reference_prefill_first(cost, reqs, cfg)
    got = simulate(cost, reqs, cfg)
    assert ref["paused"][0] > 50  # prefills did pause running decodes
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
    assert got.completed == len(reqs)


def test_prefill_first_alone_equals_continuous(h100_cost: ReplicaCost) -> None:
    """One request alone (and requests that never overlap): nothing runs while a prompt is
    prefilled, so prefill-first and continuous batching give the same times exactly."""
    one = make_requests(rate=1, prompt=Lengths(mean=1024), output=Lengths(mean=256), requests=1)
    apart = Requests(
        arrival_s=np.array([0.0, 10.0, 20.0]),
        prompt=np.array([100, 2000, 7]),
        output=np.array([1, 300, 9]),
    )
    for reqs in (one, apart):
        cont = simulate(h100_cost, reqs, EngineConfig(policy="continuous"))
        first = simulate(h100_cost, reqs, EngineConfig(policy="prefill-first"))
        assert first.ttft_s == cont.ttft_s
        assert first.tpot_s == cont.tpot_s
        assert first.e2e_s == cont.e2e_s
        assert first.iterations == cont.iterations
        assert first.completed == len(reqs)


def test_prefill_first_trades_tpot_for_ttft_under_load(h100_cost: ReplicaCost) -> None:
    """25 req/s on one H100 (busy all the time, not saturated): a prompt's prefill runs alone
    instead of alongside ~100 decodes, so it finishes sooner (lower TTFT), and every running
    sequence waits for it (higher TPOT: the prefill and the decode step no longer share a
    weight read)."""
    reqs = make_requests(
        rate=25,
        prompt=Lengths(mean=512, dist="uniform"),
        output=Lengths(mean=256, dist="lognormal", spread=0.8),
        requests=3000,
        seed=3,
    )
    cont = simulate(h100_cost, reqs, EngineConfig(policy="continuous"))
    first = simulate(h100_cost, reqs, EngineConfig(policy="prefill-first"))
    print(f"\n25 req/s: continuous    {summary(cont)}\n          prefill-first {summary(first)}")
    # Measured: TTFT about 0.8x, TPOT about 1.3x that of continuous batching.
    assert first.ttft_s["mean"] < 0.9 * cont.ttft_s["mean"]
    assert first.ttft_s["p95"] < 0.9 * cont.ttft_s["p95"]
    assert first.tpot_s["mean"] > 1.15 * cont.tpot_s["mean"]
    assert first.tpot_s["p95"] > 1.15 * cont.tpot_s["p95"]
    assert first.completed == cont.completed == len(reqs)


def test_prefill_first_throughput_is_near_continuous(h100_cost: ReplicaCost) -> None:
    """Below saturation both serve the offered rate; saturated (all requests at once),
    prefill-first loses the decode tokens that ride along in mixed iterations, a few percent
    to ~10% of the tokens per second, never more than 15%."""
    prompt, output = (
        Lengths(mean=512, dist="uniform"),
        Lengths(mean=256, dist="lognormal", spread=0.8),
    )
    online = make_requests(rate=20, prompt=prompt, output=output, requests=3000, seed=1)
    offline = make_requests(rate=math.inf, prompt=prompt, output=output, requests=3000, seed=1)
    for reqs, batch, low in ((online, 256, 0.98), (offline, 256, 0.85), (offline, 64, 0.85)):
        cont = simulate(h100_cost, reqs, EngineConfig(policy="continuous", max_batch=batch))
        first = simulate(h100_cost, reqs, EngineConfig(policy="prefill-first", max_batch=batch))
        ratio = first.tokens_per_s / cont.tokens_per_s
        print(f"\nprefill-first / continuous, batch {batch}: {ratio:.3f} of the tokens/s")
        assert low <= ratio <= 1.02
        assert first.requests_per_s / cont.requests_per_s >= low
        assert first.completed == len(reqs)
    # Least-loaded dispatch over replicas (the lower bound on a replica's next completion).
    two = simulate(
        h100_cost, online, EngineConfig(policy="prefill-first"), replicas=2, dispatch="least-loaded"
    )
    assert two.completed == len(online)


def test_prefill_first_policy_name_is_accepted_and_checked() -> None:
    """The answers layer and the command line take ``prefill-first``; a bad name is one
    sentence and exit status 2."""
    assert "prefill-first" in POLICIES
    sim = capacity(
        CapacityRequest("llama-3.1-8b", gpu="h100", rate=5, requests=200, policy="prefill-first")
    )
    assert isinstance(sim, CapacitySimulation)
    assert sim.workload.policy == "prefill-first" and sim.completed == 200
    with pytest.raises(ValueError, match=r"--policy 'fifo' is not one of .*prefill-first"):
        capacity(CapacityRequest("llama-3.1-8b", gpu="h100", rate=5, policy="fifo"))
    runner = CliRunner()
    base = ["capacity", "llama-3.1-8b", "--gpu", "h100", "--rate", "5"]
    ok = runner.invoke(cli, [*base, "--policy", "prefill-first", "--requests", "200", "--json"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.stdout)
    assert doc["policy"] == "prefill-first"
    bad = runner.invoke(cli, [*base, "--policy", "fifo"])
    assert bad.exit_code == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "--policy" in lines[0] and "prefill-first" in lines[0]
    option = next(p for p in capacity_cmd.params if p.name == "policy")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == POLICIES  # the command line offers every policy


# --- replicas and capacity ------------------------------------------------------------------
