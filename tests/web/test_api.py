"""The ``suanli serve`` JSON API: every endpoint, the same numbers as the CLI and the library,
and a one-sentence 4xx answer for every kind of bad input (never a 500)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

from fastapi.testclient import TestClient

from suanli.catalog import find_gpu, load_catalog
from suanli.estimate.fitting import fit_training
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import TrainWork
from suanli.models.resolve import load_model
from suanli.web import app as web
from suanli.web.app import BODY_LIMIT, clean, create_app

from ..cli.test_cli import run
from .api_helpers import assert_one_sentence, cli_json, same

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"
GiB = 2**30


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
    # --recompute auto: without recomputation the LoRA needs more than the 4090's 24 GiB
    # (selective is not enough either), so the answer is the one with full recomputation.
    assert training_memory(spec, TrainWork(task="lora")).total_bytes > 24 * 2**30
    work = TrainWork(task="lora", recompute="full")
    assert doc["total_bytes"] == round(training_memory(spec, work).total_bytes)
    assert any("recomputation: full" in line for line in doc["assumptions"])
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
        assert bad.status_code == 400 and "use one of en, zh" in bad.json()["error"]


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
