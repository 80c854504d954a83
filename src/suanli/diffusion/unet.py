"""The Stable Diffusion UNet (diffusers ``UNet2DConditionModel``) walked from its config.

Followed from diffusers' ``unet_2d_condition.py``, ``unet_2d_blocks.py``, ``resnet.py``,
``transformer_2d.py`` and ``attention.py``: ResNet blocks (GroupNorm, SiLU, 3x3 convolutions, the
time embedding added after the first convolution, a 1x1 shortcut when the width changes),
spatial transformers (GroupNorm, a 1x1 convolution or a linear projection in and out, blocks of
self-attention, cross-attention to the text and a GEGLU feed-forward), stride-2 convolutions down,
nearest-neighbour x2 then a 3x3 convolution up, and the skip connections the up path
concatenates. SD 1.5 and SDXL differ only in their config (``block_out_channels``,
``transformer_layers_per_block``, ``use_linear_projection``, the SDXL ``text_time`` embedding).
"""

from __future__ import annotations

from typing import Any

from suanli.diffusion.graph import Graph


def _per_block(value: Any, blocks: int) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value] * blocks


def resnet_block(g: Graph, c_in: int, c_out: int, h: int, w: int, temb: int) -> None:
    """``ResnetBlock2D`` at ``h x w`` (its input is held for the residual)."""
    g.hold(c_in * h * w)
    g.norm(c_in, c_in * h * w)
    g.elementwise(c_in * h * w)  # SiLU
    g.conv(c_in, c_out, 3, h, w)
    if temb:
        g.elementwise(temb, kernels=1)  # SiLU of the time embedding
        g.linear(1, temb, c_out)
        g.elementwise(c_out * h * w, passes=3)  # + temb
    g.norm(c_out, c_out * h * w)
    g.elementwise(c_out * h * w)  # SiLU
    g.conv(c_out, c_out, 3, h, w)
    if c_in != c_out:
        g.conv(c_in, c_out, 1, h, w)
    g.elementwise(c_out * h * w, passes=3)  # residual add
    g.elementwise(c_out * h * w)  # / output_scale_factor
    g.release(c_in * h * w)


def _attention_out(g: Graph, elements: int) -> None:
    """``AttnProcessor2_0`` after SDPA: heads back to channels (a copy) and the division by
    ``rescale_output_factor`` (1.0, still a kernel)."""
    g.elementwise(elements)
    g.elementwise(elements)


def _transformer(
    g: Graph,
    channels: int,
    heads: int,
    layers: int,
    h: int,
    w: int,
    cross: int,
    text: int,
    linear_projection: bool,
) -> None:
    """``Transformer2DModel`` (continuous input) with ``layers`` ``BasicTransformerBlock``\\ s."""
    tokens = h * w
    g.hold(channels * tokens)
    g.norm(channels, channels * tokens)
    if linear_projection:
        g.elementwise(channels * tokens)  # permute + reshape to tokens (a copy)
        g.linear(tokens, channels, channels)
    else:
        g.conv(channels, channels, 1, h, w)
        g.elementwise(channels * tokens)
    d = channels
    for _ in range(layers):
        g.hold(d * tokens)
        g.norm(d, d * tokens)
        for _proj in range(3):
            g.linear(tokens, d, d, bias=False)
        g.attention(tokens, tokens, d, heads)
        _attention_out(g, d * tokens)
        g.linear(tokens, d, d)
        g.elementwise(d * tokens, passes=3)  # residual
        g.norm(d, d * tokens)
        g.linear(tokens, d, d, bias=False)
        g.linear(text, cross, d, bias=False)
        g.linear(text, cross, d, bias=False)
        g.attention(tokens, text, d, heads)
        _attention_out(g, d * tokens)
        g.linear(tokens, d, d)
        g.elementwise(d * tokens, passes=3)
        g.norm(d, d * tokens)
        g.linear(tokens, d, 8 * d)  # GEGLU projection: value and gate
        g.elementwise(4 * d * tokens)  # GELU(gate)
        g.elementwise(4 * d * tokens, passes=3)  # value * GELU(gate)
        g.linear(tokens, 4 * d, d)
        g.elementwise(d * tokens, passes=3)
        g.release(d * tokens)
    if linear_projection:
        g.linear(tokens, channels, channels)
        g.elementwise(channels * tokens)  # back to NCHW
    else:
        g.elementwise(channels * tokens)
        g.conv(channels, channels, 1, h, w)
    g.elementwise(channels * tokens, passes=3)  # residual
    g.release(channels * tokens)


