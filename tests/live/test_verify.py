"""``suanli verify`` on the CPU: real steps of tiny configs against the estimate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from suanli.estimate.workload import InferWork, TrainWork
from suanli.live import verify
from suanli.models.config import spec_from_config

TINY = {
    "model_type": "llama",
    "vocab_size": 512,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def test_training_components_match_on_the_cpu() -> None:
    result = verify.verify_training(
        spec_from_config(TINY),
        TINY,
        TrainWork(task="full", batch=2, seq=32, dtype="fp32", precision="pure", device="cpu"),
        steps=2,
    )
    assert result.device == "cpu"
    for key in ("weights", "gradients", "optimizer", "activations"):
        assert abs(result.error[key]) < 0.03, key
    assert result.measured["step_time_s"] > 0


def test_inference_kv_cache_matches() -> None:
    result = verify.verify_inference(spec_from_config(TINY), TINY, InferWork(batch=2), 24, 5)
    assert abs(result.error["kv_cache"]) < 0.03
    assert result.measured["ttft_s"] > 0 and result.measured["tpot_s"] >= 0


def test_refuses_what_would_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "_available_bytes", lambda device: 1024.0)
    with pytest.raises(ValueError, match="suanli fit"):
        verify.verify_training(spec_from_config(TINY), TINY, TrainWork(task="full"))


def test_cli_json_and_bad_input(tmp_path: Path) -> None:
    from tests.cli.test_cli import run

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    out = run(
        "verify",
        str(cfg),
        "--task",
        "full",
        "--batch",
        "1",
        "--seq",
        "32",
        "--dtype",
        "fp32",
        "--precision",
        "pure",
        "--no-save",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) >= {"estimate", "measured", "error"}
    assert abs(doc["error"]["weights"]) < 0.01
    lora = run("verify", str(cfg), "--task", "lora")
    assert lora.returncode == 2 and "LoRA" in lora.stderr
    big = run("verify", "llama-3.1-70b", "--task", "full")
    assert big.returncode == 2 and "too slow on the CPU" in big.stderr


def test_validation_script_runs_in_cpu_mode(tmp_path: Path) -> None:
    script = Path(__file__).parents[2] / "benchmarks" / "validate_gpu.py"
    out = subprocess.run(
        [sys.executable, str(script), "--cpu", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads((tmp_path / "validate.json").read_text())
    assert doc["device"] == "cpu" and len(doc["rows"]) == 7
    for row in doc["rows"]:
        for key in ("weights", "kv_cache", "optimizer", "activations"):
            if key in row["error"]:
                assert abs(row["error"][key]) < 0.03, (row["model"], key)
    assert (tmp_path / "validate.md").read_text().startswith("Validation on cpu")
    host = doc["host_dispatch"]
    assert host["generate_layer_s"] > 0 and host["add_op_s"] > 0
    assert "generate() per layer and token" in (tmp_path / "validate.md").read_text()
