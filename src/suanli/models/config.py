"""Read a Hugging Face ``config.json`` (as a dict) into a :class:`ModelSpec`.

Only JSON is read: no model code is imported or executed. Each family reader mirrors the module
layout that ``transformers`` builds for that ``model_type`` (defaults included, from the
family's ``configuration_*.py``), so the derived parameter count is exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from suanli.i18n import N_, message_of
from suanli.models.families import FAMILY_READERS, FamilyConfigError
from suanli.models.families_moe import MOE_READERS
from suanli.models.library_defaults import defaults_note, fill_defaults
from suanli.models.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec, NormSpec
from suanli.models.validate import ConfigFieldError, check_config, check_routing


class ModelConfigError(ValueError):
    """The config cannot describe a model we support; the message says what to fix."""


Config = Mapping[str, Any]
#: What a model_type is in transformers: an identifier (``qwen2_moe``, ``gpt-sw3``).
_MODEL_TYPE = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def _int(cfg: Config, key: str, default: int | None = None, *, allow_zero: bool = False) -> int:
    """A required (or defaulted) integer field, checked to be positive."""
    value = cfg.get(key)
    if value is None:  # absent, or null in the JSON: the family's default applies
        value = default
    if value is None:
        raise ModelConfigError(
            N_("config.json is missing the required field {key!r}; add it").format(key=key)
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelConfigError(
            N_("config field {key!r} must be an integer, got {value!r}").format(
                key=key, value=value
            )
        )
    if value < 0 or (value == 0 and not allow_zero):
        raise ModelConfigError(
            N_("config field {key!r} must be positive, got {value}").format(key=key, value=value)
        )
    return value


def _opt_int(cfg: Config, key: str) -> int | None:
    """An optional positive integer (``None`` when absent or null)."""
    if cfg.get(key) is None:
        return None
    return _int(cfg, key)


def _bool(cfg: Config, key: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ModelConfigError(
            N_("config field {key!r} must be true or false, got {value!r}").format(
                key=key, value=value
            )
        )
    return value


def _prob(cfg: Config, key: str, default: float) -> float:
    """A probability field (dropout), checked to lie in [0, 1)."""
    value = cfg.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ModelConfigError(
            N_("config field {key!r} must be a probability in [0, 1), got {value!r}").format(
                key=key, value=value
            )
        )
    return float(value)


def _head_dim(cfg: Config, hidden: int, heads: int) -> int:
    """``head_dim`` when given (Gemma, Qwen3, Mistral-Nemo), else ``hidden // heads``."""
    if cfg.get("head_dim") is not None:
        return _int(cfg, "head_dim")
    if hidden % heads:
        raise ModelConfigError(
            N_(
                "hidden_size {hidden} is not divisible by num_attention_heads {heads}; "
                "set head_dim in the config"
            ).format(hidden=hidden, heads=heads)
        )
    return hidden // heads


def _kv_heads(cfg: Config, heads: int) -> int:
    kv = _int(cfg, "num_key_value_heads", heads)
    if heads % kv:
        raise ModelConfigError(
            N_("num_attention_heads {heads} is not a multiple of num_key_value_heads {kv}").format(
                heads=heads, kv=kv
            )
        )
    return kv


