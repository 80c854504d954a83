"""The ``suanli serve`` JSON API: every endpoint, the same numbers as the CLI and the library,
and a one-sentence 4xx answer for every kind of bad input (never a 500)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.catalog import find_gpu, load_catalog
from suanli.estimate.fitting import fit_training
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import TrainWork
from suanli.models.presets import presets
from suanli.models.resolve import LoadedModel, load_model
from suanli.web import app as web
from suanli.web.app import BODY_LIMIT, clean, create_app
from suanli.web.models import UPLOAD_SLOTS
from suanli.web.schemas import MAX_TOKENS

from ..cli.test_cli import run

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
GiB = 2**30


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as c:
        yield c


def cli_json(*args: str) -> Any:
    out = run(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_one_sentence(response: Any, status: int | tuple[int, ...]) -> str:
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, (response.status_code, response.text)
    assert 400 <= response.status_code < 500
    body = response.json()
    assert set(body) == {"error"}, body
    message = body["error"]
    assert isinstance(message, str) and message.strip()
    assert "\n" not in message and "Traceback" not in message and len(message) <= 400
    return message


def same(api: Any, cli: Any) -> None:
    """The API document holds the CLI's, key for key (the API may add keys)."""
    if isinstance(cli, dict):
        for key, value in cli.items():
            assert key in api, key
            same(api[key], value)
    elif isinstance(cli, list):
        assert len(api) == len(cli)
        for a, c in zip(api, cli, strict=True):
            same(a, c)
    elif isinstance(cli, float):
        assert api == pytest.approx(cli, rel=1e-12, abs=0)
    else:
        assert api == cli


# --- the page and the docs -------------------------------------------------------------------


