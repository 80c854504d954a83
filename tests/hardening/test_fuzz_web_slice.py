"""A bounded slice of benchmarks/fuzz_web.py in CI: 600 hostile requests, none answered 5xx,
every 4xx a JSON ``{"error": ...}``."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.web.app import create_app

from ..scripts import load_script


def _harness() -> Any:
    return load_script("benchmarks/fuzz_web.py")


def test_hostile_requests_get_json_4xx_never_5xx() -> None:
    cases = list(_harness().cases())
    assert len(cases) >= 2000
    client = TestClient(create_app(allow_hub=False), raise_server_exceptions=False)
    bad = []
    for label, path, body, ctype in random.Random(18).sample(cases, 600):
        res = client.post(path, content=body, headers={"content-type": ctype})
        if res.status_code >= 500:
            bad.append(f"{res.status_code} {label}")
        elif res.status_code >= 400 and not isinstance(res.json().get("error"), str):
            bad.append(f"{res.status_code} without the JSON error: {label}")
    assert not bad, "\n".join(bad[:20])
