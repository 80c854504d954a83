"""The image autoencoder (diffusers ``AutoencoderKL``): the decoder turns the final latents into
pixels once per image; the encoder is loaded with it (and used only for image-to-image).

Followed from diffusers' ``autoencoders/vae.py``: ResNet blocks without a time embedding, one
single-head self-attention block in the middle at the latent resolution, nearest x2 upsampling
then a 3x3 convolution, and 1x1 ``quant_conv`` / ``post_quant_conv`` where the config uses them
(SD 1.5 and SDXL do; the 16-channel SD3 and Flux autoencoders do not). The decoder's last blocks
run at the full image resolution, which is why decoding a large image takes gigabytes.
"""

from __future__ import annotations

from typing import Any

from suanli.diffusion.graph import Graph
from suanli.diffusion.unet import resnet_block


def _mid(g: Graph, c: int, h: int, w: int) -> None:
    resnet_block(g, c, c, h, w, 0)
    g.hold(c * h * w)
    g.norm(c, c * h * w)
    for _proj in range(3):
        g.linear(h * w, c, c)
    g.attention(h * w, h * w, c, 1)
    g.linear(h * w, c, c)
    g.elementwise(c * h * w, passes=3)
    g.release(c * h * w)
    resnet_block(g, c, c, h, w, 0)


def walk_vae_decoder(
    cfg: dict[str, Any], batch: int, latent_h: int, latent_w: int, dtype_bytes: float = 2.0
) -> Graph:
    """``post_quant_conv`` and the decoder on ``batch`` latents of ``latent_h x latent_w``."""
    g = Graph("vae_decoder", batch, dtype_bytes, nchw=True)
    channels = list(cfg.get("block_out_channels", (128, 256, 512, 512)))
    latent = int(cfg.get("latent_channels", 4))
    layers = int(cfg.get("layers_per_block", 2))
    h, w = latent_h, latent_w
    if cfg.get("use_post_quant_conv", True):
        g.conv(latent, latent, 1, h, w)
    c = g.conv(latent, channels[-1], 3, h, w)
    _mid(g, c, h, w)
    rev = list(reversed(channels))
    for i, out in enumerate(rev):
        for _ in range(layers + 1):
            resnet_block(g, c, out, h, w, 0)
            c = out
        if i < len(rev) - 1:
            h, w = h * 2, w * 2
            g.elementwise(c * h * w // 4 + c * h * w, passes=1)
            g.conv(c, c, 3, h, w)
    g.norm(c, c * h * w)
    g.elementwise(c * h * w)
    g.conv(c, int(cfg.get("out_channels", 3)), 3, h, w)
    return g


def walk_vae_encoder(
    cfg: dict[str, Any], batch: int, height: int, width: int, dtype_bytes: float = 2.0
) -> Graph:
    """The encoder and ``quant_conv`` on ``batch`` images of ``height x width`` pixels."""
    g = Graph("vae_encoder", batch, dtype_bytes, nchw=True)
    channels = list(cfg.get("block_out_channels", (128, 256, 512, 512)))
    latent = int(cfg.get("latent_channels", 4))
    layers = int(cfg.get("layers_per_block", 2))
    h, w = height, width
    c = g.conv(int(cfg.get("in_channels", 3)), channels[0], 3, h, w)
    for i, out in enumerate(channels):
        for _ in range(layers):
            resnet_block(g, c, out, h, w, 0)
            c = out
        if i < len(channels) - 1:
            h, w = h // 2, w // 2
            g.elementwise(c * h * w * 4)  # the asymmetric pad before the stride-2 conv
            g.conv(c, c, 3, h, w)
    _mid(g, c, h, w)
    g.norm(c, c * h * w)
    g.elementwise(c * h * w)
    g.conv(c, 2 * latent, 3, h, w)
    if cfg.get("use_quant_conv", True):
        g.conv(2 * latent, 2 * latent, 1, h, w)
    return g


def vae_params(cfg: dict[str, Any]) -> int:
    """Parameters of the whole autoencoder (encoder, decoder and the 1x1 convolutions)."""
    return walk_vae_decoder(cfg, 1, 8, 8).params + walk_vae_encoder(cfg, 1, 64, 64).params
