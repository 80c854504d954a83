"""More transformer families read from ``config.json``, each exact against ``transformers``.

Each reader mirrors the modules ``transformers`` builds for its ``model_type`` (the family's
``configuration_*.py`` defaults and ``modeling_*.py`` layout, v5): which linears carry biases,
which norms exist and whether they have a bias, whether attention and MLP run in parallel, how
positions are embedded, whether the LM head is tied or has a bias. tests/models checks every
family's parameter count against a model ``transformers`` builds from the same config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.i18n import N_
from suanli.models.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec, NormSpec

Config = Any


class FamilyConfigError(ValueError):
    """The config lacks a field the family needs, or holds one of the wrong type."""


def get_int(cfg: Config, keys: tuple[str, ...], default: int | None = None) -> int:
    """The first of ``keys`` the config sets, as a positive integer (else ``default``)."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise FamilyConfigError(
                N_("config field {key!r} must be a positive integer, got {value!r}").format(
                    key=key, value=value
                )
            )
        return value
    if default is None:
        raise FamilyConfigError(
            N_("config.json is missing {keys}; add it (the model's {first})").format(
                keys=" / ".join(keys), first=keys[0]
            )
        )
    return default


def get_bool(cfg: Config, keys: tuple[str, ...], default: bool) -> bool:
    """The first of ``keys`` the config sets, as true/false (else ``default``)."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise FamilyConfigError(
                N_("config field {key!r} must be true or false, got {value!r}").format(
                    key=key, value=value
                )
            )
        return value
    return default


def activation_of(cfg: Config, default: str) -> str:
    for key in ("hidden_act", "activation_function", "hidden_activation", "ffn_act"):
        if isinstance(cfg.get(key), str):
            return str(cfg[key])
    return default


def build(
    name: str,
    cfg: Config,
    *,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    gated: bool,
    norm_kind: str,
    norms_per_layer: int,
    tie: bool,
    qkv_bias: bool = False,
    o_bias: bool = False,
    mlp_bias: bool = False,
    activation: str = "silu",
    final_norm: bool = True,
    learned_positions: int = 0,
    embedding_norm: bool = False,
    lm_head_bias: bool = False,
    parallel: bool = False,
    fused_qkv: bool = False,
    qk_norm: bool = False,
    qk_norm_params: int = -1,
    attention_extra: int = 0,
    embedding_extra: int = 0,
    dropout: float = 0.0,
    moe: MoESpec | None = None,
    moe_layers: tuple[int, ...] = (),
    notes: tuple[str, ...] = (),
) -> ModelSpec:
    """A decoder of any of these families, from its resolved sizes and switches."""
    if heads % kv_heads:
        raise FamilyConfigError(
            N_("{heads} attention heads are not a multiple of {kv_heads} KV heads").format(
                heads=heads, kv_heads=kv_heads
            )
        )
    mlp = (
        MLPSpec(intermediate, gated=gated, bias=mlp_bias, activation=activation)
        if len(moe_layers) < layers
        else None
    )
    return ModelSpec(
        name=name,
        architecture=str(cfg["model_type"]),
        vocab_size=get_int(cfg, ("vocab_size", "padded_vocab_size")),
        hidden_size=hidden,
        num_layers=layers,
        attention=AttentionSpec(
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            qkv_bias=qkv_bias,
            o_bias=o_bias,
            qk_norm=qk_norm,
            fused_qkv=fused_qkv,
            qk_norm_params=qk_norm_params,
            extra_params=attention_extra,
        ),
        mlp=mlp,
        norm=NormSpec(norm_kind, norms_per_layer, final=final_norm),
        moe=moe,
        moe_layers=moe_layers,
        tie_word_embeddings=tie,
        learned_positions=learned_positions,
        embedding_norm=embedding_norm,
        max_position_embeddings=int(
            cfg.get("max_position_embeddings")
            or cfg.get("n_positions")
            or cfg.get("max_seq_len")
            or 0
        ),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or ""),
        dropout=dropout,
        lm_head_bias=lm_head_bias,
        parallel_block=parallel,
        embedding_extra=embedding_extra,
        notes=notes,
    )


def sizes(cfg: Config, inter_default: Callable[[int], int] | None = None) -> dict[str, Any]:
    """Hidden size, layers, heads, KV heads, head dim and MLP width, in their common spellings."""
    hidden = get_int(cfg, ("hidden_size", "n_embd", "d_model", "dim"))
    heads = get_int(
        cfg, ("num_attention_heads", "n_head", "n_heads", "num_heads", "attention_heads")
    )
    kv = get_int(cfg, ("num_key_value_heads", "num_kv_heads", "n_head_kv", "kv_n_heads"), heads)
    head_dim = get_int(cfg, ("head_dim",), hidden // heads if hidden % heads == 0 else None)
    layers = get_int(cfg, ("num_hidden_layers", "n_layer", "n_layers", "num_layers"))
    inter = get_int(
        cfg,
        ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", "d_ff"),
        inter_default(hidden) if inter_default else None,
    )
    return {
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv,
        "head_dim": head_dim,
        "layers": layers,
        "intermediate": inter,
    }


def llama_like(name: str, cfg: Config, **switches: Any) -> ModelSpec:
    """Pre-norm RMSNorm decoders with a gated MLP (Llama's layout under another name)."""
    s = sizes(cfg)
    bias = get_bool(cfg, ("attention_bias", "use_bias"), False)
    options: dict[str, Any] = {
        "gated": True,
        "norm_kind": "rmsnorm",
        "norms_per_layer": 2,
        "tie": get_bool(cfg, ("tie_word_embeddings",), False),
        "qkv_bias": bias,
        "o_bias": bias,
        "mlp_bias": get_bool(cfg, ("mlp_bias", "use_bias"), False),
        "activation": activation_of(cfg, "silu"),
    }
    options.update(switches)
    return build(name, cfg, **s, **options)


def _gptj(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=1,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        mlp_bias=True,
        activation=activation_of(cfg, "gelu_new"),
        lm_head_bias=True,
        parallel=True,
        fused_qkv=cfg["model_type"] == "codegen",
    )


def _phi(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    qk_ln = get_bool(cfg, ("qk_layernorm",), False)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=1,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        activation=activation_of(cfg, "gelu_new"),
        lm_head_bias=True,
        parallel=True,
        qk_norm=qk_ln,
        qk_norm_params=4 * s["head_dim"],
    )


def _falcon(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    # The original releases say RefinedWebModel (7B) and RefinedWeb (40B, the new decoder).
    new_arch = get_bool(cfg, ("new_decoder_architecture",), cfg["model_type"] == "RefinedWeb")
    if new_arch:
        kv = get_int(cfg, ("num_kv_heads", "n_head_kv"), s["heads"])
    elif get_bool(cfg, ("multi_query",), True):
        kv = 1
    else:
        kv = s["heads"]
    s["kv_heads"] = kv
    bias = get_bool(cfg, ("bias",), False)
    parallel = get_bool(cfg, ("parallel_attn",), True)
    norms = 2 if new_arch and get_int(cfg, ("num_ln_in_parallel_attn",), 2) == 2 else 1
    if not parallel:
        norms = 2
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=norms,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        activation=activation_of(cfg, "gelu"),
        parallel=parallel,
        fused_qkv=True,
    )


def _opt(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    bias = get_bool(cfg, ("enable_bias",), True)
    proj = get_int(cfg, ("word_embed_proj_dim",), s["hidden"])
    tie = get_bool(cfg, ("tie_word_embeddings",), True)
    extra = 0
    if proj != s["hidden"]:
        # The token table (and an untied head) are proj wide, projected in and out of hidden.
        vocab = get_int(cfg, ("vocab_size",))
        extra = 2 * proj * s["hidden"] + vocab * (proj - s["hidden"]) * (1 if tie else 2)
    # OPT's learned positions are offset by 2 (OPTLearnedPositionalEmbedding).
    positions = get_int(cfg, ("max_position_embeddings",)) + 2
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm"
        if get_bool(cfg, ("layer_norm_elementwise_affine",), True)
        else "none",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        activation=activation_of(cfg, "relu"),
        final_norm=get_bool(cfg, ("do_layer_norm_before",), True)
        and not cfg.get("_remove_final_layer_norm"),
        learned_positions=positions,
        embedding_extra=extra,
        notes=(N_("word embeddings of width word_embed_proj_dim, projected in and out"),)
        if extra
        else (),
    )


def _bloom(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        activation="gelu",
        embedding_norm=True,
        fused_qkv=True,
        notes=(N_("ALiBi positions (no position parameters)"),),
    )


def _mpt(name: str, cfg: Config) -> ModelSpec:
    hidden = get_int(cfg, ("d_model",))
    heads = get_int(cfg, ("n_heads",))
    attn = cfg.get("attn_config") or {}
    kv = int(attn.get("kv_n_heads") or heads) if isinstance(attn, dict) else heads
    ratio = cfg.get("expansion_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
        raise FamilyConfigError(
            N_("config field 'expansion_ratio' must be positive, got {value!r}").format(value=ratio)
        )
    return build(
        name,
        cfg,
        hidden=hidden,
        layers=get_int(cfg, ("n_layers",)),
        heads=heads,
        kv_heads=kv,
        head_dim=hidden // heads,
        intermediate=int(ratio * hidden),
        gated=False,
        # transformers' MPT builds every linear and norm without a bias, whatever no_bias says.
        norm_kind="layernorm-nobias",
        norms_per_layer=2,
        tie=True,
        activation="gelu",
        fused_qkv=True,
        notes=(N_("ALiBi positions (no position parameters)"),),
    )


def _starcoder2(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    bias = get_bool(cfg, ("use_bias",), True)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        activation=activation_of(cfg, "gelu_pytorch_tanh"),
    )


def _gpt_bigcode(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    # One shared KV head with multi_query, else one per head (num_key_value_heads is unused).
    s["kv_heads"] = 1 if get_bool(cfg, ("multi_query",), True) else s["heads"]
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        activation=activation_of(cfg, "gelu_pytorch_tanh"),
        fused_qkv=True,
        learned_positions=get_int(cfg, ("n_positions", "max_position_embeddings")),
    )


def _gpt_neo(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg, lambda h: 4 * h)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        o_bias=True,
        mlp_bias=True,
        activation=activation_of(cfg, "gelu_new"),
        learned_positions=get_int(cfg, ("max_position_embeddings",)),
    )


def _olmo(name: str, cfg: Config) -> ModelSpec:
    # OlmoLayerNorm has neither weight nor bias.
    return llama_like(name, cfg, norm_kind="none")


def _olmo2(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    # q_norm and k_norm are RMSNorms over the whole projection, not per head.
    qk = (s["heads"] + s["kv_heads"]) * s["head_dim"]
    return llama_like(name, cfg, qk_norm=True, qk_norm_params=qk)


def _cohere(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    qk = get_bool(cfg, ("use_qk_norm",), False)
    return build(
        name,
        cfg,
        **s,
        gated=True,
        # CohereLayerNorm: a weight, no bias, computed in Python in fp32.
        norm_kind="layernorm-fp32",
        norms_per_layer=1,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=get_bool(cfg, ("attention_bias",), False),
        o_bias=get_bool(cfg, ("attention_bias",), False),
        activation=activation_of(cfg, "silu"),
        parallel=True,
        qk_norm=qk,
        qk_norm_params=(s["heads"] + s["kv_heads"]) * s["head_dim"],
    )


def _glm4(name: str, cfg: Config) -> ModelSpec:
    return llama_like(
        name,
        cfg,
        norms_per_layer=4,
        qkv_bias=get_bool(cfg, ("attention_bias",), True),
        o_bias=False,
    )


def _glm(name: str, cfg: Config) -> ModelSpec:
    return llama_like(name, cfg, qkv_bias=get_bool(cfg, ("attention_bias",), True), o_bias=False)


def _seed_oss(name: str, cfg: Config) -> ModelSpec:
    return llama_like(
        name,
        cfg,
        qkv_bias=get_bool(cfg, ("attention_bias",), True),
        o_bias=get_bool(cfg, ("attention_out_bias",), False),
    )


def _stablelm(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    parallel = get_bool(cfg, ("use_parallel_residual",), False)
    qk = get_bool(cfg, ("qk_layernorm",), False)
    return build(
        name,
        cfg,
        **s,
        gated=True,
        norm_kind="layernorm",
        norms_per_layer=1 if parallel else 2,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        qkv_bias=get_bool(cfg, ("use_qkv_bias",), False),
        activation=activation_of(cfg, "silu"),
        parallel=parallel,
        qk_norm=qk,
        qk_norm_params=(s["heads"] + s["kv_heads"]) * s["head_dim"],  # per head, weight only
    )


def _arcee(name: str, cfg: Config) -> ModelSpec:
    # Llama's layout with a plain (ungated) ReLU-squared MLP.
    return llama_like(name, cfg, gated=False, activation=activation_of(cfg, "relu2"))


def _exaone4(name: str, cfg: Config) -> ModelSpec:
    # Per-head q/k RMSNorms; the two norms sit after attention and after the MLP.
    return llama_like(name, cfg, qk_norm=True)


def _persimmon(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    qk = get_bool(cfg, ("qk_layernorm",), True)
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        activation=activation_of(cfg, "relu2"),
        fused_qkv=True,
        # One LayerNorm (weight and bias) of head_dim shared by the query heads, one by the keys.
        qk_norm=qk,
        qk_norm_params=4 * s["head_dim"],
    )


def _biogpt(name: str, cfg: Config) -> ModelSpec:
    """BioGPT and XGLM: OPT-style blocks (biases everywhere, LayerNorm, plain MLP)."""
    s = sizes(cfg, lambda h: 4 * h)
    learned = cfg["model_type"] == "biogpt"
    return build(
        name,
        cfg,
        **s,
        gated=False,
        norm_kind="layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), True),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        activation=activation_of(cfg, "gelu"),
        # BioGPT learns max_position_embeddings + 2 positions; XGLM's are sinusoidal.
        learned_positions=get_int(cfg, ("max_position_embeddings",)) + 2 if learned else 0,
        notes=() if learned else (N_("sinusoidal positions (no parameters)"),),
    )


def _apertus(name: str, cfg: Config) -> ModelSpec:
    # A plain MLP with the xIELU activation (two learned scalars per layer), per-head q/k norms.
    return llama_like(
        name,
        cfg,
        gated=False,
        qk_norm=True,
        activation=activation_of(cfg, "xielu"),
        attention_extra=2,
    )


def _bitnet(name: str, cfg: Config) -> ModelSpec:
    # BitNet b1.58 adds an RMSNorm before o_proj (width h) and one before down_proj (width I);
    # both are counted with the attention block.
    s = sizes(cfg)
    return llama_like(
        name,
        cfg,
        activation=activation_of(cfg, "relu2"),
        attention_extra=s["hidden"] + s["intermediate"],
    )


#: model_type -> reader. Families in transformers whose layout these readers reproduce.
FAMILY_READERS: dict[str, Callable[[str, Config], ModelSpec]] = {
    "gptj": _gptj,
    "codegen": _gptj,
    "phi": _phi,
    "falcon": _falcon,
    "RefinedWebModel": _falcon,
    "RefinedWeb": _falcon,
    "opt": _opt,
    "bloom": _bloom,
    "mpt": _mpt,
    "starcoder2": _starcoder2,
    "gpt_bigcode": _gpt_bigcode,
    "gpt_neo": _gpt_neo,
    "olmo": _olmo,
    "olmo2": _olmo2,
    "cohere": _cohere,
    "glm4": _glm4,
    "glm": _glm,
    "seed_oss": _seed_oss,
    "stablelm": _stablelm,
    "ernie4_5": llama_like,
    "granite": llama_like,
    "helium": llama_like,
    "smollm3": llama_like,
    "arcee": _arcee,
    "exaone4": _exaone4,
    "persimmon": _persimmon,
    "biogpt": _biogpt,
    "xglm": _biogpt,
    "cohere2": _cohere,
    "apertus": _apertus,
    "bitnet": _bitnet,
}
