"""Layout search: the vectorized search agrees with a brute-force scalar search; serving."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model
from suanli.plan.search import SearchSpace, brute_force_train, rank, search_train
from suanli.plan.serve_search import search_serve

pytest.importorskip("numpy")
GPUS = bundled_gpus()

CASES = [
    ("llama-3.2-1b", TrainWork(task="full", seq=2048), "h100", SearchSpace(max_gpus=4)),
    ("qwen3-30b-a3b", TrainWork(task="lora", seq=1024), "l40s", SearchSpace(max_gpus=2)),
    (
        "llama-3.1-8b",
        TrainWork(task="full", seq=4096),
        "a100-sxm-80gb",
        SearchSpace(max_gpus=8, global_batch=32),
    ),
]


@pytest.mark.parametrize(("model", "work", "gpu", "space"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("objective", ["time", "cost-per-token"])
def test_vectorized_search_matches_brute_force(
    model: str, work: TrainWork, gpu: str, space: SearchSpace, objective: str
) -> None:
    spec = load_model(model).spec
    g = find_gpu(gpu, GPUS)
    fast = search_train(spec, work, g, space, objective).best
    slow = brute_force_train(spec, work, g, space, objective)
    assert fast is not None and slow is not None
    assert (
        fast.gpus,
        fast.tp,
        fast.pp,
        fast.dp,
        fast.zero,
        fast.recompute,
        fast.batch,
        fast.grad_accum,
    ) == (
        slow.gpus,
        slow.tp,
        slow.pp,
        slow.dp,
        slow.zero,
        slow.recompute,
        slow.batch,
        slow.grad_accum,
    )
    assert fast.tokens_per_s == pytest.approx(slow.tokens_per_s, rel=1e-9)


def test_best_layout_really_fits_and_is_as_fast_as_reported() -> None:
    spec = load_model("llama-3.1-70b").spec
    g = find_gpu("h100", GPUS)
    best = search_train(
        spec, TrainWork(task="full", seq=4096), g, SearchSpace(max_gpus=64, global_batch=256)
    ).best
    assert best is not None
    par = Parallelism(dp=best.dp, tp=best.tp, pp=best.pp, zero=best.zero, sp=best.sp)
    work = TrainWork(
        task="full",
        seq=4096,
        recompute=best.recompute,
        batch=best.batch,
        grad_accum=best.grad_accum,
        parallel=par,
    )
    assert training_memory(spec, work).total_bytes <= g.memory_bytes
    assert training_perf(spec, work, device_for(g, "bf16")).tokens_per_s == pytest.approx(
        best.tokens_per_s, rel=1e-9
    )
    assert best.dp * best.batch * best.grad_accum == 256  # the global batch is kept


def test_405b_over_16384_gpus_finds_a_layout() -> None:
    spec = load_model("llama-3.1-405b").spec
    result = search_train(
        spec,
        TrainWork(task="pretrain", seq=8192),
        find_gpu("h100", GPUS),
        SearchSpace(max_gpus=16384, global_batch=2048),
    )
    assert result.best is not None and result.best.gpus >= 128
    assert result.evaluated > 1000


def test_rank_explains_losers() -> None:
    spec = load_model("llama-3.1-8b").spec
    gpus = [find_gpu(n, GPUS) for n in ("h100", "a100-sxm-80gb", "t4")]
    results = [search_train(spec, TrainWork(task="lora"), g, SearchSpace(max_gpus=1)) for g in gpus]
    rows = rank(results, "time", tokens=1e9)
    assert rows[0]["gpu"] == "h100-sxm-80gb" and rows[0]["reason"] == ""
    assert "slower" in rows[1]["reason"]
    assert rows[-1]["fits"] is False and "does not fit" in rows[-1]["reason"]
    assert rows[0]["time_s"] == pytest.approx(1e9 / rows[0]["tokens_per_s"])


def test_serving_meets_the_request_rate_and_latency_target() -> None:
    spec = load_model("llama-3.1-8b").spec
    best, evaluated, reason = search_serve(
        spec, find_gpu("h100", GPUS), context=2048, output=256, max_gpus=16, rps=50, max_tpot_s=0.03
    )
    assert best is not None and reason == "" and evaluated > 0
    assert best.requests_per_s >= 50
    assert best.tpot_s <= 0.03
    none, _, why = search_serve(
        spec, find_gpu("t4", GPUS), context=8192, output=256, max_gpus=1, rps=500
    )
    assert none is None and "500" in why


def test_memory_kept_between_cards_is_the_memory_of_each_question() -> None:
    """The search keeps each layout set's memory for the next card: a search of another
    sequence length, or after another model, gets the bytes of its own question."""
    spec = load_model("llama-3.2-1b").spec
    other = load_model("qwen2.5-0.5b").spec
    space = SearchSpace(max_gpus=2)
    h100, l40s = find_gpu("h100", GPUS), find_gpu("l40s", GPUS)
    for model in (spec, other, spec):
        for seq in (1024, 4096, 1024):
            work = TrainWork(task="full", seq=seq)
            for gpu in (h100, l40s):
                best = search_train(model, work, gpu, space).best
                assert best is not None
                layout = replace(
                    work,
                    batch=best.batch,
                    recompute=best.recompute,
                    grad_accum=best.grad_accum,
                    parallel=Parallelism(
                        tp=best.tp, pp=best.pp, dp=best.dp, zero=best.zero, sp=best.sp
                    ),
                )
                assert best.memory_bytes == pytest.approx(
                    training_memory(model, layout).total_bytes, rel=1e-9
                )
