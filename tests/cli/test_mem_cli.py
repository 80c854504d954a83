"""``suanli mem`` as a user runs it."""

from __future__ import annotations

import json

import pytest

from .test_cli import run


def test_mem_json_contract() -> None:
    out = run("mem", "llama-3.1-8b", "--task", "full", "--batch", "2", "--seq", "1024", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in ["weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"]:
        assert key in doc["breakdown"]
    assert doc["total_bytes"] == pytest.approx(sum(doc["breakdown"].values()), abs=8)
    assert doc["assumptions"]
    # Mixed-precision AdamW: 2 (bf16) + 4 (master) + 8 (moments) + 2 (grads) = 16 bytes/param.
    states = sum(
        doc["breakdown"][k] for k in ("weights", "master_weights", "optimizer", "gradients")
    )
    assert states == pytest.approx(16 * 8_030_261_248, rel=0.001)


def test_mem_with_gpu_reports_fit_fields() -> None:
    out = run("mem", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--json")
    assert out.returncode == 0, out.stderr
    fit = json.loads(out.stdout)["fit"]
    assert fit["gpu"] == "rtx-4090-24gb" and fit["fits"] is True
    assert fit["max_batch"] >= 1 and fit["max_seq"] >= 2048 and fit["headroom_bytes"] > 0


def test_mem_inference_best_format_and_kv() -> None:
    out = run(
        "mem",
        "llama-3.1-70b",
        "--task",
        "infer",
        "--gpu",
        "h100",
        "--batch",
        "4",
        "--context",
        "8192",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["fit"]["fits"] is False  # 141 GB of bf16 weights on an 80 GB card
    assert doc["fit"]["best_format"] not in (None, "bf16")
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B per token.
    assert doc["breakdown"]["kv_cache"] == 4 * 8192 * 327_680


def test_mem_explain_prints_formulas_and_assumptions() -> None:
    out = run("mem", "qwen3-30b-a3b", "--task", "lora", "--explain")
    assert out.returncode == 0, out.stderr
    assert "formula" in out.stdout and "bytes/token" in out.stdout
    assert "assumption:" in out.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--task", "dance"], "Invalid value"),
        (["--batch", "0"], "Invalid value"),
        (["--task", "infer", "--quant", "q9"], "unknown weight format"),
        (["--gpus", "3", "--tp", "2"], "not a multiple"),
        (["--sp"], "needs --tp"),
        (["--lora-targets", "q,zz"], "--lora-targets"),
        (["--global-batch", "7", "--batch", "2"], "not a multiple"),
        (["--gpu", "H1000"], "unknown GPU"),
        (["--fragmentation", "1.5"], "Invalid value"),
    ],
)
def test_mem_bad_input_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    out = run("mem", "llama-3.1-8b", *args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
