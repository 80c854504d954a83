"""``suanli perf`` as a user runs it."""

from __future__ import annotations

import json

import pytest

from .test_cli import run


def test_perf_training_json_contract_and_costs() -> None:
    out = run(
        "perf",
        "llama-3.1-8b",
        "--task",
        "full",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--zero",
        "1",
        "--batch",
        "2",
        "--tokens",
        "1e9",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in [
        "flops_per_step",
        "step_time_s",
        "tokens_per_s",
        "mfu",
        "bound",
        "breakdown_s",
        "scaling",
        "time_to_train_s",
        "gpu_hours",
        "energy_kwh",
        "cost_usd",
    ]:
        assert key in doc
    assert set(doc["breakdown_s"]) == {"compute", "memory", "communication", "bubble"}
    assert doc["bound"] in ("compute", "memory", "communication")
    assert doc["scaling"]["gpus"] == 8
    assert doc["time_to_train_s"] == pytest.approx(1e9 / doc["tokens_per_s"])
    assert doc["gpu_hours"] == pytest.approx(doc["time_to_train_s"] / 3600 * 8)


def test_perf_inference_json_contract() -> None:
    out = run(
        "perf",
        "llama-3.1-8b",
        "--task",
        "infer",
        "--gpu",
        "4090",
        "--quant",
        "awq-4bit-g128",
        "--batch",
        "4",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in [
        "prefill_flops",
        "decode_flops_per_token",
        "ttft_s",
        "tpot_s",
        "tokens_per_s",
        "bound",
        "batch_sweep",
    ]:
        assert key in doc
    assert doc["tokens_per_s"] == pytest.approx(4 / doc["tpot_s"])


def test_perf_table() -> None:
    out = run("perf", "qwen2.5-7b", "--task", "lora", "--gpu", "l40s")
    assert out.returncode == 0, out.stderr
    assert "MFU" in out.stdout and "step time" in out.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--task", "full"], "Missing option '--gpu'"),
        (["--gpu", "h100", "--inter-node", "carrier-pigeon"], "unknown interconnect"),
        (["--gpu", "h100", "--calibration", "/nonexistent.toml"], "calibration"),
        (["--gpu", "h100", "--tokens", "0"], "Invalid value"),
        (["--gpu", "m4 max", "--task", "full"], "no"),
        # Llama 3.1 8B has 32 attention heads; Megatron splits them over TP ranks.
        (["--gpu", "h100", "--tp", "3", "--gpus", "3"], "does not divide the 32 attention heads"),
        (["--gpu", "h100", "--task", "infer", "--tp", "3"], "does not divide"),
    ],
)
def test_perf_bad_input(args: list[str], fragment: str) -> None:
    out = run("perf", "llama-3.1-8b", *args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
