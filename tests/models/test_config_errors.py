"""Bad configs fail with one clear sentence naming what to fix."""

from __future__ import annotations

import pytest

from suanli.models.config import SUPPORTED_MODEL_TYPES, ModelConfigError, spec_from_config

LLAMA = {
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
}


def test_supported_families_cover_the_issue_list() -> None:
    for family in [
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "gpt2",
        "gpt_neox",
        "bert",
        "deepseek_v2",
        "deepseek_v3",
    ]:
        assert family in SUPPORTED_MODEL_TYPES


def test_non_transformer_model_type_is_refused_by_name() -> None:
    with pytest.raises(
        ModelConfigError, match="RWKV recurrent layers, which suanli does not model"
    ):
        spec_from_config({**LLAMA, "model_type": "rwkv"})
    with pytest.raises(ModelConfigError, match="encoder-decoder"):
        spec_from_config({**LLAMA, "model_type": "t5ish", "is_encoder_decoder": True})


def test_unknown_family_goes_the_generic_path_and_says_so() -> None:
    spec = spec_from_config({**LLAMA, "model_type": "acme_lm", "acme_magic": 3})
    assert spec.num_layers == LLAMA["num_hidden_layers"]
    assert any("generic transformer path" in n for n in spec.notes)
    assert any("acme_magic" in n for n in spec.notes)  # never silently
    with pytest.raises(ModelConfigError, match="missing"):
        spec_from_config({"model_type": "acme_lm", "hidden_size": 64})


def test_missing_model_type() -> None:
    with pytest.raises(ModelConfigError, match="no 'model_type'"):
        spec_from_config({k: v for k, v in LLAMA.items() if k != "model_type"})


def test_missing_required_field_is_named() -> None:
    """A size no configuration class supplies (the original Falcon-40B type has none) is named;
    one that a class does supply takes its default (tests/models/test_library_defaults.py)."""
    falcon = {"model_type": "RefinedWeb", "num_hidden_layers": 2, "num_attention_heads": 4}
    with pytest.raises(ModelConfigError, match="hidden_size"):
        spec_from_config(falcon)


def test_a_bare_model_type_is_the_class_default_model_and_says_so() -> None:
    """transformers builds LlamaConfig()'s model (4,096 wide, 32 layers, 32,000 tokens) from
    {"model_type": "llama"}; suanli counts the same model and names the defaulted sizes."""
    spec = spec_from_config({"model_type": "llama"})
    assert (spec.hidden_size, spec.num_layers, spec.vocab_size) == (4096, 32, 32000)
    assert any("hidden_size=4096" in note for note in spec.notes)
    assert not any("hidden_size=" in n for n in spec_from_config(LLAMA).notes)


@pytest.mark.parametrize("value", [0, -4, 3.5, "32", True])
def test_bad_sizes(value: object) -> None:
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        spec_from_config({**LLAMA, "num_hidden_layers": value})


def test_heads_not_dividing_hidden() -> None:
    with pytest.raises(ModelConfigError, match="not divisible"):
        spec_from_config({**LLAMA, "num_attention_heads": 30})


def test_kv_heads_must_divide_heads() -> None:
    with pytest.raises(ModelConfigError, match="multiple of num_key_value_heads"):
        spec_from_config({**LLAMA, "num_key_value_heads": 5})


def test_not_an_object() -> None:
    with pytest.raises(ModelConfigError, match="JSON object"):
        spec_from_config([1, 2])  # type: ignore[arg-type]
