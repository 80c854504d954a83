"""``verify``: real steps of a tiny model against the estimate, as ``suanli verify --json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION
from suanli.answers.request import WorkRequest
from suanli.answers.verify import VerifyRequest, verify
from suanli.cli.verify import verify_cmd
from suanli.models.config import spec_from_config
from suanli.models.params import count_params

pytest.importorskip("torch")
pytest.importorskip("transformers")

TINY = {
    "model_type": "llama",
    "vocab_size": 512,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
WORK = ["--task", "full", "--batch", "1", "--seq", "32", "--dtype", "fp32", "--precision", "pure"]


def test_cli_json_equals_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(TINY))
    out = CliRunner().invoke(verify_cmd, [str(cfg), *WORK, "--steps", "2", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    saved = tmp_path / "suanli" / "calibration" / f"verify-{doc['device']}.json"
    assert doc["saved_to"] == str(saved)
    # The file holds the document without schema_version and saved_to.
    on_disk = json.loads(saved.read_text())
    assert on_disk == {k: v for k, v in doc.items() if k not in ("schema_version", "saved_to")}
    assert list(on_disk) == ["model", "task", "device", "estimate", "measured", "error", "notes"]

    work = WorkRequest(task="full", batch=1, seq=32, dtype="fp32", precision="pure")
    answer = verify(VerifyRequest(model=str(cfg), work=work, steps=2, save=False)).to_json()
    assert doc["schema_version"] == answer["schema_version"] == SCHEMA_VERSION
    assert list(doc) == [*answer, "saved_to"]
    assert doc["estimate"] == answer["estimate"]  # the estimate is deterministic, timings are not
    # fp32 weights: 4 bytes per parameter, counted from the config, measured from the tensors.
    weights = 4 * count_params(spec_from_config(TINY)).total
    assert doc["measured"]["weights"] == answer["measured"]["weights"] == weights


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="LoRA"):
        verify(VerifyRequest(model="llama-3.1-8b", work=WorkRequest(task="lora"), save=False))
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="too slow on the CPU"):
        verify(VerifyRequest(model="llama-3.1-70b", save=False))