def walk_unet(
    cfg: dict[str, Any],
    batch: int,
    latent_h: int,
    latent_w: int,
    text: int,
    dtype_bytes: float = 2.0,
) -> Graph:
    """One denoising forward pass of a ``UNet2DConditionModel`` on ``batch`` latents of
    ``latent_h x latent_w`` conditioned on ``text`` tokens."""
    g = Graph("unet", batch, dtype_bytes, nchw=True)
    channels = list(cfg.get("block_out_channels", (320, 640, 1280, 1280)))
    blocks = len(channels)
    down_types = list(cfg.get("down_block_types", ()))
    up_types = list(cfg.get("up_block_types", ()))
    layers = _per_block(cfg.get("layers_per_block", 2), blocks)
    heads_cfg = cfg.get("num_attention_heads") or cfg.get("attention_head_dim", 8)
    heads = _per_block(heads_cfg, blocks)
    depth = _per_block(cfg.get("transformer_layers_per_block", 1), blocks)
    cross = int(_per_block(cfg.get("cross_attention_dim", 1280), blocks)[0])
    linear_proj = bool(cfg.get("use_linear_projection", False))
    c0 = channels[0]
    temb = int(cfg.get("time_embedding_dim") or 4 * c0)
    h, w = latent_h, latent_w

    # Time embedding: sinusoid -> linear -> SiLU -> linear (and SDXL's text_time embedding).
    g.linear(1, c0, temb)
    g.elementwise(temb)
    g.linear(1, temb, temb)
    if cfg.get("addition_embed_type") == "text_time":
        extra = int(cfg.get("projection_class_embeddings_input_dim") or 0)
        g.linear(1, extra, temb)
        g.elementwise(temb)
        g.linear(1, temb, temb)
        g.elementwise(temb, passes=3)

    c = g.conv(int(cfg.get("in_channels", 4)), c0, 3, h, w)
    skips = [c * h * w]
    g.hold(skips[-1])
    for i, kind in enumerate(down_types):
        out = channels[i]
        for _ in range(layers[i]):
            resnet_block(g, c, out, h, w, temb)
            c = out
            if "CrossAttn" in kind:
                _transformer(g, c, heads[i], depth[i], h, w, cross, text, linear_proj)
            skips.append(c * h * w)
            g.hold(skips[-1])
        if i < blocks - 1:
            h, w = (h + 1) // 2, (w + 1) // 2
            g.conv(c, c, 3, h, w)
            skips.append(c * h * w)
            g.hold(skips[-1])

    resnet_block(g, c, c, h, w, temb)
    _transformer(g, c, heads[-1], depth[-1], h, w, cross, text, linear_proj)
    resnet_block(g, c, c, h, w, temb)

    rev = list(reversed(channels))
    rev_heads, rev_depth, rev_layers = heads[::-1], depth[::-1], layers[::-1]
    for i, kind in enumerate(up_types):
        out = rev[i]
        for _ in range(rev_layers[i] + 1):
            skip = skips.pop()
            skip_c = skip // (h * w)
            g.elementwise(c * h * w + skip, passes=2)  # torch.cat([hidden, skip])
            g.release(skip)
            resnet_block(g, c + skip_c, out, h, w, temb)
            c = out
            if "CrossAttn" in kind:
                _transformer(g, c, rev_heads[i], rev_depth[i], h, w, cross, text, linear_proj)
        if i < blocks - 1:
            h, w = h * 2, w * 2
            g.elementwise(c * h * w // 4 + c * h * w, passes=1)  # nearest x2
            g.conv(c, c, 3, h, w)

    g.norm(c, c * h * w)
    g.elementwise(c * h * w)
    g.conv(c, int(cfg.get("out_channels", 4)), 3, h, w)
    return g
