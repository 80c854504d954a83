"""--explain: every time term with its efficiency and source, adding up to the answer."""

from __future__ import annotations

import pytest

from suanli.answers.perf import InferPerfAnswer, PerfRequest, TrainPerfAnswer, perf
from suanli.answers.request import WorkRequest

from ..cli.test_cli import run


def test_training_terms_add_up_to_the_step() -> None:
    answer = perf(
        PerfRequest(
            "llama-3.1-8b",
            WorkRequest(task="full", gpus=16, tp=2, pp=2, zero=1, recompute="full"),
            gpu="h100",
        )
    )
    assert isinstance(answer, TrainPerfAnswer)
    assert sum(t.seconds for t in answer.terms) == pytest.approx(answer.step_time_s, rel=1e-9)
    names = [t.term for t in answer.terms]
    assert "pipeline bubble" in names and "communication: tensor_parallel" in names
    compute = answer.terms[0]
    assert "measured GEMMs" in compute.source and 0.5 < (compute.efficiency or 0) < 0.85
    assert all(t.source and t.formula for t in answer.terms)


def test_inference_terms_cover_the_decode_step() -> None:
    answer = perf(PerfRequest("llama-3.1-8b", WorkRequest(task="infer", batch=4), gpu="h100"))
    assert isinstance(answer, InferPerfAnswer)
    decode = [t for t in answer.terms if t.term.startswith("decode")]
    assert sum(t.seconds for t in decode) == pytest.approx(answer.tpot_s, rel=0.02)


def test_cli_explain_prints_each_term_and_json_carries_them() -> None:
    args = ("perf", "qwen2.5-0.5b", "--task", "full", "--gpu", "a100", "--gpus", "2")
    out = run(*args, "--explain")
    assert out.returncode == 0, out.stderr
    assert (
        "how each term is computed" in out.stdout and "communication: data_parallel" in out.stdout
    )
    doc = run(*args, "--json")
    import json

    terms = json.loads(doc.stdout)["terms"]
    assert {"term", "seconds", "efficiency", "source", "formula"} <= set(terms[0])
