"""The web API's model uploads and model names: uploads stay in memory in bounded slots, bad
ones and path-like or hub names get one sentence, never a read of the disk or the network."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.models.presets import presets
from suanli.models.resolve import LoadedModel, load_model
from suanli.web import app as web
from suanli.web.app import BODY_LIMIT, create_app
from suanli.web.models import UPLOAD_SLOTS

from .api_helpers import assert_one_sentence, cli_json

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
GiB = 2**30


# --- uploads -------------------------------------------------------------------------------


def test_upload_multipart_then_use_it(client: TestClient) -> None:
    raw = (FIXTURES / "qwen2.5-0.5b.json").read_bytes()
    response = client.post("/api/config", files={"file": ("config.json", raw, "application/json")})
    assert response.status_code == 200, response.text
    doc = response.json()
    model = doc["model"]
    assert model.startswith("upload:") and doc["filename"] == "config.json"
    expected = cli_json("model", str(FIXTURES / "qwen2.5-0.5b.json"))
    for key in ("architecture", "params_total", "params_active", "layers", "hidden_size"):
        assert doc[key] == expected[key]
    # The same bytes as a JSON body give the same id; the id works in every endpoint.
    again = client.post(
        "/api/config", content=raw, headers={"content-type": "application/json"}
    ).json()
    assert again["model"] == model
    mem = client.post("/api/memory", json={"model": model, "gpu": "t4"}).json()
    cli = cli_json("mem", str(FIXTURES / "qwen2.5-0.5b.json"), "--gpu", "t4")
    assert mem["total_bytes"] == cli["total_bytes"] and mem["fit"] == cli["fit"]
    on_t4 = {"model": model, "gpu": "t4", "dtype": "fp16"}  # a T4 has no bf16 units
    assert client.post("/api/perf", json=on_t4).status_code == 200
    plan = client.post("/api/plan", json={"model": model, "max_gpus": 1})
    assert plan.status_code == 200 and plan.json()["model"] == model


def test_upload_is_never_written_to_disk(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    raw = (FIXTURES / "gpt2.json").read_bytes()
    response = client.post("/api/config", files={"file": ("../../evil.json", raw, "text/plain")})
    assert response.status_code == 200
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent.parent / "evil.json").exists()
    assert response.json()["filename"] == "../../evil.json"  # echoed, never used as a path


def test_upload_slots_are_bounded() -> None:
    models = web.Models(allow_hub=False)
    base = presets()["gpt2"].config()
    first, _ = models.add(json.dumps({**base, "n_layer": 1}).encode(), "a.json")
    for i in range(UPLOAD_SLOTS):
        models.add(json.dumps({**base, "n_layer": 2 + i}).encode(), "b.json")
    with pytest.raises(web.ApiError) as err:
        models.resolve(first)
    assert err.value.status == 404


BAD_UPLOADS = [
    (b"", 400, "empty"),
    (b"   ", 400, "empty"),
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2, 3]", 400, "JSON object"),
    (b'"config"', 400, "JSON object"),
    (b"\xff\xfe\x00{", 400, "UTF-8"),
    (b'{"model_type": "llama", "hidden_size": NaN}', 400, "not valid JSON"),
    (b"[" * 100_000, 400, "nested too deeply"),
    (b'{"a": 1' + b"1" * 5000 + b"}", 400, "too many digits"),
    (b"{}", 400, "model_type"),
    (b'{"model_type": "RefinedWeb"}', 400, "hidden_size"),
    (b'{"model_type": "weird", "hidden_size": 8}', 400, "missing num_attention_heads"),
    (b'{"model_type": "mamba", "hidden_size": 8}', 400, "does not model yet"),
]


@pytest.mark.parametrize(("raw", "status", "fragment"), BAD_UPLOADS)
def test_bad_uploads_get_one_sentence(
    client: TestClient, raw: bytes, status: int, fragment: str
) -> None:
    for response in (
        client.post("/api/config", files={"file": ("config.json", raw, "application/json")}),
        client.post("/api/config", content=raw, headers={"content-type": "application/json"}),
    ):
        assert fragment in assert_one_sentence(response, status)


def _config(**changes: Any) -> bytes:
    return json.dumps({**presets()["llama-3.2-1b"].config(), **changes}).encode()


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (_config(num_hidden_layers=0), "must be positive"),
        (_config(hidden_size=-8), "must be positive"),
        (_config(hidden_size=1.5), "integer"),
        (_config(num_key_value_heads=3), "multiple"),
        (_config(hidden_size=2**40, head_dim=64), "hidden_size"),
        (_config(num_hidden_layers=10**7), "num_hidden_layers"),
        (_config(vocab_size=10**12), "vocab_size"),
    ],
)
def test_configs_that_cannot_be_sized_are_refused(
    client: TestClient, raw: bytes, fragment: str
) -> None:
    response = client.post("/api/config", content=raw, headers={"content-type": "application/json"})
    assert fragment in assert_one_sentence(response, 400)


def test_upload_transport_errors(client: TestClient) -> None:
    raw = (FIXTURES / "gpt2.json").read_bytes()
    wrong_field = client.post("/api/config", files={"other": ("c.json", raw, "application/json")})
    assert "'file'" in assert_one_sentence(wrong_field, 400)
    not_a_file = client.post("/api/config", data={"file": "{}"})
    assert_one_sentence(not_a_file, (400, 415))
    text = client.post("/api/config", content=raw, headers={"content-type": "text/plain"})
    assert "multipart" in assert_one_sentence(text, 415)


def test_upload_size_limit(client: TestClient) -> None:
    big = b" " * BODY_LIMIT + b"{}"
    multipart = client.post("/api/config", files={"file": ("c.json", big, "application/json")})
    assert "limit" in assert_one_sentence(multipart, 413)
    declared = client.post("/api/config", content=big, headers={"content-type": "application/json"})
    assert "limit" in assert_one_sentence(declared, 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
        for _ in range(12):
            yield b" " * 100_000

    streamed = client.post(
        "/api/config", content=chunks(), headers={"content-type": "application/json"}
    )
    assert "limit" in assert_one_sentence(streamed, 413)
    # Every endpoint has the limit, not only the upload.
    huge = client.post(
        "/api/memory",
        content=b"{" + b" " * BODY_LIMIT + b"}",
        headers={"content-type": "application/json"},
    )
    assert_one_sentence(huge, 413)
    bad_length = client.post(
        "/api/memory",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": "x"},
    )
    assert "Content-Length" in assert_one_sentence(bad_length, 400)
    # Just under the limit is fine.
    ok = _config()
    padded = ok[:-1] + b" " * (BODY_LIMIT - len(ok) - 1) + b"}"
    assert len(padded) < BODY_LIMIT
    response = client.post(
        "/api/config", content=padded, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200


# --- models: presets, hub ids, uploads; never paths ---------------------------------------------

PATHS = [
    "../../etc/passwd",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "./config.json",
    "config.json",
    "..",
    "a/../../b",
    "models/llama/config.json",
    "C:\\models\\config.json",
    "C:/models",
    "\\\\server\\share",
    "file:///etc/passwd",
    "org/name/../../x",
    "name\x00.json",
]


@pytest.mark.parametrize("name", PATHS)
@pytest.mark.parametrize(
    ("path", "extra"),
    [
        ("/api/memory", {}),
        ("/api/perf", {"gpu": "4090"}),
        ("/api/plan", {"max_gpus": 1}),
    ],
)
def test_path_like_models_are_refused(
    client: TestClient, name: str, path: str, extra: dict[str, Any]
) -> None:
    message = assert_one_sentence(client.post(path, json={"model": name, **extra}), 400)
    assert "path" in message


def test_an_existing_relative_folder_is_not_read() -> None:
    calls: list[str] = []

    def fake_hub(repo_id: str) -> LoadedModel:
        calls.append(repo_id)
        return load_model("gpt2")

    with TestClient(create_app(hub_loader=fake_hub)) as c:
        # tests/web exists relative to the repository root, yet it is only ever a hub id here.
        response = c.post("/api/memory", json={"model": "tests/web"})
    assert response.status_code == 200 and calls == ["tests/web"]


def test_hub_ids_use_the_hub_reader_not_the_network() -> None:
    calls: list[str] = []

    def fake_hub(repo_id: str) -> LoadedModel:
        calls.append(repo_id)
        return load_model(str(FIXTURES / "qwen2.5-0.5b.json"))

    with TestClient(create_app(hub_loader=fake_hub)) as c:
        doc = c.post("/api/memory", json={"model": "someorg/tiny-model"}).json()
        # A preset's Hugging Face id is the preset: no hub call.
        preset = c.post("/api/memory", json={"model": "meta-llama/Llama-3.1-8B"})
    assert calls == ["someorg/tiny-model"] and doc["model"] == "someorg/tiny-model"
    assert preset.status_code == 200
    with TestClient(create_app(allow_hub=False)) as c:
        refused = c.post("/api/memory", json={"model": "someorg/tiny-model"})
    assert "hub" in assert_one_sentence(refused, 400)


def test_hub_failures_are_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SUANLI_CACHE", "/nonexistent-suanli-cache")
    with TestClient(create_app()) as c:  # the real hub reader, offline: no network is touched
        response = c.post("/api/memory", json={"model": "someorg/not-cached"})
    assert "hub" in assert_one_sentence(response, 400)
