"""Diffusion transformers: SD3's MMDiT (diffusers ``SD3Transformer2DModel``) and Flux
(``FluxTransformer2DModel``), walked from their configs.

Both attend jointly over the image tokens and the text tokens, each stream with its own
projections and feed-forward, modulated by the timestep (and pooled text) embedding through
``AdaLayerNormZero`` (six shift/scale/gate vectors per block from one linear layer on the
embedding). Flux adds RMS-normalised queries and keys, rotary positions, a guidance embedding
(FLUX.1-dev) and 38 "single" blocks in which the attention and the MLP run in parallel on the
concatenated sequence. Followed from diffusers' ``transformers/transformer_sd3.py``,
``transformer_flux.py``, ``attention.py`` and ``normalization.py``.
"""

from __future__ import annotations

from typing import Any

from suanli.diffusion.graph import Graph

#: Width of the sinusoidal timestep (and guidance) projection the embedders read.
TIMESTEP_CHANNELS = 256


def _embed_condition(g: Graph, d: int, pooled: int, guidance: bool) -> None:
    """Timestep (and guidance) ``TimestepEmbedding`` plus the pooled-text projection."""
    for _ in range(2 if guidance else 1):
        g.linear(1, TIMESTEP_CHANNELS, d)
        g.elementwise(d)
        g.linear(1, d, d)
    g.linear(1, pooled, d)
    g.elementwise(d)
    g.linear(1, d, d)
    g.elementwise(d, passes=3)


def _modulated_norm(g: Graph, d: int, tokens: int, vectors: int) -> None:
    """``AdaLayerNorm*``: SiLU(embedding) -> linear to ``vectors`` x d, then a LayerNorm without
    affine parameters and ``x * (1 + scale) + shift``."""
    g.elementwise(d)
    g.linear(1, d, vectors * d)
    g.norm(d, d * tokens, params_per_channel=0)
    g.elementwise(d * tokens, passes=4, kernels=2)


def _mlp(g: Graph, d: int, tokens: int) -> None:
    """``FeedForward`` with tanh-GELU, 4x wide, and its gated residual."""
    g.linear(tokens, d, 4 * d)
    g.elementwise(4 * d * tokens)
    g.linear(tokens, 4 * d, d)
    g.elementwise(d * tokens, passes=5, kernels=2)  # gate * out; + residual


def _qk_norm(g: Graph, heads: int, head_dim: int, tokens: int) -> None:
    """RMSNorm over each head of the queries and of the keys (one weight vector each)."""
    for _ in range(2):
        g.rms_norm_fp32(head_dim, heads * head_dim * tokens)


def _joint_attention(g: Graph, d: int, heads: int, tokens: int, text: int, rotary: bool) -> None:
    """The joint attention core: q, k, v of text and image concatenated (three copies),
    rotary positions on q and k (Flux), SDPA over both, the output made contiguous again."""
    seq = tokens + text
    g.elementwise(3 * d * seq, kernels=3)
    if rotary:
        for _ in range(2):
            g.rotary_fp32(d * seq)
    g.attention(seq, seq, d, heads)
    g.elementwise(d * seq)  # (B, H, S, D) -> (B, S, H·D)
    g.elementwise(d * seq)  # .contiguous() of the text and image halves


