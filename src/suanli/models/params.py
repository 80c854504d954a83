"""Exact parameter counts from a ModelSpec.

Every count is the sum of the weight (and bias) shapes of the modules that Hugging Face
``transformers`` builds for the family, so the total equals ``sum(p.numel())`` of the real model
(tests check this on the meta device for every family) and the published checkpoint counts in
``docs/models.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from suanli.models.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec, NormSpec

COMPONENTS = (
    "embeddings",
    "attention",
    "mlp",
    "experts",
    "shared_experts",
    "router",
    "norms",
    "lm_head",
    "pooler",
    "vision",
)


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts of a model: total, active per token, and by component."""

    total: int
    active: int
    """Parameters a token passes through: the total minus the routed experts it does not use."""
    by_component: dict[str, int]
    """Keys from :data:`COMPONENTS`; they add up to ``total``."""


def linear(n_in: int, n_out: int, bias: bool) -> int:
    """A ``nn.Linear(n_in, n_out)``: ``n_in * n_out`` weights plus ``n_out`` biases."""
    return n_in * n_out + (n_out if bias else 0)


def attention_params(att: AttentionSpec, hidden: int) -> int:
    """Parameters of one attention block.

    MHA/GQA/MQA: Q is ``h x heads*d``, K and V are ``h x kv_heads*d`` each, O is ``heads*d x h``.
    MLA (DeepSeek-V2 paper, section 2.1.2; transformers ``DeepseekV3Attention``): a low-rank query
    (``h x q_rank``, a norm, ``q_rank x heads*d``), a joint KV down-projection
    ``h x (kv_rank + rope)``, its norm, the up-projection ``kv_rank x heads*(nope + v)``, and O.
    """
    if att.kind == "mla":
        q_width = att.num_heads * att.head_dim
        if att.q_lora_rank:
            q = (
                linear(hidden, att.q_lora_rank, att.qkv_bias)
                + att.q_lora_rank
                + linear(att.q_lora_rank, q_width, False)
            )
        else:
            q = linear(hidden, q_width, False)
        kv_down = linear(hidden, att.kv_lora_rank + att.qk_rope_head_dim, att.qkv_bias)
        kv_up = linear(
            att.kv_lora_rank, att.num_heads * (att.qk_nope_head_dim + att.v_head_dim), False
        )
        o = linear(att.num_heads * att.v_head_dim, hidden, att.o_bias)
        return q + kv_down + att.kv_lora_rank + kv_up + o
    q = linear(hidden, att.num_heads * att.head_dim, att.qkv_bias)
    kv = 2 * linear(hidden, att.num_kv_heads * att.head_dim, att.qkv_bias)
    o = linear(att.num_heads * att.v_head_dim, hidden, att.o_bias)
    qk_norm = (
        (att.qk_norm_params if att.qk_norm_params >= 0 else 2 * att.head_dim) if att.qk_norm else 0
    )
    return q + kv + o + qk_norm + att.extra_params


def mlp_params(mlp: MLPSpec, hidden: int) -> int:
    """A gated MLP has gate, up (``h x I``) and down (``I x h``); a plain one has up and down."""
    up = linear(hidden, mlp.intermediate_size, mlp.bias)
    down = linear(mlp.intermediate_size, hidden, mlp.bias)
    return (2 * up if mlp.gated else up) + down


def norm_params(norm: NormSpec, width: int) -> int:
    """RMSNorm keeps a weight; LayerNorm a weight and a bias (or only a weight, or nothing)."""
    return width * {"layernorm": 2, "none": 0}.get(norm.kind, 1)


def router_params(moe: MoESpec, hidden: int) -> int:
    """Router ``h x experts`` (no bias), plus DeepSeek-V3's score-correction bias per expert and
    Qwen-MoE's shared-expert gate ``h x 1``."""
    n = hidden * moe.num_experts
    if moe.router_bias:
        n += moe.num_experts
    if moe.shared_expert_gate:
        n += hidden
    return n


@lru_cache(maxsize=256)
def count_params(spec: ModelSpec) -> ParamCount:
    """Exact parameter counts of ``spec``: total, active per token and by component."""
    h = spec.hidden_size
    parts = dict.fromkeys(COMPONENTS, 0)
    parts["embeddings"] = (spec.vocab_size + spec.learned_positions + spec.token_types) * h
    if spec.embedding_norm:
        parts["embeddings"] += norm_params(spec.norm, h)
    parts["embeddings"] += spec.embedding_extra
    parts["attention"] = spec.num_layers * attention_params(spec.attention, h)
    if spec.mlp is not None:
        parts["mlp"] = spec.num_dense_layers * mlp_params(spec.mlp, h)
    inactive = 0
    if spec.moe is not None and spec.moe_layers:
        moe = spec.moe
        n_moe = len(spec.moe_layers)
        expert = mlp_params(moe.expert, h)
        parts["experts"] = n_moe * moe.num_experts * expert
        if moe.shared_expert is not None:
            parts["shared_experts"] = n_moe * mlp_params(moe.shared_expert, h)
        parts["router"] = n_moe * router_params(moe, h)
        inactive = n_moe * (moe.num_experts - moe.experts_per_token) * expert
    parts["norms"] = spec.num_layers * spec.norm.per_layer * norm_params(spec.norm, h)
    if spec.norm.final:
        parts["norms"] += norm_params(spec.norm, h)
    if spec.is_decoder and not spec.tie_word_embeddings:
        parts["lm_head"] = spec.vocab_size * h
    if spec.is_decoder and spec.lm_head_bias:
        parts["lm_head"] += spec.vocab_size
    if spec.pooler:
        parts["pooler"] = linear(h, h, True)
    if spec.vision is not None:
        parts["vision"] = spec.vision.params
    total = sum(parts.values())
    return ParamCount(total=total, active=total - inactive, by_component=parts)
