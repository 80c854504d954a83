"""``rope`` through the page's API: the library's answer for each value, a 4xx for a bad one."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli import PerfRequest, TrainPerfAnswer, WorkRequest, perf
from suanli.web.app import create_app


def test_rope_is_an_option_of_the_api_too() -> None:
    body = {
        "model": "llama-3.1-8b",
        "task": "pretrain",
        "gpu": "h100",
        "gpus": 8,
        "zero": 3,
        "batch": 2,
        "seq": 8192,
        "kernels": "compiled",
        "recompute": "op",
    }
    step: dict[str, float] = {}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        for value in ("real", "complex"):
            response = client.post("/api/perf", json={**body, "rope": value})
            assert response.status_code == 200, response.text
            options = {k: v for k, v in body.items() if k not in ("model", "gpu")}
            library = perf(PerfRequest("llama-3.1-8b", WorkRequest(**options, rope=value), "h100"))
            assert isinstance(library, TrainPerfAnswer)
            assert response.json()["step_time_s"] == pytest.approx(library.step_time_s, rel=1e-9)
            step[value] = response.json()["step_time_s"]
        bad = client.post("/api/perf", json={**body, "rope": "quaternion"})
    assert step["complex"] > step["real"]
    assert 400 <= bad.status_code < 500 and "rope" in bad.json()["error"]
    assert "\n" not in bad.json()["error"]
