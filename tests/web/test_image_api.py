"""``POST /api/image``: the same answer as ``suanli perf --task generate-image --json``, bundled
pipelines only, and a one-sentence 4xx for bad input."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.web.app import create_app

from ..cli.test_cli import run


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def test_same_document_as_the_cli(client: TestClient) -> None:
    body = {"model": "sdxl", "gpu": "rtx-4090-24gb", "steps": 30, "width": 1024, "height": 768}
    web = client.post("/api/image", json=body)
    assert web.status_code == 200
    cli = run(
        "perf",
        "sdxl",
        "--task",
        "generate-image",
        "--gpu",
        "rtx-4090-24gb",
        "--steps",
        "30",
        "--size",
        "1024x768",
        "--json",
    )
    assert cli.returncode == 0, cli.stderr
    assert web.json() == json.loads(cli.stdout)


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"model": "/etc", "gpu": "4090"}, 400, "not a text-to-image pipeline"),
        ({"model": "flux.1-dev", "gpu": "4090"}, 400, "cpu_offload"),
        ({"model": "sdxl", "gpu": "4090", "width": 1000}, 400, "multiples of 16"),
        ({"model": "sdxl", "gpu": "4090", "batch": 1000}, 422, ""),
        ({"model": "sdxl", "gpu": "4090", "cpu_offload": "disk"}, 422, ""),
        ({"model": "sdxl", "gpu": "local-cpu"}, 400, ""),
    ],
)
def test_bad_input_is_4xx(
    client: TestClient, body: dict[str, object], status: int, needle: str
) -> None:
    res = client.post("/api/image", json=body)
    assert res.status_code == status, res.text
    assert needle in res.json()["error"]
