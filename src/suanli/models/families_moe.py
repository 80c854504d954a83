"""Mixture-of-experts families read from ``config.json``, exact against ``transformers``
(OLMoE, GraniteMoE, PhiMoE, gpt-oss, GLM-4.5, ERNIE 4.5 MoE, Llama 4). The shared helpers and the
dense families are in :mod:`suanli.models.families`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.models.families import activation_of, build, get_bool, get_int, llama_like, sizes
from suanli.models.spec import MLPSpec, ModelSpec, MoESpec

Config = Any


def _moe_llama_like(name: str, cfg: Config, **switches: Any) -> ModelSpec:
    """Llama-layout decoders whose every MLP is a set of routed gated experts (OLMoE,
    GraniteMoE, PhiMoE): the router is a bias-free linear, no shared expert."""
    s = sizes(cfg)
    experts = get_int(cfg, ("num_experts", "num_local_experts"))
    moe = MoESpec(
        num_experts=experts,
        experts_per_token=get_int(cfg, ("num_experts_per_tok",), 2),
        expert=MLPSpec(s["intermediate"], gated=True, activation=activation_of(cfg, "silu")),
    )
    return llama_like(name, cfg, moe=moe, moe_layers=tuple(range(s["layers"])), **switches)


def _olmoe(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    # OLMoE's q/k norms span the whole projections, like OLMo 2's.
    qk = (s["heads"] + s["kv_heads"]) * s["head_dim"]
    return _moe_llama_like(name, cfg, qk_norm=True, qk_norm_params=qk)


def _phimoe(name: str, cfg: Config) -> ModelSpec:
    return _moe_llama_like(name, cfg, norm_kind="layernorm")


def _gpt_oss(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    moe = MoESpec(
        num_experts=get_int(cfg, ("num_local_experts",)),
        experts_per_token=get_int(cfg, ("num_experts_per_tok",), 4),
        expert=MLPSpec(s["intermediate"], gated=True, bias=True, activation="swiglu"),
        router_bias=True,
    )
    bias = get_bool(cfg, ("attention_bias",), True)
    return llama_like(
        name,
        cfg,
        qkv_bias=bias,
        o_bias=bias,
        moe=moe,
        moe_layers=tuple(range(s["layers"])),
        attention_extra=s["heads"],  # one learned attention sink per head
    )


def _glm4_moe(name: str, cfg: Config) -> ModelSpec:
    """GLM-4.5: dense layers first, then routed experts, shared experts and a router with a
    score-correction bias (DeepSeek-V3's MoE under GLM's attention)."""
    s = sizes(cfg)
    width = get_int(cfg, ("moe_intermediate_size",))
    shared = cfg.get("n_shared_experts") or 0
    moe = MoESpec(
        num_experts=get_int(cfg, ("n_routed_experts",)),
        experts_per_token=get_int(cfg, ("num_experts_per_tok",), 8),
        expert=MLPSpec(width, gated=True),
        shared_expert=MLPSpec(width * int(shared), gated=True) if shared else None,
        # The router's e_score_correction_bias is a buffer in transformers, not a parameter.
        router_bias=False,
    )
    first_dense = int(cfg.get("first_k_dense_replace") or 0)
    bias = get_bool(cfg, ("attention_bias",), False)
    return llama_like(
        name,
        cfg,
        qkv_bias=bias,
        o_bias=False,
        qk_norm=get_bool(cfg, ("use_qk_norm",), False),
        moe=moe,
        moe_layers=tuple(range(first_dense, s["layers"])),
    )


def _ernie4_5_moe(name: str, cfg: Config) -> ModelSpec:
    s = sizes(cfg)
    width = get_int(cfg, ("moe_intermediate_size",))
    shared = cfg.get("moe_num_shared_experts") or 0
    moe = MoESpec(
        num_experts=get_int(cfg, ("moe_num_experts",)),
        experts_per_token=get_int(cfg, ("moe_k",), 2),
        expert=MLPSpec(width, gated=True),
        shared_expert=MLPSpec(width * int(shared), gated=True) if shared else None,
        router_bias=True,
    )
    # Ernie4_5_MoeDecoderLayer: a layer is sparse when (i + 1) % interval == 0 and
    # start <= i <= end; the class's end of -1 means the last layer.
    start = int(cfg.get("moe_layer_start_index") or 0)
    end = cfg.get("moe_layer_end_index")
    end = s["layers"] - 1 if end is None or end == -1 else int(end)
    step = get_int(cfg, ("moe_layer_interval",), 1)
    layers = tuple(i for i in range(start, min(end, s["layers"] - 1) + 1) if (i + 1) % step == 0)
    return llama_like(
        name, cfg, tie=get_bool(cfg, ("tie_word_embeddings",), True), moe=moe, moe_layers=layers
    )


def _llama4_text(name: str, cfg: Config) -> ModelSpec:
    """Llama 4 text: MoE every ``interleave_moe_layer_step`` layers (experts and one shared expert
    of ``intermediate_size``), dense layers of ``intermediate_size_mlp``; its q/k norm is a
    parameter-free L2 norm."""
    s = sizes(cfg)
    width = get_int(cfg, ("intermediate_size",))
    moe = MoESpec(
        num_experts=get_int(cfg, ("num_local_experts",)),
        experts_per_token=get_int(cfg, ("num_experts_per_tok",), 1),
        expert=MLPSpec(width, gated=True),
        shared_expert=MLPSpec(width, gated=True),
    )
    step = get_int(cfg, ("interleave_moe_layer_step",), 1)
    layers = cfg.get("moe_layers")
    if not (isinstance(layers, list) and all(isinstance(i, int) for i in layers)):
        layers = list(range(step - 1, s["layers"], step))
    layers = [i for i in layers if 0 <= i < s["layers"]]
    s["intermediate"] = get_int(cfg, ("intermediate_size_mlp",), width)
    options: dict[str, Any] = {"gated": True, "norm_kind": "rmsnorm", "norms_per_layer": 2}
    return build(
        name,
        cfg,
        **s,
        **options,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        moe=moe,
        moe_layers=tuple(sorted(set(layers))),
    )


#: model_type -> reader for the MoE families.
MOE_READERS: dict[str, Callable[[str, Config], ModelSpec]] = {
    "olmoe": _olmoe,
    "granitemoe": _moe_llama_like,
    "phimoe": _phimoe,
    "gpt_oss": _gpt_oss,
    "glm4_moe": _glm4_moe,
    "ernie4_5_moe": _ernie4_5_moe,
    "llama4_text": _llama4_text,
}
