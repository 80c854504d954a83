"""Every config field a reader uses, type- and range-checked before any reader runs.

A ``config.json`` comes from anywhere (a file, the hub, a web upload). Before a family reader
turns ``num_hidden_layers`` into a tuple of layer indices or multiplies widths, each field it
reads is checked here once: integers are integers (an integral float such as ``4096.0`` is
taken as one) within the bounds of :mod:`suanli.limits`, floats are finite, index lists hold
bounded integers, nested configs are objects no deeper than a few levels. A field that fails
raises :class:`ConfigFieldError` with one sentence naming it and its allowed range; fields
suanli does not read are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from suanli.i18n import N_
from suanli.limits import MAX_EXPERTS, MAX_LAYERS, MAX_WIDTH
from suanli.models.spec import ModelSpec

#: Largest position count, window or head width a config may state.
_POSITIONS = 1 << 31
_HEADS = 1 << 16

#: Integer fields and their ceilings (0 is allowed here; readers check positivity where needed).
INT_FIELDS: dict[str, int] = {
    **dict.fromkeys(
        (
            "num_hidden_layers",
            "n_layer",
            "n_layers",
            "num_layers",
            "depth",
            "first_k_dense_replace",
            "max_window_layers",
            "num_nextn_predict_layers",
            "moe_layer_start_index",
            "moe_layer_end_index",
            "decoder_sparse_step",
            "moe_layer_freq",
            "moe_layer_interval",
            "interleave_moe_layer_step",
            "sliding_window_pattern",
        ),
        MAX_LAYERS,
    ),
    **dict.fromkeys(
        (
            "hidden_size",
            "n_embd",
            "d_model",
            "dim",
            "embed_dim",
            "intermediate_size",
            "intermediate_size_mlp",
            "n_inner",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "vocab_size",
            "padded_vocab_size",
            "word_embed_proj_dim",
            "out_hidden_size",
            "kv_lora_rank",
            "q_lora_rank",
            "type_vocab_size",
            "image_seq_length",
        ),
        MAX_WIDTH,
    ),
    **dict.fromkeys(
        (
            "num_attention_heads",
            "n_head",
            "n_heads",
            "num_heads",
            "num_key_value_heads",
            "num_kv_heads",
            "n_head_kv",
            "kv_n_heads",
            "head_dim",
            "qk_nope_head_dim",
            "qk_rope_head_dim",
            "v_head_dim",
            "spatial_merge_size",
            "temporal_patch_size",
            "num_ln_in_parallel_attn",
        ),
        _HEADS,
    ),
    **dict.fromkeys(
        (
            "num_experts",
            "num_local_experts",
            "n_routed_experts",
            "moe_num_experts",
            "num_experts_per_tok",
            "moe_k",
            "n_shared_experts",
            "moe_num_shared_experts",
        ),
        MAX_EXPERTS,
    ),
    **dict.fromkeys(
        ("max_position_embeddings", "n_positions", "max_seq_len", "sliding_window", "window_size"),
        _POSITIONS,
    ),
}
#: Float fields: finite numbers (or null).
FLOAT_FIELDS = (
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "rms_norm_eps",
    "layer_norm_eps",
    "rope_theta",
    "partial_rotary_factor",
    "downsample_ratio",
    "expansion_ratio",
    "attention_dropout",
    "hidden_dropout",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "layer_scale_init_value",
)
#: Fields that list layer indices.
INDEX_LIST_FIELDS = ("mlp_only_layers", "fullatt_block_indexes", "moe_layers")
#: Nested configs read by the composite readers.
NESTED = ("text_config", "vision_config", "attn_config", "llm_config", "rope_scaling")
#: Nesting of nested configs checked.
MAX_NESTING = 4


class ConfigFieldError(ValueError):
    """A config field of the wrong type or out of range (one sentence)."""


def check_config(cfg: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """A copy of ``cfg`` whose fields suanli reads are checked (integral floats made ints);
    raises :class:`ConfigFieldError`."""
    if depth > MAX_NESTING:
        raise ConfigFieldError(N_("the config nests sub-configs too deeply; check the file"))
    out = dict(cfg)
    for key, top in INT_FIELDS.items():
        if out.get(key) is not None:
            out[key] = _int(key, out[key], top)
    for key in FLOAT_FIELDS:
        value = out.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ConfigFieldError(
                N_("config field {key!r} must be a finite number, got {value}").format(
                    key=key, value=_short(value)
                )
            )
    for key in INDEX_LIST_FIELDS:
        value = out.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or len(value) > MAX_LAYERS:
            raise ConfigFieldError(
                N_("config field {key!r} must be a list of layer indices, got {value}").format(
                    key=key, value=_short(value)
                )
            )
        out[key] = [_int(f"{key}[]", v, MAX_LAYERS) for v in value]
    layer_types = out.get("layer_types")
    if layer_types is not None and (
        not isinstance(layer_types, list)
        or len(layer_types) > MAX_LAYERS
        or not all(isinstance(v, str) for v in layer_types)
    ):
        raise ConfigFieldError(N_("config field 'layer_types' must be a list of strings"))
    for key in NESTED:
        value = out.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ConfigFieldError(
                N_("config field {key!r} must be a JSON object, got {value}").format(
                    key=key, value=_short(value)
                )
            )
        if key != "rope_scaling":
            out[key] = check_config(value, depth + 1)
    return out


def _int(key: str, value: Any, top: int) -> int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigFieldError(
            N_("config field {key!r} must be an integer, got {value}").format(
                key=key, value=_short(value)
            )
        )
    if value < 0:
        raise ConfigFieldError(
            N_("config field {key!r} must be positive, got {value}").format(
                key=key, value=_short(value)
            )
        )
    if value > top:
        raise ConfigFieldError(
            N_("config field {key!r} must be at most {top:,}, got {value}").format(
                key=key, top=top, value=_short(value)
            )
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_routing(spec: ModelSpec) -> None:
    """A mixture of experts routes each token to at most as many experts as it has (else it
    would report more active than total parameters); ConfigFieldError otherwise."""
    moe = spec.moe
    if moe is not None and moe.experts_per_token > moe.num_experts:
        raise ConfigFieldError(
            N_(
                "the config routes each token to {k} experts but has only {n}; "
                "fix num_experts_per_tok"
            ).format(k=moe.experts_per_token, n=moe.num_experts)
        )
