"""A precision or weight format only on cards that have it (issue 41): fp8 on Ada, Hopper,
Blackwell and CDNA 3; bf16 on Ampere and CDNA 2 and later; FlashAttention-2 on Ampere and later.
Whatever the fit ladder, perf/compare's validity, the serving and training plans or ``card``
name or recommend, the card has it (catalog/data/quant.toml ``needs``; docs/speed.md,
"Precisions a card has")."""

from __future__ import annotations

import re
from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.answers.card import INFER_FORMATS, CardRequest, jobs_for
from suanli.answers.model_source import load_model
from suanli.answers.perf import PerfRequest, perf
from suanli.answers.request import WorkRequest
from suanli.answers.validity import card_precisions, check_job, training_dtype, training_lack
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.formats import (
    NVIDIA_COMPUTE_CAPABILITY,
    card_features,
    format_problem,
    kv_problem,
    refused_format,
    refused_kv,
    runnable_format,
    runnable_formats,
    runnable_kv,
    weight_formats,
)
from suanli.estimate.fitting import FORMAT_LADDER, fit_inference
from suanli.estimate.workload import KV_DTYPES, InferWork, TrainWork
from suanli.models.spec import ModelSpec

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GPUS: tuple[GPU, ...] = tuple(load_catalog())
FORMATS = tuple(weight_formats())
#: The issue's statement, by architecture name as the catalog spells it.
FP8_ARCHITECTURES = ("Ada Lovelace", "Hopper", "Blackwell", "CDNA 3", "Gaudi 2", "Gaudi 3")

cards = st.sampled_from(GPUS)
formats = st.sampled_from(FORMATS)


@lru_cache(maxsize=2)
def _spec(name: str) -> ModelSpec:
    return load_model(name).spec


def _runs(gpu: GPU, fmt: str) -> bool:
    return format_problem(gpu, fmt) is None


def _named_quant(sentence: str) -> str | None:
    found = re.search(r"--quant (\S+)", sentence)
    return found.group(1) if found else None


def test_the_catalog_has_cards_on_both_sides_of_each_need() -> None:
    # Otherwise the properties below would hold vacuously.
    for feature in ("bf16", "fp8", "sm75", "flash-attn-2"):
        has = [g.id for g in GPUS if feature in card_features(g)]
        assert has and len(has) < len(GPUS), feature


@FAST
@given(gpu=cards)
def test_a_card_has_fp8_bf16_and_flash_attention_only_from_their_generation(gpu: GPU) -> None:
    have = card_features(gpu)
    arch = str(gpu.get("architecture") or "")
    if "fp8" in have:
        assert arch in FP8_ARCHITECTURES, (gpu.id, arch)
    if gpu.vendor == "nvidia" and gpu.form_factor != "cpu":
        capability = NVIDIA_COMPUTE_CAPABILITY[arch]
        assert ("bf16" not in have) or capability >= 8.0, gpu.id
        assert ("flash-attn-2" in have) == (capability >= 8.0), gpu.id
    if gpu.vendor == "amd" and arch.startswith("CDNA"):
        assert ("bf16" in have) == (arch != "CDNA 1"), gpu.id


@FAST
@given(gpu=cards, fmt=formats)
def test_a_format_runs_exactly_where_the_card_has_what_it_needs(gpu: GPU, fmt: str) -> None:
    needs = weight_formats()[fmt].needs
    problem = format_problem(gpu, fmt)
    assert (problem is None) == set(needs).issubset(card_features(gpu))
    # What stands in for it runs, and a refusal names that format.
    assert _runs(gpu, runnable_format(gpu, fmt))
    if problem is not None:
        assert _named_quant(problem) == runnable_format(gpu, fmt)
        assert gpu.id in problem


@FAST
@given(gpu=cards, kv=st.sampled_from(KV_DTYPES))
def test_a_kv_dtype_is_kept_only_where_the_card_has_it(gpu: GPU, kv: str) -> None:
    assert kv_problem(gpu, runnable_kv(gpu, kv)) is None
    if kv == "fp8":
        assert (kv_problem(gpu, kv) is None) == ("fp8" in card_features(gpu))


@FAST
@given(gpu=cards, fmt=formats, kv=st.sampled_from(("bf16", "fp16", "fp8")))
def test_validity_refuses_what_the_card_cannot_run_and_offers_what_it_can(
    gpu: GPU, fmt: str, kv: str
) -> None:
    spec = _spec("qwen2.5-0.5b")
    work = InferWork(batch=1, context=1024, weight_format=fmt, kv_dtype=kv)
    valid = check_job("qwen2.5-0.5b", spec, work, gpu)
    lacks = refused_format(gpu, fmt) or refused_kv(gpu, kv)
    assert valid.supported == (lacks is None)
    # fp8 weights or an fp8 KV cache on a card without fp8 are never "supported".
    if "fp8" in (fmt, kv) and "fp8" not in card_features(gpu):
        assert not valid.supported
    for problem in valid.problems:
        offered = _named_quant(problem)
        assert offered is None or _runs(gpu, offered), problem


