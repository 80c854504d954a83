"""Every other kind of bad input to the web API gets a 4xx with one sentence, never a 500 (a true
bug is a 500 with one sentence too); strict JSON out."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.web import app as web
from suanli.web.app import clean, create_app
from suanli.web.schemas import MAX_TOKENS

from .api_helpers import assert_one_sentence

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
GiB = 2**30


# --- every other bad input -------------------------------------------------------------------

BAD_REQUESTS: list[tuple[str, str, Any, int, str]] = [
    # (method, path, JSON body or raw bytes, status, fragment of the sentence)
    ("POST", "/api/memory", {"model": "nope"}, 400, "unknown model"),
    ("POST", "/api/memory", {"model": ""}, 400, "give a model"),
    ("POST", "/api/memory", {"model": "x" * 300}, 422, "model"),
    ("POST", "/api/memory", {"model": "upload:0123456789abcdef"}, 404, "upload again"),
    ("POST", "/api/memory", {"batch": 0}, 422, "batch"),
    ("POST", "/api/memory", {"batch": -1}, 422, "batch"),
    ("POST", "/api/memory", {"batch": "abc"}, 422, "batch"),
    ("POST", "/api/memory", {"batch": 1.5}, 422, "batch"),
    ("POST", "/api/memory", {"batch": 10**30}, 422, "batch"),
    ("POST", "/api/memory", {"seq": 0}, 422, "seq"),
    ("POST", "/api/memory", {"dropout": 1.0}, 422, "dropout"),
    ("POST", "/api/memory", {"task": "dance"}, 422, "task"),
    ("POST", "/api/memory", {"dtype": "fp64"}, 422, "dtype"),
    ("POST", "/api/memory", {"zero": 4}, 422, "zero"),
    ("POST", "/api/memory", {"surprise": 1}, 422, "unknown field"),
    ("POST", "/api/memory", {"gpu": 5}, 422, "gpu"),
    ("POST", "/api/memory", {"cards": "h100"}, 422, "cards"),
    ("POST", "/api/memory", {"cards": ["h100"] * 17}, 422, "cards"),
    ("POST", "/api/memory", {"gpu": "zzz-9000"}, 400, "unknown GPU"),
    ("POST", "/api/memory", {"gpu": "rtx"}, 400, "ambiguous"),
    ("POST", "/api/memory", {"gpus": 3, "tp": 2}, 400, "multiple"),
    ("POST", "/api/memory", {"gpus": 3, "dp": 2}, 400, "dp x tp x pp"),
    ("POST", "/api/memory", {"global_batch": 3, "batch": 2}, 400, "global_batch"),
    ("POST", "/api/memory", {"sp": True}, 400, "tp > 1"),
    ("POST", "/api/memory", {"lora_targets": ","}, 400, "lora_targets"),
    ("POST", "/api/memory", {"task": "infer", "quant": "q1"}, 400, "weight format"),
    ("POST", "/api/memory", [1, 2], 422, "JSON object"),
    ("POST", "/api/memory", b"{bad json", 422, "not valid JSON"),
    ("POST", "/api/memory", b"", 422, "JSON body"),
    ("POST", "/api/memory", b'{"seq": NaN}', 422, "seq"),
    ("POST", "/api/perf", {"model": "llama-3.1-8b"}, 422, "missing field gpu"),
    ("POST", "/api/perf", {"gpu": "m4-max"}, 400, "pick another GPU"),
    ("POST", "/api/perf", {"gpu": "4090", "inter_node": "pigeon"}, 400, "interconnect"),
    ("POST", "/api/perf", {"gpu": "4090", "pue": 0.5}, 422, "pue"),
    ("POST", "/api/perf", {"gpu": "4090", "tokens": 0}, 422, "tokens"),
    ("POST", "/api/perf", {"gpu": "4090", "price": -1}, 422, "price"),
    ("POST", "/api/plan", {"min_memory": 1e5}, 400, "no GPU matches"),
    ("POST", "/api/plan", {"gpu": ["nope"]}, 400, "unknown GPU"),
    ("POST", "/api/plan", {"vendor": ["acme"]}, 422, "vendor"),
    ("POST", "/api/plan", {"scenario": "moon"}, 422, "scenario"),
    ("POST", "/api/plan", {"objective": "fun"}, 422, "objective"),
    ("POST", "/api/plan", {"max_gpus": 0}, 422, "max_gpus"),
    ("POST", "/api/plan", {"rps": 0}, 422, "rps"),
    ("POST", "/api/plan", {"task": "infer", "quant": "q1"}, 400, "weight format"),
    ("POST", "/api/cost", {}, 422, "missing field gpu"),
    ("POST", "/api/cost", {"gpu": "h100-pcie"}, 400, "give one with price"),
    ("POST", "/api/cost", {"gpu": "4090", "years": 0}, 422, "years"),
    ("POST", "/api/cost", b'{"gpu": "4090", "years": NaN}', 422, "years"),
    ("POST", "/api/cost", {"gpu": "4090", "utilisation": 2}, 422, "utilisation"),
    ("POST", "/api/cost", {"gpu": "4090", "pue": "mars"}, 400, "PUE"),
    ("POST", "/api/cost", {"gpu": "4090", "pue": "nan"}, 422, "pue"),
    ("POST", "/api/cost", {"gpu": "4090", "pue": 0.5}, 400, "pue"),
    ("POST", "/api/cost", {"gpu": "4090", "region": "mars"}, 400, "region"),
    ("POST", "/api/cost", {"gpu": "4090", "api": "nope", "tokens_per_year": 1e9}, 400, "API"),
    ("POST", "/api/cost", {"gpu": "4090", "api": "llama-3.1-8b"}, 400, "token volume"),
    ("POST", "/api/cost", {"gpu": "4090", "rent": 0, "price": 0}, 400, "price"),
    ("GET", "/api/nothing", None, 404, "no such endpoint"),
    ("DELETE", "/api/plan", None, 405, "not allowed"),
    ("GET", "/api/memory", None, 405, "not allowed"),
    ("GET", "/static/nothing.js", None, 404, ""),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "fragment"), BAD_REQUESTS)
def test_bad_input_gets_a_4xx_sentence(
    client: TestClient, method: str, path: str, body: Any, status: int, fragment: str
) -> None:
    if isinstance(body, bytes):
        response = client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
    elif body is None:
        response = client.request(method, path)
    else:
        response = client.request(method, path, json=body)
    message = assert_one_sentence(response, status)
    assert fragment in message
    assert "--" not in message  # CLI flags are spelled as the API's field names


def test_non_json_content_type_is_refused(client: TestClient) -> None:
    response = client.post(
        "/api/memory", content=b"model=x", headers={"content-type": "text/plain"}
    )
    assert_one_sentence(response, 422)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/plan", {"model": "llama-3.1-405b", "attention": "eager", "seq": MAX_TOKENS}),
        ("/api/memory", {"model": "llama-3.1-405b", "batch": 65536, "seq": MAX_TOKENS}),
        (
            "/api/perf",
            {
                "model": "llama-3.1-405b",
                "task": "infer",
                "batch": 65536,
                "gpu": "4090",
                "prompt": MAX_TOKENS,
                "output": MAX_TOKENS,
                "ignore_fit": True,
            },
        ),
        ("/api/cost", {"gpu": "4090", "gpus": 1_000_000, "years": 50, "price": 1e12}),
    ],
)
def test_extreme_but_valid_numbers_are_answered(
    client: TestClient, path: str, body: dict[str, Any]
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    json.loads(response.text)  # strict JSON: no NaN or Infinity


def test_overflow_is_bad_input_not_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise OverflowError("Python int too large to convert to C long")

    monkeypatch.setattr(web, "memory", boom)
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as c:
        assert "too large" in assert_one_sentence(c.post("/api/memory", json={}), 400)


def test_a_true_bug_is_a_500_with_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(web, "memory", bug)
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as c:
        response = c.post("/api/memory", json={})
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal error (ZeroDivisionError): a bug in suanli, please report it"
    }


def test_clean_makes_strict_json() -> None:
    import numpy as np

    doc = {"a": math.inf, "b": [math.nan, 1.5], "c": np.int64(3), "d": np.float64(2.5), "e": (1,)}
    assert clean(doc) == {"a": None, "b": [None, 1.5], "c": 3, "d": 2.5, "e": [1]}
    assert json.dumps(clean(doc), allow_nan=False)


def test_sentence_rewrites_cli_flags() -> None:
    assert web.sentence("give one with --price (USD)\n and --max-gpus") == (
        "give one with price (USD) and max_gpus"
    )
    assert len(web.sentence("x" * 1000)) == 400
