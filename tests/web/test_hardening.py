"""The web server against hostile clients: DNS rebinding (the Host allow-list), hostile
uploads, and ``suanli serve`` on a busy port."""

from __future__ import annotations

import json
import socket

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.web.app import create_app

from ..cli.test_cli import run


@pytest.fixture(scope="module")
def guarded() -> TestClient:
    return TestClient(create_app(allow_hosts=("localhost", "127.0.0.1", "[::1]", "my.box")))


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost", "[::1]:8000", "MY.BOX:80"])
def test_allowed_hosts_are_answered(guarded: TestClient, host: str) -> None:
    assert guarded.get("/api/gpus", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", ""]
)
def test_other_hosts_get_a_json_400(guarded: TestClient, host: str) -> None:
    res = guarded.get("/api/gpus", headers={"host": host})
    assert res.status_code == 400
    assert "allow-host option" in res.json()["error"]


def test_serve_sets_the_allow_list_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_ALLOW_HOSTS", "lab.internal")
    client = TestClient(create_app())
    assert client.get("/api/gpus", headers={"host": "lab.internal:8000"}).status_code == 200
    assert client.get("/api/gpus", headers={"host": "127.0.0.1"}).status_code == 200
    assert client.get("/api/gpus", headers={"host": "rebound.example"}).status_code == 400


@pytest.mark.parametrize(
    "field",
    [
        {"num_hidden_layers": 1_000_000_000},
        {"num_hidden_layers": 1e9},
        {"hidden_size": 10**15},
        {"num_local_experts": 10**9, "model_type": "mixtral"},
        {"max_position_embeddings": [1]},
        {"mlp_only_layers": 5, "model_type": "qwen3_moe"},
        {"attn_logit_softcapping": "x", "model_type": "gemma2"},
    ],
)
def test_hostile_uploads_are_4xx_and_bounded(field: dict[str, object]) -> None:
    client = TestClient(create_app())
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 256,
        **field,
    }
    res = client.post(
        "/api/config", content=json.dumps(cfg), headers={"content-type": "application/json"}
    )
    assert 400 <= res.status_code < 500, res.text
    assert "config field" in res.json()["error"]


def test_deeply_nested_upload_is_a_4xx() -> None:
    client = TestClient(create_app())
    res = client.post(
        "/api/config", content="[" * 5000 + "]" * 5000, headers={"content-type": "application/json"}
    )
    assert 400 <= res.status_code < 500


def test_serve_on_a_busy_port_is_one_sentence_exit_2() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        out = run("serve", "--port", str(port))
    assert out.returncode == 2, out.stderr
    assert "in use" in out.stderr and "--port" in out.stderr
    assert "Traceback" not in out.stderr


def test_searches_past_the_slots_wait_then_get_a_503() -> None:
    import asyncio
    import time

    from suanli.web.security import ApiError
    from suanli.web.slots import WorkerSlots

    slots = WorkerSlots(slots=1, deadline_s=0.2)

    async def both() -> list[object]:
        return await asyncio.gather(
            slots.run(time.sleep, 1.0), slots.run(time.sleep, 0.0), return_exceptions=True
        )

    first, second = asyncio.run(both())
    assert first is None
    assert isinstance(second, ApiError) and second.status == 503


MALFORMED_HTTP = [
    b"POST /api/mem HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
    b"GET /\xff HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    b"POST /api/mem HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
]


def test_malformed_http_gets_the_json_error_from_a_real_server() -> None:
    """Requests uvicorn's parser rejects before the app sees them still get {"error": ...}."""
    from .real_server import start_serve

    server, port = start_serve()
    try:
        for raw in MALFORMED_HTTP:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(raw)
                reply = b""
                while chunk := conn.recv(65536):
                    reply += chunk
            head, _, body = reply.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 400"), (raw, reply)
            assert b"content-type: application/json" in head.lower()
            assert json.loads(body)["error"].startswith("the HTTP request is malformed")
    finally:
        server.terminate()
        server.wait(timeout=10)
