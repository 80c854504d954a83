"""The text encoders of the pipelines: CLIP (transformers ``CLIPTextModel`` and
``CLIPTextModelWithProjection``) and the T5 v1.1 encoder (``T5EncoderModel``), walked from their
transformers configs over one prompt of ``tokens`` tokens."""

from __future__ import annotations

from typing import Any

from suanli.diffusion.graph import Graph


def walk_clip_text(
    cfg: dict[str, Any], batch: int, tokens: int, projection: bool, dtype_bytes: float = 2.0
) -> Graph:
    """CLIP's text transformer (pre-LayerNorm blocks with biases, a plain MLP), plus the
    bias-free ``text_projection`` of ``CLIPTextModelWithProjection`` when ``projection``."""
    g = Graph("clip_text", batch, dtype_bytes)
    d = int(cfg.get("hidden_size", 768))
    ff = int(cfg.get("intermediate_size", 4 * d))
    heads = int(cfg.get("num_attention_heads", 12))
    g.weights(int(cfg.get("vocab_size", 49408)) * d)
    g.weights(int(cfg.get("max_position_embeddings", 77)) * d)
    g.elementwise(d * tokens, passes=3)  # token + position embeddings
    for _ in range(int(cfg.get("num_hidden_layers", 12))):
        g.norm(d, d * tokens)
        for _proj in range(3):
            g.linear(tokens, d, d)
        g.attention(tokens, tokens, d, heads)
        g.linear(tokens, d, d)
        g.elementwise(d * tokens, passes=3)
        g.norm(d, d * tokens)
        g.linear(tokens, d, ff)
        g.elementwise(ff * tokens, kernels=2 if cfg.get("hidden_act") == "quick_gelu" else 1)
        g.linear(tokens, ff, d)
        g.elementwise(d * tokens, passes=3)
    g.norm(d, d * tokens)
    if projection:
        g.linear(1, d, int(cfg.get("projection_dim", d)), bias=False)
    return g


def walk_t5_encoder(
    cfg: dict[str, Any], batch: int, tokens: int, dtype_bytes: float = 2.0
) -> Graph:
    """The T5 v1.1 encoder: RMSNorm (weight only), bias-free attention with a relative position
    bias table in the first layer, a gated-GELU feed-forward, a shared embedding table."""
    g = Graph("t5_encoder", batch, dtype_bytes)
    d = int(cfg.get("d_model", 4096))
    d_kv = int(cfg.get("d_kv", 64))
    heads = int(cfg.get("num_heads", 64))
    inner = heads * d_kv
    ff = int(cfg.get("d_ff", 10240))
    gated = str(cfg.get("feed_forward_proj", "gated-gelu")).startswith("gated")
    g.weights(int(cfg.get("vocab_size", 32128)) * d)
    g.weights(int(cfg.get("relative_attention_num_buckets", 32)) * heads)
    for _ in range(int(cfg.get("num_layers", 24))):
        g.norm(d, d * tokens, params_per_channel=1)
        for _proj in range(3):
            g.linear(tokens, d, inner, bias=False)
        g.attention(tokens, tokens, inner, heads)
        g.elementwise(heads * tokens * tokens, passes=3)  # + position bias on the scores
        g.linear(tokens, inner, d, bias=False)
        g.elementwise(d * tokens, passes=3)
        g.norm(d, d * tokens, params_per_channel=1)
        g.linear(tokens, d, ff, bias=False)
        if gated:
            g.linear(tokens, d, ff, bias=False)
            g.elementwise(ff * tokens, passes=3)  # GELU(gate) * value
        g.elementwise(ff * tokens)
        g.linear(tokens, ff, d, bias=False)
        g.elementwise(d * tokens, passes=3)
    g.norm(d, d * tokens, params_per_channel=1)
    return g
