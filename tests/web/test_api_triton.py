"""``attention: triton`` through the web API: the same answer as the CLI, the same refusal."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from .api_helpers import assert_one_sentence, cli_json, same


def test_triton_attention_answers_as_the_cli_does(client: TestClient) -> None:
    assert "triton" in client.get("/api/options").json()["attention"]
    body = {"model": "mpt-7b", "task": "pretrain", "gpu": "h100", "gpus": 8, "zero": 3}
    body |= {"seq": 32768, "batch": 1, "recompute": "full", "attention": "triton"}
    doc = client.post("/api/perf", json=body).json()
    args = ("perf", "mpt-7b", "--task", "pretrain", "--gpu", "h100", "--gpus", "8", "--zero", "3")
    args += ("--seq", "32768", "--batch", "1", "--recompute", "full", "--attention", "triton")
    same(doc, cli_json(*args))
    flash = client.post("/api/perf", json=body | {"attention": "flash"}).json()
    assert doc["step_time_s"] > 1.3 * flash["step_time_s"]


def test_triton_attention_refused_on_a_card_without_it(client: TestClient) -> None:
    body = {"model": "mpt-7b", "task": "pretrain", "gpu": "v100-sxm2-32gb", "dtype": "fp16"}
    body |= {"gpus": 8, "zero": 3, "seq": 2048, "attention": "triton"}
    sentence = assert_one_sentence(client.post("/api/perf", json=body), (400, 422))
    assert "Triton FlashAttention kernel" in sentence
