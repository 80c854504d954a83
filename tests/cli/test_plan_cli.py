"""``suanli plan`` and ``suanli fit`` as a user runs them."""

from __future__ import annotations

import json

import pytest

from .test_cli import run


def test_plan_with_no_arguments_is_a_meaningful_demo() -> None:
    out = run("plan")
    assert out.returncode == 0, out.stderr
    assert "llama-3.1-8b lora" in out.stdout
    assert "fastest:" in out.stdout and "cheapest per token:" in out.stdout


def test_plan_json_has_all_rows_ranked() -> None:
    out = run("plan", "llama-3.1-8b", "--task", "lora", "--max-gpus", "2", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = doc["rows"]
    assert len(rows) >= 40  # every catalog GPU is accounted for
    fitting = [r for r in rows if r["fits"] and not r["reason"]]
    speeds = [r["tokens_per_s"] for r in rows if r["fits"]]
    assert speeds == sorted(speeds, reverse=True)
    assert fitting and all("software_stack" in r for r in rows)
    assert all(r["reason"] for r in rows if not r["fits"])


def test_plan_serving_and_scenarios() -> None:
    out = run(
        "plan",
        "llama-3.1-8b",
        "--task",
        "infer",
        "--rps",
        "50",
        "--json",
        "--gpu",
        "h100",
        "--gpu",
        "l40s",
        "--max-gpus",
        "16",
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    assert {r["gpu"] for r in rows} == {"h100-sxm-80gb", "l40s-48gb"}
    assert all(r["requests_per_s"] >= 50 for r in rows if r["fits"])
    for scenario in ("pretraining", "production-inference", "personal-finetune", "rendering-video"):
        args = ["plan", "llama-3.2-1b", "--scenario", scenario, "--json"]
        if scenario == "pretraining":
            args += ["--max-gpus", "16"]
        res = run(*args)
        assert res.returncode == 0, (scenario, res.stderr)
        assert json.loads(res.stdout)["reasoning"]


def test_fit_json_steps_and_pasteable_options() -> None:
    out = run("fit", "llama-3.1-8b", "--task", "full", "--gpu", "4090", "--batch", "8", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["fits"] and doc["steps"][-1]["fits"]
    check = run("mem", "llama-3.1-8b", "--gpu", "4090", *doc["final_options"].split(), "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["fit"]["fits"] is True


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["plan", "llama-3.1-8b", "--objective", "vibes"], "Invalid value"),
        (["plan", "llama-3.1-8b", "--vendor", "apple", "--min-memory", "1000"], "no GPU matches"),
        (["plan", "nosuchmodel"], "unknown model"),
        (["fit", "llama-3.1-8b"], "Missing option '--gpu'"),
        (["fit", "llama-3.1-8b", "--gpu", "4090", "--task", "infer"], "suanli mem"),
    ],
)
def test_plan_and_fit_bad_input(args: list[str], fragment: str) -> None:
    out = run(*args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