@FAST
@given(
    gpu=cards,
    context=st.sampled_from((1024, 4096, 32768)),
    model=st.sampled_from(("qwen2.5-0.5b", "llama-2-7b")),
)
def test_the_best_format_that_fits_is_one_the_card_runs(gpu: GPU, context: int, model: str) -> None:
    work = InferWork(batch=1, context=context)
    best = fit_inference(_spec(model), work, gpu.id, gpu.memory_bytes, gpu=gpu).best_format
    assert best is None or _runs(gpu, best), (gpu.id, best)
    ladder = runnable_formats(gpu, FORMAT_LADDER)
    assert all(_runs(gpu, f) for f in ladder)
    assert best is None or best in ladder


@FAST
@given(gpu=cards)
def test_card_labels_each_job_with_what_the_card_uses(gpu: GPU) -> None:
    named = dict(INFER_FORMATS)
    for job in jobs_for(CardRequest(gpu=gpu.id), gpu):
        if job.task == "infer":
            assert _runs(gpu, named.get(job.weights, job.weights)), (gpu.id, job.id)
        elif job.task != "qlora":
            assert job.weights == training_dtype(gpu, "bf16")
            assert (
                gpu.form_factor == "cpu"
                or job.weights in card_precisions(gpu)
                or (job.weights == "fp32")
            ), (gpu.id, job.weights)


@FAST
@given(gpu=cards, attention=st.sampled_from(("eager", "sdpa", "flash")))
def test_a_training_plan_never_ranks_flash_attention_where_it_is_missing(
    gpu: GPU, attention: str
) -> None:
    work = TrainWork(batch=1, seq=2048, dtype=training_dtype(gpu, "bf16"), attention=attention)
    lack = training_lack(gpu, work)
    if attention == "flash" and "flash-attn-2" not in card_features(gpu):
        assert gpu.form_factor == "cpu" or lack is not None
    if attention != "flash":
        assert lack is None


def test_the_serving_search_recommends_only_formats_the_card_runs() -> None:
    # Every card, two models (fp8 and AWQ win on small models where allowed): about 2 s.
    from suanli.plan.serve_search import SERVE_FORMATS, search_serve

    checked = 0
    for model, context in (("qwen2.5-0.5b", 2048), ("llama-2-7b", 4096)):
        for gpu in GPUS:
            if gpu.form_factor == "cpu":
                continue
            best, _evaluated, _reason = search_serve(
                _spec(model), gpu, context=context, output=256, max_gpus=1, formats=SERVE_FORMATS
            )
            if best is None:
                continue
            checked += 1
            assert _runs(gpu, best.weight_format), (model, gpu.id, best.weight_format)
            assert kv_problem(gpu, best.kv_dtype) is None, (model, gpu.id, best.kv_dtype)
    assert checked > len(GPUS) // 2


def test_mem_on_a_t4_names_no_fp8() -> None:
    t4 = find_gpu("t4", load_catalog())
    work = InferWork(batch=1, context=4096)
    best = fit_inference(_spec("llama-2-7b"), work, t4.id, t4.memory_bytes, gpu=t4).best_format
    assert best == "int8"  # fp8 was named before (issue 41); int8 is the next rung


def test_perf_refuses_fp8_on_a_t4_and_marks_the_hypothetical_unsupported() -> None:
    request = PerfRequest("llama-2-7b", WorkRequest(task="infer", quant="fp8"), gpu="t4")
    try:
        perf(request)
    except ValueError as refusal:
        assert "fp8" in str(refusal) and "--quant int8" in str(refusal)
    else:
        raise AssertionError("fp8 on a T4 was answered")
    from dataclasses import replace

    answer = perf(replace(request, ignore_fit=True))
    assert answer.supported is False


def test_card_labels_t4_and_v100_training_fp16() -> None:
    for name in ("t4", "v100-sxm2-32gb"):
        gpu = find_gpu(name, load_catalog())
        jobs = {j.id: j.weights for j in jobs_for(CardRequest(gpu=name), gpu)}
        assert jobs["train-full"] == jobs["train-lora"] == "fp16"
        assert "infer-fp16-4k" in jobs and "infer-bf16-4k" not in jobs
    h100 = find_gpu("h100", load_catalog())
    assert {j.weights for j in jobs_for(CardRequest(gpu="h100"), h100)} >= {"bf16"}


def test_capacity_simulates_and_plans_fp8_only_on_cards_with_fp8() -> None:
    from suanli.answers.capacity import CapacityRequest, capacity

    try:
        capacity(CapacityRequest(model="qwen2.5-0.5b", gpu="t4", quant="fp8", rate=1.0))
    except ValueError as refusal:
        assert "--quant int8" in str(refusal)
    else:
        raise AssertionError("fp8 on a T4 was simulated")
    plan = capacity(
        CapacityRequest(model="qwen2.5-0.5b", quant="fp8", rate=1.0, max_gpus=1, slo_tpot=1.0)
    )
    by_id = {g.id: g for g in GPUS}
    assert plan.rows
    assert all("fp8" in card_features(by_id[row.gpu]) for row in plan.rows)
