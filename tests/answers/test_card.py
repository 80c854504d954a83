"""``suanli card``: the largest model per job agrees with ``suanli mem``, grows with memory and
cards, and matches what practitioners run on the cards they own."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from suanli.answers.card import LADDER, CardRequest, card
from suanli.answers.memory import MemoryRequest, memory
from suanli.answers.request import WorkRequest

from ..cli.test_cli import run


@pytest.fixture(scope="module")
def rtx4090():  # type: ignore[no-untyped-def]
    return card(CardRequest("rtx-4090-24gb"))


def _mem_work(job) -> WorkRequest:  # type: ignore[no-untyped-def]
    if job.task == "infer":
        quant = {"bf16": "bf16", "int8": "int8", "4-bit": "gguf-q4_k_m"}[job.weights]
        return WorkRequest(task="infer", context=job.tokens, quant=quant)
    return WorkRequest(task=job.task, batch=1, seq=job.tokens, recompute="full")


def test_the_largest_model_fits_and_the_next_size_does_not_by_suanli_mem(rtx4090) -> None:  # type: ignore[no-untyped-def]
    for cap in rtx4090.capabilities:
        assert cap.largest_model is not None, cap.job
        fit = memory(MemoryRequest(cap.largest_model, _mem_work(cap.job), gpu="rtx-4090-24gb")).fit
        assert fit is not None and fit.fits, cap.job
        bigger = LADDER[LADDER.index(cap.largest_model) + 1]
        fit = memory(MemoryRequest(bigger, _mem_work(cap.job), gpu="rtx-4090-24gb")).fit
        assert fit is not None and not fit.fits, cap.job
        # The interpolated limit lies between the two sizes.
        assert cap.about_params is not None and cap.largest_params is not None
        assert cap.largest_params <= cap.about_params


def test_what_24_gb_runs_matches_practice(rtx4090) -> None:  # type: ignore[no-untyped-def]
    by_job = {c.job.id: c for c in rtx4090.capabilities}
    # A 32B model in 4-bit (Q4_K_M: ~20 GB of weights, ollama.com/library/qwen2.5:32b) runs on a
    # 24 GB card at a 4k context; a 7-8B model in bf16 (~16 GB) does, a 14B one (~30 GB) not.
    assert by_job["infer-4-bit-4k"].largest_model == "qwen2.5-32b"
    assert by_job["infer-bf16-4k"].largest_model == "qwen2.5-7b"
    # QLoRA fits a bigger model than LoRA, LoRA a bigger one than full fine-tuning (AdamW mixed
    # precision keeps ~16 bytes per parameter: Rajbhandari et al. 2020, ZeRO section 3).
    sizes = [by_job[j].largest_params for j in ("train-full", "train-lora", "train-qlora")]
    assert sizes[0] < sizes[1] < sizes[2]
    assert by_job["train-full"].about_params < 24 * 2**30 / 16  # type: ignore[operator]
    # A longer context leaves less room for weights.
    assert by_job["infer-bf16-32k"].about_params < by_job["infer-bf16-4k"].about_params  # type: ignore[operator]


def test_more_memory_and_more_cards_hold_more(rtx4090) -> None:  # type: ignore[no-untyped-def]
    h100 = card(CardRequest("h100-sxm-80gb", presets=()))
    pair = card(CardRequest("rtx-4090-24gb", gpus=2, presets=()))
    rows = zip(rtx4090.capabilities, h100.capabilities, pair.capabilities, strict=True)
    for small, big, two in rows:
        assert (big.about_params or 1e15) >= (small.about_params or 0), small.job
        assert (two.about_params or 1e15) >= (small.about_params or 0), small.job


def test_popular_models_fit_as_suanli_mem_says(rtx4090) -> None:  # type: ignore[no-untyped-def]
    for fit in rtx4090.models:
        for job, fits, speed in zip(rtx4090.jobs, fit.fits, fit.tokens_per_s, strict=True):
            mem = memory(MemoryRequest(fit.model, _mem_work(job), gpu="rtx-4090-24gb")).fit
            assert mem is not None and mem.fits == fits, (fit.model, job.id)
            assert (speed is not None) == fits and (speed is None or speed > 0)
    assert not any(next(f for f in rtx4090.models if f.model == "deepseek-r1").fits)


def test_bad_input_is_one_sentence() -> None:
    with pytest.raises(ValueError, match="unknown GPU"):
        card(CardRequest("no-such-card"))
    with pytest.raises(ValueError, match="at least 1"):
        card(replace(CardRequest("4090"), gpus=0))


def test_cli_json_is_the_answer_and_bad_names_exit_2() -> None:
    out = run("card", "rtx-4090-24gb", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == card(CardRequest("rtx-4090-24gb")).to_json()
    out = run("card", "no-such-card")
    assert out.returncode == 2 and "unknown GPU" in out.stderr and "Traceback" not in out.stderr


def test_cli_without_a_name_uses_the_local_gpu() -> None:
    out = run("card", "--json", env={"SUANLI_FAKE_GPUS": "no-gpu"})
    assert out.returncode == 2 and "no local GPU" in out.stderr
    out = run("card", "--json", env={"SUANLI_FAKE_GPUS": "healthy-8xh100"})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["gpu"].startswith("h100") and doc["gpus"] == 8


def test_web_answers_the_same_document() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    with TestClient(create_app(allow_hub=False, allow_hosts=("testserver",))) as client:
        res = client.post("/api/card", json={"gpu": "rtx-4090-24gb"})
        assert res.status_code == 200, res.text
        assert res.json() == card(CardRequest("rtx-4090-24gb")).to_json()
        res = client.post("/api/card", json={"gpu": "no-such-card"})
        assert 400 <= res.status_code < 500 and "unknown GPU" in res.json()["error"]
