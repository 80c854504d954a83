"""``suanli capacity`` through click's runner on the command itself (no registration needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from suanli.cli.capacity import capacity_cmd, sparkline


def invoke(*args: str) -> Result:
    return CliRunner().invoke(capacity_cmd, list(args), terminal_width=160)


def invoke_json(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


SIM = ("llama-3.1-8b", "--gpu", "h100", "--rate", "10", "--requests", "400")


def test_simulate_json_has_the_issue_field_names() -> None:
    doc = invoke_json(*SIM, "--output-dist", "lognormal", "--price", "2")
    for key in (
        "tokens_per_s",
        "requests_per_s",
        "ttft_p50_s",
        "ttft_p95_s",
        "ttft_p99_s",
        "tpot_p50_s",
        "tpot_p95_s",
        "tpot_p99_s",
        "e2e_p50_s",
        "e2e_p95_s",
        "e2e_p99_s",
        "gpu_utilization",
        "kv_usage_mean",
        "kv_usage_max",
        "queue_series",
        "usd_per_hour",
        "usd_per_million_tokens",
    ):
        assert key in doc, key
    assert doc["gpu"] == "h100-sxm-80gb"
    assert doc["completed"] == doc["requests"] == 400
    assert doc["requests_per_s"] == pytest.approx(10, rel=0.2)
    assert 0 < doc["ttft_p50_s"] <= doc["ttft_p95_s"] <= doc["ttft_p99_s"]
    assert 0 < doc["tpot_p50_s"] <= doc["tpot_p95_s"]
    assert 0 <= doc["kv_usage_mean"] <= doc["kv_usage_max"] <= 1
    assert 0 < doc["gpu_utilization"] <= 1
    assert doc["usd_per_hour"] == 2
    expected = 2 / 3600 / doc["tokens_per_s"] * 1e6
    assert doc["usd_per_million_tokens"] == pytest.approx(expected)
    series = doc["queue_series"]
    assert len(series["t_s"]) == len(series["waiting"]) > 10
    assert doc["meets_slo"] is None


def test_simulate_table_by_default() -> None:
    result = invoke(*SIM, "--slo-tpot", "0.05")
    assert result.exit_code == 0, result.output
    for text in ("TTFT p50 / p95 / p99", "TPOT", "KV cache", "queue over time", "SLO (p95)"):
        assert text in result.output


def test_static_policy_and_replicas_from_the_command_line() -> None:
    args = ("llama-3.1-8b", "--gpu", "h100", "--rate", "3", "--requests", "300")
    args += ("--output-dist", "lognormal", "--spread", "1")
    static = invoke_json(*args, "--policy", "static", "--max-batch", "32")
    cont = invoke_json(*args, "--policy", "continuous", "--max-batch", "32")
    assert cont["ttft_p95_s"] < static["ttft_p95_s"]
    two = invoke_json(*args, "--replicas", "2", "--dispatch", "least-loaded", "--tp", "2")
    assert two["gpus"] == 4 and two["replicas"] == 2 and two["tp"] == 2


def test_seeded_runs_repeat() -> None:
    args = (*SIM, "--arrivals", "bursty", "--prompt-dist", "uniform", "--seed", "5")
    assert invoke_json(*args) == invoke_json(*args)


def test_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,20\n0.2,300,50\n1.0,80,5\n")
    doc = invoke_json("llama-3.1-8b", "--gpu", "h100", "--arrivals", "trace", "--trace", str(trace))
    assert doc["requests"] == doc["completed"] == 3
    assert doc["rate_requests_per_s"] is None
    assert doc["prompt_tokens_mean"] == pytest.approx(160)


def test_plan_ranks_catalog_gpus_by_cost() -> None:
    doc = invoke_json(
        "llama-3.1-8b",
        "--rate",
        "20",
        "--slo-ttft",
        "1",
        "--slo-tpot",
        "0.05",
        "--requests",
        "300",
    )
    rows = doc["rows"]
    fitting = [r for r in rows if r["fits"]]
    assert len(fitting) > 10
    priced = [r["usd_per_hour"] for r in fitting if r["usd_per_hour"] is not None]
    assert priced == sorted(priced)
    for r in fitting:
        assert r["ttft_p95_s"] <= 1 and r["tpot_p95_s"] <= 0.05
        assert r["gpus"] == r["tp"] * r["replicas"]
    assert rows[0]["usd_per_hour"] is not None
    unfit = [r for r in rows if not r["fits"]]
    assert all(r["reason"] for r in unfit)


def test_plan_table() -> None:
    result = invoke("llama-3.1-8b", "--rate", "5", "--slo-tpot", "0.05", "--requests", "200")
    assert result.exit_code == 0, result.output
    assert "ranked by cost" in result.output and "cheapest:" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("llama-3.1-8b", "--gpu", "h100"), "--rate"),
        (("llama-3.1-8b", "--rate", "5"), "--slo-ttft"),
        (
            ("llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--requests", "5", "--duration", "2"),
            "not both",
        ),
        (("llama-3.1-8b", "--gpu", "h100", "--arrivals", "trace"), "--trace"),
        (("llama-3.1-8b", "--gpu", "h100", "--rate", "1", "--trace", "x.csv"), "--arrivals trace"),
        (
            (
                "llama-3.1-8b",
                "--gpu",
                "h100",
                "--rate",
                "1",
                "--prompt",
                "200000",
                "--requests",
                "2",
            ),
            "longer than the model's context",
        ),
        (("llama-3.1-8b", "--gpu", "t4", "--rate", "1", "--requests", "2"), "KV cache"),
    ],
)
def test_bad_input_is_a_value_error(args: tuple[str, ...], message: str) -> None:
    result = invoke(*args)
    assert isinstance(result.exception, ValueError), result.output
    assert message in str(result.exception)


def test_usage_errors_exit_2() -> None:
    assert invoke("llama-3.1-8b", "--gpu", "h100", "--rate", "1", "--policy", "x").exit_code == 2
    assert invoke("llama-3.1-8b", "--gpu", "h100", "--rate", "-1").exit_code == 2
    assert invoke("llama-3.1-8b", "--gpu", "h100", "--rate", "1", "--tp", "3").exit_code == 2


def test_offline_rate_inf_is_strict_json() -> None:
    result = invoke("llama-3.1-8b", "--gpu", "h100", "--rate", "inf", "--requests", "500", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output, parse_constant=lambda name: pytest.fail(name))
    assert doc["all_at_once"] is True and doc["rate_requests_per_s"] is None
    assert doc["queue_wait_mean_s"] > 0
    one_token = invoke_json("llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--output", "1")
    assert one_token["tpot_p95_s"] is None and one_token["ttft_p95_s"] > 0


def test_sparkline() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "▁▁"
    line = sparkline([float(i) for i in range(200)], width=20)
    assert len(line) == 20 and line[0] == "▁" and line[-1] == "█"
