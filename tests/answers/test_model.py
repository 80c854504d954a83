"""``model`` and the presets list, as ``suanli model --json`` and ``suanli models --json``."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema, jsonable
from suanli.answers.model import (
    ModelAnswer,
    ModelRequest,
    PresetRow,
    model,
    preset_list,
    preset_rows,
)
from suanli.cli.model import model_cmd, models_cmd

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"


def cli_json(command: Any, *args: str) -> Any:
    result = CliRunner().invoke(command, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cli_json_equals_the_answer() -> None:
    for name in ("llama-3.1-8b", "deepseek-v3", str(FIXTURES / "mixtral-8x7b-v0.1.json")):
        doc = cli_json(model_cmd, name)
        assert doc == model(ModelRequest(name)).to_json()
        assert next(iter(doc)) == "schema_version" and doc["schema_version"] == SCHEMA_VERSION


def test_published_counts() -> None:
    # Hugging Face safetensors totals (the same figures tests/cli pins).
    assert model(ModelRequest("llama-3.1-8b")).params_total == 8_030_261_248
    mixtral = model(ModelRequest(str(FIXTURES / "mixtral-8x7b-v0.1.json")))
    assert (mixtral.params_total, mixtral.params_active) == (46_702_792_704, 12_879_925_248)
    assert sum(mixtral.params_by_component.values()) == mixtral.params_total


def test_optional_parts_appear_only_when_present() -> None:
    dense = model(ModelRequest("llama-3.1-8b")).to_json()
    assert not {"moe", "mla", "stored"} & set(dense)
    ds = model(ModelRequest("deepseek-v3"))
    doc = ds.to_json()
    assert doc["moe"]["experts"] == 256 and doc["moe"]["experts_per_token"] == 8
    assert doc["mla"]["kv_lora_rank"] == 512
    assert doc["published"]["params_total"] == 671_000_000_000
    assert "shared_expert" not in doc["moe"]  # kept for the table, not serialised
    assert ds.moe is not None and ds.moe.shared_expert


def test_stored_counts_from_safetensors_headers(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((FIXTURES / "qwen2.5-0.5b.json").read_text())
    header = json.dumps(
        {
            "a": {"dtype": "BF16", "shape": [1000, 10], "data_offsets": [0, 20000]},
            "b": {"dtype": "F32", "shape": [5], "data_offsets": [20000, 20020]},
        }
    ).encode()
    payload = struct.pack("<Q", len(header)) + header + bytes(20020)
    (tmp_path / "model.safetensors").write_bytes(payload)
    doc = cli_json(model_cmd, str(tmp_path))
    assert doc["stored"] == {
        "params_total": 10_005,
        "by_dtype": {"BF16": 10_000, "F32": 5},
        "files": 1,
    }
    assert doc == model(ModelRequest(str(tmp_path))).to_json()


def test_bad_model_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown model"):
        model(ModelRequest("llama-9"))


def test_models_json_is_the_preset_rows() -> None:
    rows = preset_rows()
    assert cli_json(models_cmd) == {"schema_version": SCHEMA_VERSION, "models": jsonable(rows)}
    assert preset_list().to_json() == cli_json(models_cmd)
    by_name = {r.name: r for r in rows}
    assert len(rows) >= 30
    assert by_name["llama-3.1-8b"].params_total == 8_030_261_248
    assert by_name["llama-3.1-8b"].api_priced  # suanli cost --api llama-3.1-8b has a price
    assert list(jsonable(rows[0])) == [
        "name",
        "family",
        "hf_id",
        "params_total",
        "params_active",
        "published_params_total",
        "api_priced",
    ]


def test_json_schemas() -> None:
    schema = json_schema(ModelAnswer)
    assert {"moe", "mla", "published", "stored"}.isdisjoint(schema["required"])
    assert "mlp_gated" not in schema["properties"]
    assert set(json_schema(PresetRow)["required"]) == set(PresetRow.__dataclass_fields__)