def test_page_and_assets_are_local(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "suanli" in page.text
    assert "/static/vendor/chart.umd.min.js" in page.text
    for path in ("/static/app.js", "/static/style.css", "/static/vendor/chart.umd.min.js"):
        asset = client.get(path)
        assert asset.status_code == 200, path
        # Works offline: nothing is loaded from another host.
        assert "cdn." not in asset.text.lower() or path.endswith("chart.umd.min.js")
    assert "https://" not in page.text and "http://" not in page.text
    assert 'fetch("http' not in client.get("/static/app.js").text
    assert client.get("/static/vendor/chart.js-LICENSE.md").status_code == 200


def test_openapi_docs_are_served_offline(client: TestClient) -> None:
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "/static/vendor/swagger-ui-bundle.js" in docs.text
    assert "cdn.jsdelivr" not in docs.text
    assert client.get("/static/vendor/swagger-ui-bundle.js").status_code == 200
    schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    for path in (
        "/api/presets",
        "/api/gpus",
        "/api/options",
        "/api/memory",
        "/api/perf",
        "/api/plan",
        "/api/cost",
        "/api/config",
        "/api/live",
    ):
        assert path in paths


# --- catalogs --------------------------------------------------------------------------------


def test_presets_equal_the_cli(client: TestClient) -> None:
    doc = client.get("/api/presets").json()
    same(doc, cli_json("models"))
    assert list(doc) == ["schema_version", "models"]
    assert {r["name"] for r in doc["models"] if r["api_priced"]} >= {"llama-3.1-8b"}


def test_gpus_equal_the_cli(client: TestClient) -> None:
    assert client.get("/api/gpus").json() == clean(cli_json("gpus"))


def test_options_list_the_choices(client: TestClient) -> None:
    options = client.get("/api/options").json()
    assert "infer" in options["tasks"] and "adamw" in options["optimizers"]
    assert any(q["id"] == "awq-4bit-g128" for q in options["quant"])
    assert options["limits"]["body_bytes"] == BODY_LIMIT
    assert options["hub"] is False


# --- memory, speed, plan, cost: the CLI's numbers ----------------------------------------------


def test_memory_equals_cli_and_library(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "task": "lora", "gpu": "4090", "cards": ["l40s", "4090"]}
    doc = client.post("/api/memory", json=body).json()
    same(
        doc,
        cli_json("mem", "llama-3.1-8b", "--task", "lora", "--gpu", "4090", "--card", "l40s"),
    )
    # One fit per card, the first the --gpu one, duplicates dropped.
    assert [f["gpu"] for f in doc["fits"]] == ["rtx-4090-24gb", "l40s-48gb"]
    spec = load_model("llama-3.1-8b").spec
    work = TrainWork(task="lora")
    assert doc["total_bytes"] == round(training_memory(spec, work).total_bytes)
    l40s = find_gpu("l40s", load_catalog())
    fit = fit_training(spec, work, l40s.id, l40s.memory_bytes)
    assert doc["fits"][1]["fits"] is fit.fits and doc["fits"][1]["max_batch"] == fit.max_batch
    assert sum(doc["breakdown"].values()) == pytest.approx(doc["total_bytes"], abs=8)


def test_memory_inference_and_layout_equal_cli(client: TestClient) -> None:
    body = {
        "model": "qwen2.5-7b",
        "task": "infer",
        "quant": "awq-4bit-g128",
        "batch": 16,
        "context": 8192,
        "gpus": 2,
        "gpu": "h100",
    }
    doc = client.post("/api/memory", json=body).json()
    same(
        doc,
        cli_json(
            "mem",
            "qwen2.5-7b",
            "--task",
            "infer",
            "--quant",
            "awq-4bit-g128",
            "--batch",
            "16",
            "--context",
            "8192",
            "--gpus",
            "2",
            "--gpu",
            "h100",
        ),
    )
    train = {"model": "llama-3.1-8b", "task": "full", "gpus": 8, "zero": 3, "batch": 2}
    doc = client.post("/api/memory", json=train).json()
    same(
        doc,
        cli_json(
            "mem", "llama-3.1-8b", "--task", "full", "--gpus", "8", "--zero", "3", "--batch", "2"
        ),
    )
    assert "fit" not in doc and doc["fits"] == []


def test_perf_training_equals_cli(client: TestClient) -> None:
    body = {
        "model": "llama-3.2-3b",
        "task": "full",
        "gpu": "l40s",
        "gpus": 2,
        "zero": 3,
        "tokens": 1e9,
    }
    doc = client.post("/api/perf", json=body).json()
    same(
        doc,
        cli_json(
            "perf",
            "llama-3.2-3b",
            "--task",
            "full",
            "--gpu",
            "l40s",
            "--gpus",
            "2",
            "--zero",
            "3",
            "--tokens",
            "1e9",
        ),
    )
    assert doc["fits"] is True and doc["memory_bytes"] <= doc["gpu_memory_bytes"]
    roof = doc["roofline"]
    assert roof["ridge_flops_per_byte"] == pytest.approx(
        roof["achievable_flops"] / roof["achievable_bandwidth_bytes_per_s"]
    )
    (point,) = roof["points"]
    assert point["flops_per_s"] <= roof["achievable_flops"] * (1 + 1e-9)
    assert point["flops_per_s"] == pytest.approx(point["flops"] / doc["step_time_s"])
    assert set(doc["explain"]) >= {"step_time_s", "tokens_per_s", "mfu"}


def test_perf_inference_equals_cli(client: TestClient) -> None:
    body = {
        "model": "llama-3.1-8b",
        "task": "infer",
        "gpu": "h100",
        "quant": "fp8",
        "batch": 32,
        "prompt": 512,
        "output": 128,
    }
    doc = client.post("/api/perf", json=body).json()
    same(
        doc,
        cli_json(
            "perf",
            "llama-3.1-8b",
            "--task",
            "infer",
            "--gpu",
            "h100",
            "--quant",
            "fp8",
            "--batch",
            "32",
            "--prompt",
            "512",
            "--output",
            "128",
        ),
    )
    assert [s["batch"] for s in doc["batch_sweep"]][:3] == [1, 2, 4]
    prefill, decode = doc["roofline"]["points"]
    assert prefill["seconds"] == doc["ttft_s"] and decode["seconds"] == doc["tpot_s"]
    # Decode at batch 32 reads far more bytes per FLOP than prefill: left of it on the roofline.
    assert decode["flops_per_byte"] < prefill["flops_per_byte"]


def test_plan_training_equals_cli(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "task": "lora", "max_gpus": 2}
    doc = client.post("/api/plan", json=body).json()
    same(doc, cli_json("plan", "llama-3.1-8b", "--task", "lora", "--max-gpus", "2"))
    assert len(doc["rows"]) >= 40 and "capped" not in doc


def test_plan_inference_equals_cli(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "task": "infer", "quant": "bf16", "max_gpus": 1, "rps": 5}
    doc = client.post("/api/plan", json=body).json()
    same(
        doc,
        cli_json(
            "plan",
            "llama-3.1-8b",
            "--task",
            "infer",
            "--quant",
            "bf16",
            "--max-gpus",
            "1",
            "--rps",
            "5",
        ),
    )


def test_plan_scenario_and_filters(client: TestClient) -> None:
    doc = client.post("/api/plan", json={"scenario": "rendering-video"}).json()
    same(doc, cli_json("plan", "--scenario", "rendering-video"))
    doc = client.post("/api/plan", json={"vendor": ["apple"], "max_gpus": 1}).json()
    assert {r["gpu"] for r in doc["rows"]} <= {g.id for g in load_catalog() if g.vendor == "apple"}


def test_plan_search_is_capped_and_cached(client: TestClient) -> None:
    body = {"model": "gpt2", "task": "infer", "quant": "bf16", "max_gpus": 1024}
    first = client.post("/api/plan", json=body).json()
    assert first["max_gpus"] == web.PLAN_MAX_GPUS_INFER and "--max-gpus 1024" in first["capped"]
    cache = client.app.state.plan_cache  # type: ignore[attr-defined]
    key = web.PlanRequest(**body).model_dump_json()
    assert json.loads(cache.get(key)) == first
    assert client.post("/api/plan", json=body).json() == first
    pretrain = client.post("/api/plan", json={"model": "gpt2", "scenario": "pretraining"}).json()
    assert pretrain["max_gpus"] == web.PLAN_MAX_GPUS_TRAIN and "capped" in pretrain


def test_cost_equals_cli_with_curve_and_break_even(client: TestClient) -> None:
    body = {"gpu": "rtx4090", "gpus": 2, "years": 3, "utilisation": 0.6}
    doc = client.post("/api/cost", json=body).json()
    same(
        doc,
        cli_json("cost", "rtx4090", "--gpus", "2", "--years", "3", "--utilisation", "0.6"),
    )
    by_year = {p["year"]: p for p in doc["curve"]}
    for row in doc["per_year"]:
        point = by_year[float(row["year"])]
        for key in ("buy_cumulative_usd", "rent_cumulative_usd", "spot_cumulative_usd"):
            assert point[key] == pytest.approx(row[key], rel=1e-9)
    t = doc["break_even_years"]
    assert 0 < t < 3
    totals = doc["totals"]
    buy = totals["capex_usd"] + t * (totals["electricity_usd"] + totals["facility_usd"]) / 3
    assert buy == pytest.approx(t * totals["rent_usd"] / 3, rel=1e-9)


def test_cost_api_column(client: TestClient) -> None:
    body = {"gpu": "h100", "price": 25000, "tokens_per_year": 1e10, "api": "llama-3.1-8b"}
    doc = client.post("/api/cost", json=body).json()
    expected = cli_json(
        "cost", "h100", "--price", "25000", "--tokens-per-year", "1e10", "--api", "llama-3.1-8b"
    )
    same(doc, expected)
    assert doc["curve"][-1]["api_cumulative_usd"] == pytest.approx(doc["totals"]["api_usd"])


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
    (b'{"model_type": "llama"}', 400, "hidden_size"),
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


# --- live ------------------------------------------------------------------------------------


def test_live_without_gpus_shows_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_FAKE_GPUS", "no-gpu")
    with TestClient(create_app(allow_hub=False)) as c:
        doc = c.get("/api/live").json()
    assert doc["gpus"] is False and "no GPU" in doc["note"]
    assert len(doc["samples"]) == 1 and doc["samples"][0]["vendor"] == "cpu"


def test_live_with_gpus_equals_top(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_FAKE_GPUS", "healthy-8xh100")
    with TestClient(create_app(allow_hub=False)) as c:
        doc = c.get("/api/live").json()
    assert doc["gpus"] is True and doc["note"] == ""
    top = json.loads(run("top", "--json", env={"SUANLI_FAKE_GPUS": "healthy-8xh100"}).stdout)
    assert doc["samples"] == top["devices"]


def test_a_refused_job_keeps_its_command_to_run(client: TestClient) -> None:
    body = {"model": "llama-3.1-70b", "task": "full", "gpu": "4090"}
    message = assert_one_sentence(client.post("/api/perf", json=body), 400)
    # Field names for the API, but the quoted command stays one a terminal accepts.
    assert "ignore_fit gives the speed anyway" in message
    assert "'suanli fit llama-3.1-70b --task full" in message and "--gpu rtx-4090-24gb'" in message


def test_frameworks_endpoint_and_framework_field(client: TestClient) -> None:
    doc = client.get("/api/frameworks").json()
    assert any(f["id"] == "torchtune" for f in doc["frameworks"])
    assert any(f["id"] == "vllm" for f in client.get("/api/options").json()["frameworks"])
    body = {"model": "llama-3.2-3b", "task": "full", "batch": 2, "seq": 4096}
    plain = client.post("/api/memory", json=body).json()
    tune = client.post("/api/memory", json={**body, "framework": "torchtune"}).json()
    # Fields the client sends are its own: recompute none, though torchtune checkpoints.
    sent = client.post(
        "/api/memory", json={**body, "framework": "torchtune", "recompute": "none"}
    ).json()
    assert tune["total_bytes"] < sent["total_bytes"] and tune["total_bytes"] < plain["total_bytes"]
    # Same answer as the CLI.
    assert tune == cli_json(
        "mem",
        "llama-3.2-3b",
        "--task",
        "full",
        "--batch",
        "2",
        "--seq",
        "4096",
        "--framework",
        "torchtune",
    )
    bad = client.post("/api/memory", json={**body, "framework": "caffe"})
    assert bad.status_code == 400 and "frameworks" in bad.json()["error"]
    wrong = client.post("/api/memory", json={**body, "framework": "vllm"})
    assert wrong.status_code == 400


def test_page_messages_come_from_the_catalog() -> None:
    import html
    import re
    from pathlib import Path

    from suanli.web.page_messages import PAGE_MESSAGES

    page = (Path(__file__).parents[2] / "src/suanli/web/static/index.html").read_text("utf-8")
    labels = {html.unescape(m) for m in re.findall(r'data-i18n="([^"]+)"', page)}
    assert labels == set(PAGE_MESSAGES)  # every label of the page is in the catalog
    with TestClient(create_app(allow_hub=False, allow_hosts=("testserver",))) as c:
        zh = c.get("/api/messages?lang=zh").json()
        assert zh["lang"] == "zh" and zh["messages"]["Plan"] == "规划"
        assert all(v != k for k, v in zh["messages"].items())  # every label has Chinese
        by_header = c.get("/api/messages", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).json()
        assert by_header["lang"] == "zh"
        en = c.get("/api/messages", headers={"Accept-Language": "en-US,en;q=0.9"}).json()
        assert en["lang"] == "en" and en["messages"]["Plan"] == "Plan"
        bad = c.get("/api/messages?lang=fr")
        assert bad.status_code == 400 and "zh or en" in bad.json()["error"]


def test_fp8_scaling_is_an_option_of_the_api_too(client: TestClient) -> None:
    body = {
        "model": "llama-3.1-8b",
        "task": "pretrain",
        "dtype": "fp8",
        "gpu": "h100",
        "gpus": 8,
        "zero": 3,
        "recompute": "full",
    }
    delayed = client.post("/api/perf", json=body)
    dynamic = client.post("/api/perf", json={**body, "fp8_scaling": "dynamic"})
    assert delayed.status_code == dynamic.status_code == 200, dynamic.text
    assert dynamic.json()["step_time_s"] > delayed.json()["step_time_s"]
    assert dynamic.json() == cli_json(
        "perf",
        "llama-3.1-8b",
        "--task",
        "pretrain",
        "--dtype",
        "fp8",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--recompute",
        "full",
        "--fp8-scaling",
        "dynamic",
    )
    message = assert_one_sentence(
        client.post("/api/perf", json={**body, "fp8_scaling": "bogus"}), (400, 422)
    )
    assert "fp8_scaling" in message
