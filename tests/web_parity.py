"""The page's API against the library for one inference option (one answer, many views)."""

from __future__ import annotations

from typing import Any

import pytest


def infer_tpot_by_option(
    option: str, values: tuple[str, ...], bad: str
) -> tuple[dict[str, float], Any]:
    """POST ``/api/perf`` for Llama-3.1-8B inference on an A100 with each of ``values`` for
    ``option``, asserting each TPOT is the library's; the TPOTs by value, and the response to the
    ``bad`` value."""
    from fastapi.testclient import TestClient

    from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
    from suanli.web.app import create_app

    body = {"model": "llama-3.1-8b", "task": "infer", "gpu": "a100"}
    tpot: dict[str, float] = {}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        for value in values:
            doc = client.post("/api/perf", json={**body, option: value}).json()
            work = WorkRequest(task="infer", **{option: value})
            library = perf(PerfRequest("llama-3.1-8b", work, "a100"))
            assert isinstance(library, InferPerfAnswer)
            assert doc["tpot_s"] == pytest.approx(library.tpot_s, rel=1e-9)
            tpot[value] = doc["tpot_s"]
        return tpot, client.post("/api/perf", json={**body, option: bad})
