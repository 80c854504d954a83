"""Cross-check: our parameter count equals ``sum(p.numel())`` of the real transformers model.

The model is built on the meta device (no memory, no weights) from the same config dict that
suanli reads, for every family suanli supports, with defaults and with variations that switch
each architectural option (biases, tying, GQA/MQA, MoE layer rules, MLA without q-LoRA).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.models.config import spec_from_config
from suanli.models.params import count_params

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"


def _meta_count(cfg: dict) -> int:
    """Build the model on the meta device and count its parameters (plus stored buffers).

    DeepSeek-V3's ``e_score_correction_bias`` is a checkpoint tensor that transformers registers
    as a buffer; suanli counts it as a router parameter, so it is added here.
    """
    model_type = cfg["model_type"]
    kwargs = {k: v for k, v in cfg.items() if k != "model_type"}
    if model_type == "gemma3":
        text = dict(cfg["text_config"])
        text.pop("model_type", None)
        kwargs = {"tie_word_embeddings": cfg.get("tie_word_embeddings", True), **text}
        model_type = "gemma3_text"
    conf = transformers.AutoConfig.for_model(model_type, **kwargs)
    with torch.device("meta"):
        if model_type == "bert":
            model = transformers.AutoModel.from_config(conf)
        else:
            model = transformers.AutoModelForCausalLM.from_config(conf)
    n = sum(p.numel() for p in model.parameters())
    n += sum(b.numel() for name, b in model.named_buffers() if "e_score_correction_bias" in name)
    return n


# Small variants of every family: each switches on an option the defaults leave off.
VARIANTS: dict[str, dict] = {
    "llama-bias-gqa-tied": {
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 3,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "attention_bias": True,
        "mlp_bias": True,
        "tie_word_embeddings": True,
    },
    "llama-mqa-headdim": {
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 96,
    },
    "mistral-sliding": {
        "model_type": "mistral",
        "vocab_size": 500,
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "sliding_window": 64,
        "head_dim": 48,
    },
    "mixtral-small": {
        "model_type": "mixtral",
        "vocab_size": 500,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "qwen2-tied": {
        "model_type": "qwen2",
        "vocab_size": 800,
        "hidden_size": 128,
        "intermediate_size": 300,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "qwen2_moe-sparse-step": {
        "model_type": "qwen2_moe",
        "vocab_size": 800,
        "hidden_size": 128,
        "intermediate_size": 320,
        "moe_intermediate_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_experts": 6,
        "num_experts_per_tok": 2,
        "shared_expert_intermediate_size": 96,
        "decoder_sparse_step": 2,
        "mlp_only_layers": [3],
    },
    "qwen3-bias": {
        "model_type": "qwen3",
        "vocab_size": 800,
        "hidden_size": 128,
        "intermediate_size": 300,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "attention_bias": True,
    },
    "qwen3_moe-mlp-only": {
        "model_type": "qwen3_moe",
        "vocab_size": 800,
        "hidden_size": 128,
        "intermediate_size": 320,
        "moe_intermediate_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "mlp_only_layers": [0],
    },
    "gemma-small": {
        "model_type": "gemma",
        "vocab_size": 900,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 64,
    },
    "gemma2-small": {
        "model_type": "gemma2",
        "vocab_size": 900,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
    },
    "gemma3_text-small": {
        "model_type": "gemma3_text",
        "vocab_size": 900,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 7,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
    },
    "gemma3-nested": {
        "model_type": "gemma3",
        "text_config": {
            "model_type": "gemma3_text",
            "vocab_size": 900,
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 32,
        },
    },
    "phi3-gqa": {
        "model_type": "phi3",
        "vocab_size": 700,
        "hidden_size": 192,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
    },
    "gpt2-inner": {
        "model_type": "gpt2",
        "vocab_size": 600,
        "n_embd": 128,
        "n_layer": 2,
        "n_head": 4,
        "n_positions": 256,
        "n_inner": 300,
    },
    "gpt_neox-untied-nobias": {
        "model_type": "gpt_neox",
        "vocab_size": 600,
        "hidden_size": 128,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "attention_bias": False,
        "tie_word_embeddings": False,
    },
    "bert-small": {
        "model_type": "bert",
        "vocab_size": 600,
        "hidden_size": 128,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 256,
        "type_vocab_size": 3,
    },
    "deepseek_v2-lite-shape": {
        "model_type": "deepseek_v2",
        "vocab_size": 700,
        "hidden_size": 128,
        "intermediate_size": 320,
        "moe_intermediate_size": 48,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "n_shared_experts": 2,
        "first_k_dense_replace": 1,
        "q_lora_rank": None,
        "kv_lora_rank": 32,
        "qk_rope_head_dim": 16,
        "qk_nope_head_dim": 32,
        "v_head_dim": 32,
    },
    "deepseek_v3-small": {
        "model_type": "deepseek_v3",
        "vocab_size": 700,
        "hidden_size": 128,
        "intermediate_size": 320,
        "moe_intermediate_size": 48,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_rope_head_dim": 16,
        "qk_nope_head_dim": 32,
        "v_head_dim": 32,
        "n_group": 2,
        "topk_group": 1,
    },
}

DEFAULT_FAMILIES = [
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
]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_matches_transformers(name: str) -> None:
    cfg = VARIANTS[name]
    assert count_params(spec_from_config(cfg, name)).total == _meta_count(cfg)


@pytest.mark.parametrize("model_type", DEFAULT_FAMILIES)
def test_family_defaults_match_transformers(model_type: str) -> None:
    """transformers' own default config for the family, read back as JSON."""
    cfg = transformers.AutoConfig.for_model(model_type).to_dict()
    cfg["model_type"] = model_type
    assert count_params(spec_from_config(cfg, model_type)).total == _meta_count(cfg)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_reference_config_matches_transformers(path: Path) -> None:
    cfg = json.loads(path.read_text())
    if str(cfg.get("model_type", "")).startswith("RefinedWeb"):
        pytest.skip("Falcon's original config: test_full_size_configs builds it as FalconConfig")
    assert count_params(spec_from_config(cfg, path.stem)).total == _meta_count(cfg)
