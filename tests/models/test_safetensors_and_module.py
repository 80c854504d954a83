"""Stored counts from real safetensors headers, and counts from a live nn.Module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.models.module import module_params
from suanli.models.resolve import ModelSourceError, load_model, model_from_module
from suanli.models.safetensors import SafetensorsError, read_header

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")

TINY_QWEN2 = {
    "model_type": "qwen2",
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": False,
}


def _build(cfg: dict, device: str = "cpu") -> object:
    conf = transformers.AutoConfig.for_model(
        cfg["model_type"], **{k: v for k, v in cfg.items() if k != "model_type"}
    )
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(conf)


def test_folder_with_safetensors_reports_stored_count(tmp_path: Path) -> None:
    model = _build(TINY_QWEN2).to(torch.bfloat16)
    model.save_pretrained(tmp_path)  # writes config.json and model.safetensors
    loaded = load_model(str(tmp_path))
    expected = sum(p.numel() for p in model.parameters())
    assert loaded.params.total == expected
    assert loaded.stored is not None
    assert loaded.stored.total == expected
    assert loaded.stored.main_dtype == "BF16"


def test_sharded_checkpoint_sums_all_files(tmp_path: Path) -> None:
    model = _build(TINY_QWEN2)
    model.save_pretrained(tmp_path, max_shard_size="100KB")
    assert len(list(tmp_path.glob("*.safetensors"))) > 1
    loaded = load_model(str(tmp_path))
    assert loaded.stored is not None and loaded.stored.files > 1
    assert loaded.stored.total == loaded.params.total


def test_header_reader_rejects_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "x.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with pytest.raises(SafetensorsError, match="no valid safetensors JSON header"):
        read_header(bad)
    (tmp_path / "config.json").write_text(json.dumps(TINY_QWEN2))
    with pytest.raises(ModelSourceError, match="safetensors"):
        load_model(str(tmp_path))


def test_module_params_on_meta_device_counts_tied_once() -> None:
    cfg = {**TINY_QWEN2, "tie_word_embeddings": True}
    model = _build(cfg, "meta")
    counts = module_params(model)
    assert counts.total == sum(p.numel() for p in model.parameters())
    assert counts.total_bytes == 4 * counts.total  # float32 on construction
    assert counts.by_dtype == {"float32": counts.total}
    assert counts.trainable == counts.total


def test_module_params_bytes_follow_dtype() -> None:
    model = _build(TINY_QWEN2, "meta").to(torch.bfloat16)
    counts = module_params(model)
    assert counts.total_bytes == 2 * counts.total


def test_model_from_module_reads_its_config() -> None:
    from suanli.models.params import count_params

    model = _build(TINY_QWEN2, "meta")
    spec = model_from_module(model)
    assert count_params(spec).total == module_params(model).total


def test_model_from_plain_module_is_a_clear_error() -> None:
    with pytest.raises(ModelSourceError, match="no transformers config"):
        model_from_module(torch.nn.Linear(2, 2))
