"""Speculative decoding (``--spec-tokens``, ``--spec-acceptance``, ``--spec-method``): a drafter
proposes k tokens, one pass of the model checks them (docs/speed.md, "Speculative decoding")."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.speculative import accepted_tokens
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model


@pytest.mark.parametrize(("k", "a"), [(1, 0.5), (4, 0.7), (8, 0.9), (3, 0.2)])
def test_the_tokens_a_pass_yields_match_a_simulated_drafter(k: int, a: float) -> None:
    """Each draft accepted with probability a until the first rejection, plus the model's own
    token: simulated, the mean agrees with (1 - a^(k+1)) / (1 - a)."""
    rng = random.Random(7)
    total = 0
    n = 40_000
    for _ in range(n):
        accepted = 0
        while accepted < k and rng.random() < a:
            accepted += 1
        total += accepted + 1
    assert total / n == pytest.approx(accepted_tokens(k, a), rel=0.02)


def test_the_ends_of_the_acceptance_range() -> None:
    assert accepted_tokens(4, 0.0) == 1
    assert accepted_tokens(4, 1.0) == 5
    assert accepted_tokens(0, 0.9) == 1


def _tpot(**options: Any) -> float:
    work = WorkRequest(task="infer", framework="vllm", batch=8, **options)
    answer = perf(PerfRequest("llama-3.1-8b", work, gpu="h100"))
    assert isinstance(answer, InferPerfAnswer)
    return answer.tpot_s


def test_no_more_than_k_plus_one_tokens_a_pass_and_misses_only_cost() -> None:
    """Physical floors: a pass yields at most k + 1 tokens, so TPOT is at least the verify pass
    over k + 1; a drafter that is never right only adds the wider pass."""
    plain = _tpot()
    always = _tpot(spec_tokens=4, spec_acceptance=1.0)
    never = _tpot(spec_tokens=4, spec_acceptance=0.0)
    assert always >= plain / 5
    assert never >= plain
    assert always < _tpot(spec_tokens=4, spec_acceptance=0.7) < plain


def test_a_drafter_on_the_gpu_costs_what_prompt_lookup_does_not() -> None:
    ngram = _tpot(spec_tokens=4, spec_acceptance=0.7)
    eagle = _tpot(spec_tokens=4, spec_acceptance=0.7, spec_method="eagle")
    assert eagle > ngram


@pytest.mark.parametrize("method", ["ngram", "eagle"])
def test_vectorized_planner_equals_the_scalar_path(method: str) -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    batch, tp = [1, 8, 64], [1, 2, 4]
    result = vector.infer_speed(
        spec, "bf16", 2, batch, tp, 1024, 256, device, "fused", "fused", "engine",
        options=InferWork(
            engine="vllm", spec_tokens=4, spec_acceptance=0.7, spec_method=method
        ),
    )  # fmt: skip
    for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
        work = InferWork(
            batch=bval, tp=tval, context=1024 + 256, kernels="fused", engine="vllm",
            spec_tokens=4, spec_acceptance=0.7, spec_method=method,
        )  # fmt: skip
        scalar = inference_perf(spec, work, device, 1024, 256)
        assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
    assert np.all(np.isfinite(result["tpot_s"]))


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--spec-tokens", "4"], "--spec-acceptance"),
        (["--spec-tokens", "4", "--spec-acceptance", "1.5"], "--spec-acceptance"),
        (["--spec-tokens", "99", "--spec-acceptance", "0.5"], "--spec-tokens"),
        (["--spec-tokens", "2", "--spec-acceptance", "0.5", "--spec-method", "x"], "--spec-method"),
    ],
)
def test_bad_speculation_is_one_sentence_and_exit_2(args: list[str], names: str) -> None:
    result = CliRunner().invoke(
        main, ["perf", "llama-3.1-8b", "--task", "infer", "--gpu", "h100", *args]
    )
    assert result.exit_code == 2, result.output
    assert names in result.output and "Traceback" not in result.output


def test_the_page_answers_as_the_library_and_refuses_what_the_cli_refuses() -> None:
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    body = {"model": "llama-3.1-8b", "task": "infer", "gpu": "h100", "framework": "vllm"}
    spec = {"spec_tokens": 4, "spec_acceptance": 0.7, "spec_method": "eagle"}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        doc = client.post("/api/perf", json={**body, **spec}).json()
        work = WorkRequest(
            task="infer", framework="vllm", explicit=("task", "framework", *spec), **spec
        )
        library = perf(PerfRequest("llama-3.1-8b", work, gpu="h100"))
        assert isinstance(library, InferPerfAnswer)
        assert doc["tpot_s"] == pytest.approx(library.tpot_s, rel=1e-9)
        missing = client.post("/api/perf", json={**body, "spec_tokens": 4})
        assert missing.status_code in (400, 422)
