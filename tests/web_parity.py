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

    # An engine's launches, so that the host's floor under transformers' Python dispatch (the
    # default framework's) does not hide what the option changes on the GPU.
    body = {"model": "llama-3.1-8b", "task": "infer", "gpu": "a100", "dispatch": "engine"}
    tpot: dict[str, float] = {}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        for value in values:
            doc = client.post("/api/perf", json={**body, option: value}).json()
            # The page's body names the option, so it is the user's even at its default value.
            options = {"dispatch": "engine", option: value}
            work = WorkRequest(task="infer", explicit=("task", *options), **options)
            library = perf(PerfRequest("llama-3.1-8b", work, "a100"))
            assert isinstance(library, InferPerfAnswer)
            assert doc["tpot_s"] == pytest.approx(library.tpot_s, rel=1e-9)
            tpot[value] = doc["tpot_s"]
        return tpot, client.post("/api/perf", json={**body, option: bad})
