"""ModelSpec: the architecture facts every estimate needs, as frozen dataclasses.

A spec is built from a Hugging Face ``config.json`` (see :mod:`suanli.models.config`); the
parameter count is derived from it (see :mod:`suanli.models.params`). Sizes are element counts;
nothing here holds bytes, because the dtype belongs to the workload, not the architecture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suanli.hashing import hash_once


@dataclass(frozen=True)
class AttentionSpec:
    """Self-attention of one decoder (or encoder) layer."""

    num_heads: int
    """Query heads."""
    num_kv_heads: int
    """Key/value heads: equal to ``num_heads`` for MHA, 1 for MQA, in between for GQA."""
    head_dim: int
    """Query/key width per head (for MLA: nope + rope parts)."""
    v_head_dim: int
    """Value width per head (equals ``head_dim`` except for MLA)."""
    qkv_bias: bool = False
    """Biases on the Q, K and V projections."""
    o_bias: bool = False
    """Bias on the output projection."""
    qk_norm: bool = False
    """Per-head RMSNorm on queries and keys (Qwen3, Gemma 3)."""
    fused_qkv: bool = False
    """Q, K and V computed by one matrix (GPT-2, GPT-NeoX, Phi-3); same count, one kernel."""
    # Multi-head latent attention (DeepSeek-V2/V3); zero when not MLA.
    q_lora_rank: int = 0
    """Rank of the low-rank query projection (0: a full-rank q_proj)."""
    kv_lora_rank: int = 0
    """Width of the compressed KV latent (what the MLA KV cache stores per token)."""
    qk_rope_head_dim: int = 0
    """Rotary part of each query/key head; MLA caches one shared rope key per token."""
    qk_nope_head_dim: int = 0
    """Non-rotary part of each query/key head (MLA)."""
    sliding_window: int | None = None
    """Window length of sliding-window layers, when the model has them."""
    extra_params: int = 0
    """Other parameters of one attention block (gpt-oss's per-head attention sinks)."""
    qk_norm_params: int = -1
    """Parameters of the query/key norms when they are not two per-head RMSNorm weights
    (OLMo 2 normalises the whole projection, StableLM and Persimmon keep per-head LayerNorms);
    -1: ``2 x head_dim`` when ``qk_norm``."""

    @property
    def kind(self) -> str:
        """``mla``, ``mha``, ``mqa`` or ``gqa``."""
        if self.kv_lora_rank:
            return "mla"
        if self.num_kv_heads == self.num_heads:
            return "mha"
        if self.num_kv_heads == 1:
            return "mqa"
        return "gqa"


@dataclass(frozen=True)
class MLPSpec:
    """A dense feed-forward block."""

    intermediate_size: int
    gated: bool
    """Gated (SwiGLU/GeGLU: gate, up and down matrices) or plain (up and down)."""
    bias: bool = False
    activation: str = "silu"


@dataclass(frozen=True)
class MoESpec:
    """A mixture-of-experts feed-forward block."""

    num_experts: int
    """Routed experts per MoE layer."""
    experts_per_token: int
    """Routed experts each token uses (top-k)."""
    expert: MLPSpec
    """One routed expert."""
    shared_expert: MLPSpec | None = None
    """Always-on shared expert(s), merged into one MLP of their total width."""
    shared_expert_gate: bool = False
    """A sigmoid gate (hidden -> 1) on the shared expert (Qwen-MoE)."""
    router_bias: bool = False
    """A per-expert score-correction bias stored with the router (DeepSeek-V3)."""


@dataclass(frozen=True)
class NormSpec:
    """Normalisation layers."""

    kind: str
    """``rmsnorm`` (a weight), ``layernorm`` (a weight and a bias), ``layernorm-nobias`` (a
    weight only: MPT), ``layernorm-fp32`` (a weight only, computed in Python in fp32: Cohere) or
    ``none`` (no parameters: OLMo's non-parametric LayerNorm)."""
    per_layer: int
    """Hidden-size norms in each layer (2 for pre-norm blocks, 4 for Gemma 2/3)."""
    final: bool = True
    """A norm after the last layer."""


@dataclass(frozen=True)
class ModelSpec:
    """Everything the estimators need about a model's architecture."""

    name: str
    """Preset name, hub id or path the spec came from."""
    architecture: str
    """The Hugging Face ``model_type`` (``llama``, ``qwen3_moe``, ...)."""
    vocab_size: int
    hidden_size: int
    num_layers: int
    attention: AttentionSpec
    mlp: MLPSpec | None
    """The dense MLP (``None`` when every layer is MoE)."""
    norm: NormSpec
    moe: MoESpec | None = None
    moe_layers: tuple[int, ...] = ()
    """Indices of the layers whose feed-forward block is the MoE one."""
    tie_word_embeddings: bool = False
    """The LM head shares the token embedding matrix."""
    learned_positions: int = 0
    """Rows of a learned position-embedding table (GPT-2, BERT); 0 for rotary models."""
    token_types: int = 0
    """Rows of the token-type table (BERT)."""
    embedding_norm: bool = False
    """A norm right after the embeddings (BERT)."""
    pooler: bool = False
    """A pooler dense layer on the first token (BertModel)."""
    is_decoder: bool = True
    """False for encoder-only models (no LM head, no KV cache)."""
    max_position_embeddings: int = 0
    sliding_window_layers: tuple[int, ...] = ()
    """Indices of layers that attend over a sliding window only."""
    torch_dtype: str = ""
    """The dtype the checkpoint was published in, if the config says."""
    dropout: float = 0.0
    """Dropout probability during training, from the config (GPT-2 and BERT: 0.1)."""
    attn_logit_softcap: float = 0.0
    """tanh soft-capping of attention scores (Gemma 2: 50); 0 when absent."""
    final_logit_softcap: float = 0.0
    """tanh soft-capping of the output logits (Gemma 2: 30); 0 when absent."""
    vision: Any = None
    """A vision tower and projector (:class:`suanli.models.vision.VisionSpec`) for
    vision-language models; None for text-only models."""
    lm_head_bias: bool = False
    """The LM head has a bias (GPT-J, CodeGen, Phi-2)."""
    parallel_block: bool = False
    """Attention and MLP read the same normalised input and add to the residual together
    (GPT-J, Falcon, Phi-2, Cohere) instead of one after the other."""
    embedding_extra: int = 0
    """Parameters of embedding-side projections outside the table (OPT's project_in/out)."""
    traced_layer_bytes: tuple[float, float] | None = None
    """Bytes one decoder layer saves for backward per token, ``a + b·seq``, traced on the meta
    device in bf16 with eager attention (``models/traced.py``); None when not traced."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What was left out or assumed while reading the config."""

    def __hash__(self) -> int:
        return hash_once(self)

    @property
    def num_dense_layers(self) -> int:
        """Layers whose feed-forward block is a dense MLP."""
        return self.num_layers - len(self.moe_layers)

    @property
    def is_moe(self) -> bool:
        """True when some layers route tokens to experts."""
        return self.moe is not None and bool(self.moe_layers)