def walk_sd3(
    cfg: dict[str, Any],
    batch: int,
    latent_h: int,
    latent_w: int,
    text: int,
    dtype_bytes: float = 2.0,
) -> Graph:
    """One forward pass of ``SD3Transformer2DModel`` over ``text`` context tokens."""
    g = Graph("mmdit", batch, dtype_bytes)
    heads = int(cfg.get("num_attention_heads", 24))
    d = heads * int(cfg.get("attention_head_dim", 64))
    patch = int(cfg.get("patch_size", 2))
    out = int(cfg.get("out_channels") or cfg.get("in_channels", 16))
    tokens = (latent_h // patch) * (latent_w // patch)
    qk_norm = cfg.get("qk_norm") is not None
    dual = set(cfg.get("dual_attention_layers") or ())
    g.conv(int(cfg.get("in_channels", 16)), d, patch, latent_h // patch, latent_w // patch)
    g.elementwise(d * tokens, passes=3)  # + cropped positional table (a buffer, not a parameter)
    _embed_condition(g, d, int(cfg.get("pooled_projection_dim", 2048)), guidance=False)
    joint = int(cfg.get("joint_attention_dim", 4096))
    g.linear(text, joint, int(cfg.get("caption_projection_dim", d)))
    layers = int(cfg.get("num_layers", 24))
    for i in range(layers):
        last = i == layers - 1
        _modulated_norm(g, d, tokens, 9 if i in dual else 6)
        _modulated_norm(g, d, text, 2 if last else 6)
        for _proj in range(3):
            g.linear(tokens, d, d)
            g.linear(text, d, d)
        if qk_norm:
            _qk_norm(g, heads, d // heads, tokens)
            _qk_norm(g, heads, d // heads, text)
        _joint_attention(g, d, heads, tokens, text, rotary=False)
        g.linear(tokens, d, d)
        if not last:
            g.linear(text, d, d)
        g.elementwise(d * tokens, passes=5, kernels=2)  # gate * attention; + residual
        if i in dual:  # SD3.5's second, image-only self-attention
            for _proj in range(3):
                g.linear(tokens, d, d)
            if qk_norm:
                _qk_norm(g, heads, d // heads, tokens)
            g.attention(tokens, tokens, d, heads)
            g.linear(tokens, d, d)
            g.elementwise(d * tokens, passes=5, kernels=2)
        g.norm(d, d * tokens, params_per_channel=0)
        g.elementwise(d * tokens, passes=4, kernels=2)  # x * (1 + scale) + shift
        _mlp(g, d, tokens)
        if not last:
            g.elementwise(d * text, passes=5, kernels=2)  # gate * attention; + residual
            g.norm(d, d * text, params_per_channel=0)
            g.elementwise(d * text, passes=4, kernels=2)
            _mlp(g, d, text)
    _modulated_norm(g, d, tokens, 2)
    g.linear(tokens, d, patch * patch * out)
    return g


def walk_flux(
    cfg: dict[str, Any],
    batch: int,
    latent_h: int,
    latent_w: int,
    text: int,
    dtype_bytes: float = 2.0,
) -> Graph:
    """One forward pass of ``FluxTransformer2DModel``: latents packed 2x2 into tokens."""
    g = Graph("flux", batch, dtype_bytes)
    heads = int(cfg.get("num_attention_heads", 24))
    head_dim = int(cfg.get("attention_head_dim", 128))
    d = heads * head_dim
    tokens = (latent_h // 2) * (latent_w // 2)
    seq = tokens + text
    g.linear(tokens, int(cfg.get("in_channels", 64)), d)
    _embed_condition(
        g,
        d,
        int(cfg.get("pooled_projection_dim", 768)),
        guidance=bool(cfg.get("guidance_embeds", False)),
    )
    g.linear(text, int(cfg.get("joint_attention_dim", 4096)), d)
    for _ in range(int(cfg.get("num_layers", 19))):
        _modulated_norm(g, d, tokens, 6)
        _modulated_norm(g, d, text, 6)
        for _proj in range(3):
            g.linear(tokens, d, d)
            g.linear(text, d, d)
        _qk_norm(g, heads, head_dim, tokens)
        _qk_norm(g, heads, head_dim, text)
        _joint_attention(g, d, heads, tokens, text, rotary=True)
        g.linear(tokens, d, d)
        g.linear(text, d, d)
        for stream in (tokens, text):
            g.elementwise(d * stream, passes=5, kernels=2)  # gate * attention; + residual
            g.norm(d, d * stream, params_per_channel=0)
            g.elementwise(d * stream, passes=4, kernels=2)  # x * (1 + scale) + shift
            _mlp(g, d, stream)
    for _ in range(int(cfg.get("num_single_layers", 38))):
        g.hold(d * seq)
        _modulated_norm(g, d, seq, 3)
        g.linear(seq, d, 4 * d)
        g.elementwise(4 * d * seq)
        for _proj in range(3):
            g.linear(seq, d, d)
        _qk_norm(g, heads, head_dim, seq)
        for _ in range(2):
            g.rotary_fp32(d * seq)
        g.attention(seq, seq, d, heads)
        g.elementwise(d * seq)  # (B, H, S, D) -> (B, S, H·D)
        g.elementwise(5 * d * seq)  # cat([attention, mlp])
        g.linear(seq, 5 * d, d)
        g.elementwise(d * seq, passes=5, kernels=2)  # gate * out; + residual
        g.release(d * seq)
    _modulated_norm(g, d, tokens, 2)
    g.linear(tokens, d, int(cfg.get("out_channels") or cfg.get("in_channels", 64)))
    return g
