"""A prefix cache (``--prefix-hit``: vLLM's automatic prefix caching, SGLang's RadixAttention):
the prefill computes only the prompt's uncached tokens (docs/speed.md, "A prompt the cache
already holds")."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.flops import forward_flops_per_token
from suanli.estimate.inference import cached_tokens, inference_perf
from suanli.estimate.workload import InferWork
from suanli.models.params import count_params
from suanli.models.resolve import load_model

PROMPT = 8192


def _answer(hit: float, **options: Any) -> InferPerfAnswer:
    work = WorkRequest(task="infer", framework="vllm", prefix_hit=hit, **options)
    answer = perf(PerfRequest("llama-3.1-8b", work, gpu="h100", prompt=PROMPT))
    assert isinstance(answer, InferPerfAnswer)
    return answer


def test_the_prefill_does_the_uncached_part_of_the_work() -> None:
    """First principles: the new tokens run every linear layer; token i attends to i earlier
    ones, so (p^2 - c^2) / p^2 of the causal attention is left."""
    none, most = _answer(0.0), _answer(0.75)
    c = cached_tokens(PROMPT, 0.75)
    assert c == 6144
    per_token = forward_flops_per_token(load_model("llama-3.1-8b").spec, PROMPT, causal=True)
    core = per_token["attention_core"]
    linear = sum(per_token.values()) - core
    expected = (linear * (PROMPT - c) + core * PROMPT * (1 - (c / PROMPT) ** 2)) / (
        (linear + core) * PROMPT
    )
    assert most.prefill_flops / none.prefill_flops == pytest.approx(expected, rel=1e-9)


def test_a_cached_prefix_shortens_ttft_and_leaves_decode_alone() -> None:
    hits = (0.0, 0.25, 0.5, 0.9, 0.99)
    answers = [_answer(h) for h in hits]
    ttft = [a.ttft_s for a in answers]
    assert all(a > b for a, b in itertools.pairwise(ttft))
    assert {a.tpot_s for a in answers} == {answers[0].tpot_s}


def test_the_weights_are_read_whatever_is_cached() -> None:
    """A floor: even one new token reads every weight once."""
    gpu = find_gpu("h100", bundled_gpus())
    weights = count_params(load_model("llama-3.1-8b").spec).total * 2  # bf16 bytes
    assert _answer(0.9999).ttft_s >= weights / gpu.memory_bandwidth_bytes_per_s


def test_the_last_token_is_always_computed() -> None:
    assert cached_tokens(100, 0.999) == 99
    assert cached_tokens(1, 0.5) == 0
    assert cached_tokens(1000, 0.0) == 0


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    batch, tp = [1, 8, 64], [1, 2, 4]
    result = vector.infer_speed(
        spec, "bf16", 2, batch, tp, PROMPT, 256, device, "fused", "fused", "engine",
        options=InferWork(engine="vllm", prefix_hit=0.6),
    )  # fmt: skip
    for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
        work = InferWork(
            batch=bval, tp=tval, context=PROMPT + 256, kernels="fused", engine="vllm",
            prefix_hit=0.6,
        )  # fmt: skip
        scalar = inference_perf(spec, work, device, PROMPT, 256)
        assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)
        assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
    assert np.all(np.isfinite(result["ttft_s"]))


@pytest.mark.parametrize("value", ["1", "-0.1", "x"])
def test_a_bad_share_is_one_sentence_and_exit_2(value: str) -> None:
    result = CliRunner().invoke(
        main, ["perf", "llama-3.1-8b", "--task", "infer", "--prefix-hit", value]
    )
    assert result.exit_code == 2
    assert "--prefix-hit" in result.output and "Traceback" not in result.output


def test_the_page_answers_as_the_library_and_refuses_a_bad_share() -> None:
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    body = {"model": "llama-3.1-8b", "task": "infer", "gpu": "h100", "framework": "vllm"}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        doc = client.post("/api/perf", json={**body, "prefix_hit": 0.5}).json()
        library = perf(
            PerfRequest(
                "llama-3.1-8b",
                WorkRequest(
                    task="infer", framework="vllm", prefix_hit=0.5,
                    explicit=("task", "framework", "prefix_hit"),
                ),
                gpu="h100",
            )
        )  # fmt: skip
        assert isinstance(library, InferPerfAnswer)
        assert doc["ttft_s"] == pytest.approx(library.ttft_s, rel=1e-9)
        bad = client.post("/api/perf", json={**body, "prefix_hit": 1.5})
        assert bad.status_code in (400, 422)