def _sliding_layers(
    cfg: Config, layers: int, default_pattern: Callable[[int], bool]
) -> tuple[int, ...]:
    """Indices of sliding-window layers, from ``layer_types`` when present."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    return tuple(i for i in range(layers) if default_pattern(i))


def _decoder(
    name: str,
    cfg: Config,
    *,
    qkv_bias: bool,
    o_bias: bool,
    mlp_bias: bool = False,
    qk_norm: bool = False,
    norms_per_layer: int = 2,
    tie_default: bool = False,
    fused_qkv: bool = False,
    moe: MoESpec | None = None,
    moe_layers: tuple[int, ...] = (),
    sliding: tuple[int, ...] = (),
    notes: tuple[str, ...] = (),
) -> ModelSpec:
    """A pre-norm rotary decoder (Llama layout) with family-specific switches."""
    hidden = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    head_dim = _head_dim(cfg, hidden, heads)
    mlp = None
    if len(moe_layers) < layers:
        mlp = MLPSpec(
            _int(cfg, "intermediate_size"),
            gated=True,
            bias=mlp_bias,
            activation=str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "silu"),
        )
    window = cfg.get("sliding_window")
    return ModelSpec(
        name=name,
        architecture=str(cfg["model_type"]),
        vocab_size=_int(cfg, "vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        attention=AttentionSpec(
            num_heads=heads,
            num_kv_heads=_kv_heads(cfg, heads),
            head_dim=head_dim,
            v_head_dim=head_dim,
            qkv_bias=qkv_bias,
            o_bias=o_bias,
            qk_norm=qk_norm,
            fused_qkv=fused_qkv,
            sliding_window=window if sliding and isinstance(window, int) else None,
        ),
        mlp=mlp,
        norm=NormSpec("rmsnorm", norms_per_layer),
        moe=moe,
        moe_layers=moe_layers,
        tie_word_embeddings=_bool(cfg, "tie_word_embeddings", tie_default),
        max_position_embeddings=int(cfg.get("max_position_embeddings") or 0),
        sliding_window_layers=sliding if isinstance(window, int) else (),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or ""),
        dropout=_prob(cfg, "attention_dropout", 0.0),
        notes=notes,
    )


def _llama(name: str, cfg: Config) -> ModelSpec:
    bias = _bool(cfg, "attention_bias", False)
    return _decoder(name, cfg, qkv_bias=bias, o_bias=bias, mlp_bias=_bool(cfg, "mlp_bias", False))


def _mistral(name: str, cfg: Config) -> ModelSpec:
    layers = _int(cfg, "num_hidden_layers")
    sliding = tuple(range(layers)) if cfg.get("sliding_window") else ()
    return _decoder(name, cfg, qkv_bias=False, o_bias=False, sliding=sliding)


def _qwen_sliding(cfg: Config) -> tuple[int, ...]:
    """Qwen2/3 slide only with ``use_sliding_window``, from layer ``max_window_layers`` on."""
    layers = _int(cfg, "num_hidden_layers")
    if not _bool(cfg, "use_sliding_window", False):
        return ()
    start = int(cfg.get("max_window_layers") or 0)
    return _sliding_layers(cfg, layers, lambda i: i >= start)


def _qwen2(name: str, cfg: Config) -> ModelSpec:
    return _decoder(name, cfg, qkv_bias=True, o_bias=False, sliding=_qwen_sliding(cfg))


def _qwen3(name: str, cfg: Config) -> ModelSpec:
    bias = _bool(cfg, "attention_bias", False)
    return _decoder(name, cfg, qkv_bias=bias, o_bias=bias, qk_norm=True, sliding=_qwen_sliding(cfg))


def _sparse_step_layers(cfg: Config, experts: int) -> tuple[int, ...]:
    """Qwen-MoE rule: MoE every ``decoder_sparse_step`` layers, except ``mlp_only_layers``."""
    layers = _int(cfg, "num_hidden_layers")
    step = _int(cfg, "decoder_sparse_step", 1)
    only_mlp = set(cfg.get("mlp_only_layers") or [])
    return tuple(
        i for i in range(layers) if i not in only_mlp and experts > 0 and (i + 1) % step == 0
    )


def _mixtral(name: str, cfg: Config) -> ModelSpec:
    hidden_act = str(cfg.get("hidden_act") or "silu")
    experts = _int(cfg, "num_local_experts", 8)
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", 2),
        expert=MLPSpec(_int(cfg, "intermediate_size"), gated=True, activation=hidden_act),
    )
    layers = tuple(range(_int(cfg, "num_hidden_layers")))
    sliding = layers if cfg.get("sliding_window") else ()
    return _decoder(
        name, cfg, qkv_bias=False, o_bias=False, moe=moe, moe_layers=layers, sliding=sliding
    )


def _qwen2_moe(name: str, cfg: Config) -> ModelSpec:
    experts = _int(cfg, "num_experts", 60, allow_zero=True)
    shared = _int(cfg, "shared_expert_intermediate_size", 5632, allow_zero=True)
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", 4),
        expert=MLPSpec(_int(cfg, "moe_intermediate_size", 1408), gated=True),
        shared_expert=MLPSpec(shared, gated=True) if shared else None,
        shared_expert_gate=bool(shared),
    )
    return _decoder(
        name,
        cfg,
        qkv_bias=_bool(cfg, "qkv_bias", True),
        o_bias=False,
        moe=moe,
        moe_layers=_sparse_step_layers(cfg, experts),
        sliding=_qwen_sliding(cfg),
    )


def _qwen3_moe(name: str, cfg: Config) -> ModelSpec:
    experts = _int(cfg, "num_experts", 128, allow_zero=True)
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", 8),
        expert=MLPSpec(_int(cfg, "moe_intermediate_size", 768), gated=True),
    )
    bias = _bool(cfg, "attention_bias", False)
    return _decoder(
        name,
        cfg,
        qkv_bias=bias,
        o_bias=bias,
        qk_norm=True,
        moe=moe,
        moe_layers=_sparse_step_layers(cfg, experts),
        sliding=_qwen_sliding(cfg),
    )


def _gemma(name: str, cfg: Config) -> ModelSpec:
    bias = _bool(cfg, "attention_bias", False)
    return _decoder(name, cfg, qkv_bias=bias, o_bias=bias, tie_default=True)


def _with_softcaps(
    spec: ModelSpec, cfg: Config, attn_default: float | None, final_default: float | None
) -> ModelSpec:
    """Add the soft-capping values (a null in the config, or no default, means none)."""
    attn = cfg.get("attn_logit_softcapping", attn_default)
    final = cfg.get("final_logit_softcapping", final_default)
    return replace(spec, attn_logit_softcap=float(attn or 0), final_logit_softcap=float(final or 0))


def _gemma2(name: str, cfg: Config) -> ModelSpec:
    bias = _bool(cfg, "attention_bias", False)
    layers = _int(cfg, "num_hidden_layers")
    # Gemma 2 alternates local (sliding) and global layers, starting with a local one.
    sliding = _sliding_layers(cfg, layers, lambda i: i % 2 == 0)
    spec = _decoder(
        name, cfg, qkv_bias=bias, o_bias=bias, norms_per_layer=4, tie_default=True, sliding=sliding
    )
    return _with_softcaps(spec, cfg, 50.0, 30.0)


def _gemma3_text(name: str, cfg: Config) -> ModelSpec:
    bias = _bool(cfg, "attention_bias", False)
    layers = _int(cfg, "num_hidden_layers")
    pattern = _int(cfg, "sliding_window_pattern", 6)
    # Five local layers, then one global one (Gemma 3 report, section 2).
    sliding = _sliding_layers(cfg, layers, lambda i: (i + 1) % pattern != 0)
    spec = _decoder(
        name,
        cfg,
        qkv_bias=bias,
        o_bias=bias,
        qk_norm=True,
        norms_per_layer=4,
        tie_default=True,
        sliding=sliding,
    )
    return _with_softcaps(spec, cfg, None, None)


#: Gemma3TextConfig defaults (transformers configuration_gemma3.py): the published Gemma 3
#: 4B/12B/27B configs omit these keys in their nested text_config and rely on them.
GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "sliding_window": 4096,
}


def _gemma3(name: str, cfg: Config) -> ModelSpec:
    text = cfg.get("text_config")
    if not isinstance(text, Mapping):
        raise ModelConfigError(N_("a gemma3 config needs a 'text_config' object; add it"))
    # The multimodal config nests the language model; its tie flag lives at the top level.
    merged = {
        **GEMMA3_TEXT_DEFAULTS,
        "tie_word_embeddings": cfg.get("tie_word_embeddings", True),
        **text,
    }
    merged["model_type"] = "gemma3_text"
    spec = _gemma3_text(name, merged)
    note = N_(
        "gemma3: the language model only; the SigLIP vision tower and projector are not counted"
    )
    return _replace_notes(spec, (*spec.notes, note))


def _phi3(name: str, cfg: Config) -> ModelSpec:
    layers = _int(cfg, "num_hidden_layers")
    sliding = tuple(range(layers)) if cfg.get("sliding_window") else ()
    return _decoder(name, cfg, qkv_bias=False, o_bias=False, fused_qkv=True, sliding=sliding)


def _deepseek(name: str, cfg: Config) -> ModelSpec:
    """DeepSeek-V2/V3: MLA attention, MoE with shared experts after ``first_k_dense_replace``."""
    v3 = cfg["model_type"] == "deepseek_v3"
    hidden = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    layers = _int(cfg, "num_hidden_layers")
    rope = _int(cfg, "qk_rope_head_dim", 64)
    nope = _int(cfg, "qk_nope_head_dim", 128)
    bias = _bool(cfg, "attention_bias", False)
    experts = _int(cfg, "n_routed_experts", 256 if v3 else 64)
    moe_width = _int(cfg, "moe_intermediate_size", 2048 if v3 else 1407)
    shared = _int(cfg, "n_shared_experts", 1 if v3 else 2, allow_zero=True)
    first_dense = _int(cfg, "first_k_dense_replace", 3 if v3 else 0, allow_zero=True)
    freq = _int(cfg, "moe_layer_freq", 1)
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", 8 if v3 else 6),
        expert=MLPSpec(moe_width, gated=True),
        shared_expert=MLPSpec(moe_width * shared, gated=True) if shared else None,
        router_bias=v3 and cfg.get("topk_method", "noaux_tc") == "noaux_tc",
    )
    # DeepSeek's modeling code: MoE from first_k_dense_replace on, every moe_layer_freq-th layer.
    moe_layers = tuple(i for i in range(first_dense, layers) if i % freq == 0)
    notes = []
    mtp = int(cfg.get("num_nextn_predict_layers") or 0)
    if mtp:
        notes.append(
            N_(
                "{count} multi-token-prediction layer(s) in the checkpoint are not counted "
                "(inference does not use them)"
            ).format(count=mtp)
        )
    if moe.router_bias:
        notes.append(
            N_(
                "the routers' e_score_correction_bias is counted (stored in the checkpoint; "
                "transformers keeps it as a buffer)"
            )
        )
    return ModelSpec(
        name=name,
        architecture=str(cfg["model_type"]),
        vocab_size=_int(cfg, "vocab_size"),
        hidden_size=hidden,
        num_layers=layers,
        attention=AttentionSpec(
            num_heads=heads,
            num_kv_heads=heads,
            head_dim=nope + rope,
            v_head_dim=_int(cfg, "v_head_dim", 128),
            qkv_bias=bias,
            o_bias=bias,
            q_lora_rank=_opt_int(cfg, "q_lora_rank") or 0,
            kv_lora_rank=_int(cfg, "kv_lora_rank", 512),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
        ),
        mlp=MLPSpec(_int(cfg, "intermediate_size"), gated=True)
        if first_dense or freq > 1
        else None,
        norm=NormSpec("rmsnorm", 2),
        moe=moe,
        moe_layers=moe_layers,
        tie_word_embeddings=_bool(cfg, "tie_word_embeddings", False),
        max_position_embeddings=int(cfg.get("max_position_embeddings") or 0),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or ""),
        notes=tuple(notes),
    )


def _gpt2(name: str, cfg: Config) -> ModelSpec:
    """GPT-2: learned positions, LayerNorm, fused QKV Conv1D with biases, plain GELU MLP."""
    hidden = _int(cfg, "n_embd", 768)
    heads = _int(cfg, "n_head", 12)
    if hidden % heads:
        raise ModelConfigError(
            N_("n_embd {hidden} is not divisible by n_head {heads}").format(
                hidden=hidden, heads=heads
            )
        )
    inner = cfg.get("n_inner")
    width = _int(cfg, "n_inner") if inner is not None else 4 * hidden
    return ModelSpec(
        name=name,
        architecture="gpt2",
        vocab_size=_int(cfg, "vocab_size", 50257),
        hidden_size=hidden,
        num_layers=_int(cfg, "n_layer", 12),
        attention=AttentionSpec(
            heads, heads, hidden // heads, hidden // heads, True, True, fused_qkv=True
        ),
        mlp=MLPSpec(width, gated=False, bias=True, activation="gelu_new"),
        norm=NormSpec("layernorm", 2),
        tie_word_embeddings=_bool(cfg, "tie_word_embeddings", True),
        learned_positions=_int(cfg, "n_positions", 1024),
        max_position_embeddings=_int(cfg, "n_positions", 1024),
        torch_dtype=str(cfg.get("torch_dtype") or ""),
        dropout=max(_prob(cfg, k, 0.1) for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop")),
    )


def _gpt_neox(name: str, cfg: Config) -> ModelSpec:
    """GPT-NeoX / Pythia: rotary, LayerNorm, fused QKV with biases, plain GELU MLP with biases."""
    hidden = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    if hidden % heads:
        raise ModelConfigError(
            N_("hidden_size {hidden} is not divisible by num_attention_heads {heads}").format(
                hidden=hidden, heads=heads
            )
        )
    bias = _bool(cfg, "attention_bias", True)
    return ModelSpec(
        name=name,
        architecture="gpt_neox",
        vocab_size=_int(cfg, "vocab_size"),
        hidden_size=hidden,
        num_layers=_int(cfg, "num_hidden_layers"),
        attention=AttentionSpec(
            heads, heads, hidden // heads, hidden // heads, bias, bias, fused_qkv=True
        ),
        mlp=MLPSpec(_int(cfg, "intermediate_size"), gated=False, bias=True, activation="gelu"),
        norm=NormSpec("layernorm", 2),
        tie_word_embeddings=_bool(cfg, "tie_word_embeddings", False),
        max_position_embeddings=int(cfg.get("max_position_embeddings") or 0),
        torch_dtype=str(cfg.get("torch_dtype") or ""),
    )


def _bert(name: str, cfg: Config) -> ModelSpec:
    """BERT encoder as ``BertModel``: embeddings (+ positions, token types, LayerNorm), pooler."""
    hidden = _int(cfg, "hidden_size", 768)
    heads = _int(cfg, "num_attention_heads", 12)
    if hidden % heads:
        raise ModelConfigError(
            N_("hidden_size {hidden} is not divisible by num_attention_heads {heads}").format(
                hidden=hidden, heads=heads
            )
        )
    return ModelSpec(
        name=name,
        architecture="bert",
        vocab_size=_int(cfg, "vocab_size", 30522),
        hidden_size=hidden,
        num_layers=_int(cfg, "num_hidden_layers", 12),
        attention=AttentionSpec(heads, heads, hidden // heads, hidden // heads, True, True),
        mlp=MLPSpec(
            _int(cfg, "intermediate_size", 3072), gated=False, bias=True, activation="gelu"
        ),
        norm=NormSpec("layernorm", 2, final=False),
        learned_positions=_int(cfg, "max_position_embeddings", 512),
        token_types=_int(cfg, "type_vocab_size", 2),
        embedding_norm=True,
        pooler=True,
        is_decoder=False,
        max_position_embeddings=_int(cfg, "max_position_embeddings", 512),
        torch_dtype=str(cfg.get("torch_dtype") or ""),
        dropout=max(
            _prob(cfg, k, 0.1) for k in ("hidden_dropout_prob", "attention_probs_dropout_prob")
        ),
        notes=(N_("BertModel with its pooler; the masked-LM head is not counted"),),
    )


def _replace_notes(spec: ModelSpec, notes: tuple[str, ...]) -> ModelSpec:
    return replace(spec, notes=notes)


#: model_type -> reader. The supported families.
READERS: dict[str, Callable[[str, Config], ModelSpec]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gemma3": _gemma3,
    "phi3": _phi3,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "bert": _bert,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}


def _llava(name: str, cfg: Config) -> ModelSpec:
    from suanli.models.vision import llava_spec

    return llava_spec(name, cfg, lambda text_cfg, text_name: spec_from_config(text_cfg, text_name))


def _qwen_vl(name: str, cfg: Config) -> ModelSpec:
    from suanli.models.vision import qwen2_5_vl_spec

    return qwen2_5_vl_spec(
        name, cfg, lambda text_cfg, text_name: spec_from_config(text_cfg, text_name)
    )


def _internvl(name: str, cfg: Config) -> ModelSpec:
    from suanli.models.vision import internvl_spec

    return internvl_spec(
        name, cfg, lambda text_cfg, text_name: spec_from_config(text_cfg, text_name)
    )


READERS["llava"] = _llava
READERS["internvl"] = _internvl
READERS["qwen2_5_vl"] = _qwen_vl
READERS["qwen2_vl"] = _qwen_vl
READERS.update(FAMILY_READERS)
READERS.update(MOE_READERS)

SUPPORTED_MODEL_TYPES = tuple(sorted(READERS))


def spec_from_config(cfg: Config, name: str = "model") -> ModelSpec:
    """A :class:`ModelSpec` from a parsed ``config.json``; raises :class:`ModelConfigError`."""
    if not isinstance(cfg, Mapping):
        raise ModelConfigError(N_("config.json must hold a JSON object; check the file"))
    model_type = cfg.get("model_type")
    if not model_type:
        raise ModelConfigError(N_("config.json has no 'model_type'; add it (e.g. \"llama\")"))
    if not isinstance(model_type, str) or not _MODEL_TYPE.fullmatch(model_type):
        # a name, never text to print: no control characters or markup reach a terminal
        raise ModelConfigError(
            N_(
                "config field 'model_type' must be a short name of letters, digits, '_', '.' "
                "or '-' (like \"llama\")"
            )
        )
    try:
        cfg = check_config(cfg)
    except ConfigFieldError as exc:
        raise ModelConfigError(message_of(exc)) from None
    # Keys the file leaves out take their configuration class's default, as in transformers.
    filled = fill_defaults(cfg)
    reader = READERS.get(str(model_type))
    if reader is None:
        from suanli.models.generic import generic_spec

        reader = generic_spec
    try:
        spec = reader(name, filled.config)
    except FamilyConfigError as exc:
        raise ModelConfigError(message_of(exc)) from None
    try:
        check_routing(spec)
    except ConfigFieldError as exc:
        raise ModelConfigError(message_of(exc)) from None
    note = defaults_note(filled)
    return spec if note is None else _replace_notes(spec, (*spec.notes, note))
