"""``compare``: the same work on several devices, as ``suanli compare --json``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.compare import CompareAnswer, CompareRequest, compare
from suanli.answers.request import WorkRequest
from suanli.cli.compare import compare_cmd


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(compare_cmd, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def test_cli_infer_json_equals_the_answer() -> None:
    # An engine's launches (under transformers' Python dispatch a 0.5B model is host-bound).
    args = ("qwen2.5-0.5b", "--task", "infer", "--devices", "h100,rtx4090,a100-sxm-80gb")
    args = (*args, "--dispatch", "engine")
    doc = cli_json(*args, "--prompt", "128", "--output", "16")
    answer = compare(
        CompareRequest(
            "qwen2.5-0.5b",
            WorkRequest(task="infer", dispatch="engine", explicit=("task", "dispatch")),
            devices=("h100", "rtx4090", "a100-sxm-80gb"),
            prompt=128,
            output=16,
        )
    )
    assert doc == answer.to_json()
    assert list(doc) == ["schema_version", "model", "task", "rows"]
    assert doc["schema_version"] == SCHEMA_VERSION
    assert list(doc["rows"][0]) == [
        "device",
        "name",
        "ttft_s",
        "tpot_s",
        "tokens_per_s",
        "bound",
        "request_s",
        "speedup_vs_slowest",
        "reason",
        "achievable_tflops",
        "achievable_bandwidth_gbs",
        "fits",
        "supported",
        "warnings",
        "band",
        "band_basis",
        "unvalidated",
    ]
    assert all(r["fits"] and r["supported"] and r["warnings"] == [] for r in doc["rows"])
    slow = answer.rows[answer.slowest]
    assert slow.tokens_per_s == min(r.tokens_per_s for r in answer.rows)
    assert slow.reason == "" and slow.speedup_vs_slowest == 1
    for row in answer.rows:
        assert row.request_s == pytest.approx((row.ttft_s or 0) + 16 * (row.tpot_s or 0))
        assert row.speedup_vs_slowest == pytest.approx(row.tokens_per_s / slow.tokens_per_s)
    h100 = answer.rows[0]
    # Decode of a 0.5B model at batch 1 is bandwidth-bound: the reason names both bandwidths.
    assert h100.reason == (
        f"bandwidth-bound: {h100.achievable_bandwidth_gbs:,.0f} GB/s vs "
        f"{slow.achievable_bandwidth_gbs:,.0f} GB/s achievable"
    )


def test_cli_training_json_equals_the_answer() -> None:
    args = ("qwen2.5-0.5b", "--task", "full", "--devices", "rtx4090,h100", "--seq", "512")
    doc = cli_json(*args)
    answer = compare(
        CompareRequest(
            "qwen2.5-0.5b", WorkRequest(task="full", seq=512), devices=("rtx4090", "h100")
        )
    )
    assert doc == answer.to_json()
    assert "step_time_s" in doc["rows"][0] and "ttft_s" not in doc["rows"][0]
    assert doc["rows"][1]["speedup_vs_slowest"] > 1


def test_fewer_than_two_devices() -> None:
    with pytest.raises(ValueError, match="at least two"):
        compare(CompareRequest("qwen2.5-0.5b", devices=("h100",)))


def test_json_schema() -> None:
    schema = json_schema(CompareAnswer)
    row = schema["$defs"]["CompareRow"]
    assert "ttft_s" not in row["required"] and "reason" in row["required"]
    assert "slowest" not in schema["properties"]
