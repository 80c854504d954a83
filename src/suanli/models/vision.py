"""Vision-language models: the vision tower, the projector and the image tokens they feed the
language model (LLaVA-style: a CLIP or SigLIP ViT, a two-layer MLP projector).

The vision tower is counted module by module as ``transformers`` builds it (CLIPVisionModel: a
class embedding, a bias-free patch convolution, learned positions for every patch and the class
token, a pre-norm, pre-norm blocks with biased q/k/v/o and fc1/fc2 and two LayerNorms each, and a
post-norm; SigLIP: a biased patch convolution, positions for the patches only, no class token or
pre-norm). Each image becomes ``(image_size / patch_size)^2`` tokens in the language model's
context (the class token is dropped by the default feature strategy, ``image_seq_length`` when
the config states it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from suanli.i18n import N_
from suanli.models.families import FamilyConfigError, get_int
from suanli.models.spec import ModelSpec


@dataclass(frozen=True)
class VisionSpec:
    """A ViT vision tower and its projector into the language model."""

    kind: str
    """``clip_vision_model`` or ``siglip_vision_model``."""
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    image_size: int
    patch_size: int
    tower_params: int
    """Parameters of the vision tower (exact, as transformers builds it)."""
    projector_params: int
    """Parameters of the projector into the language model's width."""
    tokens_per_image: int
    """Tokens one image adds to the language model's context (at ``image_size``)."""
    merge: int = 1
    """Patches merged per side into one token (Qwen2.5-VL: 2, so 2 x 2 patches per token)."""
    window_patches: int = 0
    """Patches per attention window in windowed layers (0: every layer attends globally)."""
    global_layers: int = 0
    """Layers that attend over the whole image when the others use windows."""
    max_tiles: int = 0
    """InternVL: an image is cut into up to this many ``image_size`` tiles (plus a thumbnail)
    matching its aspect ratio; each tile gives ``tokens_per_image`` tokens (0: no tiling)."""

    def tokens_for(self, width: int, height: int) -> int:
        """Tokens an image of ``width x height`` pixels adds: fixed for towers that resize to
        ``image_size`` (CLIP, SigLIP); per tile for InternVL; one per merged patch group for
        dynamic resolution (Qwen2-VL)."""
        if self.max_tiles:
            return internvl_tiles(width, height, self.image_size, self.max_tiles) * (
                self.tokens_per_image
            )
        if self.merge <= 1:
            return self.tokens_per_image
        side = self.patch_size * self.merge
        return -(-width // side) * -(-height // side)

    @property
    def params(self) -> int:
        """Tower and projector together."""
        return self.tower_params + self.projector_params

    @property
    def patches(self) -> int:
        """Patches the tower attends over per image."""
        return (self.image_size // self.patch_size) ** 2

    def forward_flops_per_image(self, tokens: int | None = None) -> float:
        """FLOPs of the tower on one image: its linears (2 x weights per patch), the patch
        projection, and non-causal attention (within windows where the tower uses them);
        ``tokens`` is the language-model tokens of the image (its resolution)."""
        if self.max_tiles:  # every tile through the whole tower: its patches and a class token
            tiles = max(1, (tokens or self.tokens_per_image) // self.tokens_per_image)
            return tiles * replace(self, max_tiles=0, kind="clip_tiled").forward_flops_per_image()
        if tokens is None:
            n = self.patches + (1 if self.kind.startswith("clip") else 0)
        else:
            n = tokens * self.merge * self.merge
        h, i = self.hidden_size, self.intermediate_size
        gated = 3 if self.kind.startswith("qwen") else 2
        linears = self.num_layers * (4 * h * h + gated * h * i)
        conv = 3 * self.patch_size**2 * h * (2 if self.kind.startswith("qwen") else 1)
        span = min(n, self.window_patches) if self.window_patches else n
        windowed = self.num_layers - self.global_layers if self.window_patches else 0
        attention = 4 * h * n * (windowed * span + (self.num_layers - windowed) * n)
        return 2.0 * n * (linears + conv) + attention


def _vision_tower(cfg: Any) -> tuple[str, int, int, int, int, int, int, int]:
    kind = str(cfg.get("model_type") or "clip_vision_model")
    if kind not in ("clip_vision_model", "siglip_vision_model"):
        raise FamilyConfigError(
            N_("vision tower {kind!r} is not one suanli counts yet (CLIP and SigLIP are)").format(
                kind=kind
            )
        )
    h = get_int(cfg, ("hidden_size",), 1024)
    layers = get_int(cfg, ("num_hidden_layers",), 24)
    heads = get_int(cfg, ("num_attention_heads",), 16)
    inter = get_int(cfg, ("intermediate_size",), 4096)
    image = get_int(cfg, ("image_size",), 336 if kind.startswith("clip") else 224)
    patch = get_int(cfg, ("patch_size",), 14 if kind.startswith("clip") else 16)
    patches = (image // patch) ** 2
    block = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    if kind.startswith("clip"):
        embeddings = h + h * 3 * patch * patch + (patches + 1) * h + 2 * h  # class, conv, pos, pre
    else:
        embeddings = h * 3 * patch * patch + h + patches * h
    tower = embeddings + layers * block + 2 * h  # post-norm
    if kind.startswith("siglip") and cfg.get("vision_use_head", True):
        # SigLIP's attention-pooling head: a probe, a multi-head attention, a norm and an MLP.
        tower += (
            h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h)
        )
    return kind, h, layers, heads, inter, image, patch, tower


def llava_spec(name: str, cfg: Any, text_reader: Any) -> ModelSpec:
    """A LLaVA-style model: its language model's spec with the vision tower attached."""
    text_cfg = cfg.get("text_config") or {}
    vision_cfg = cfg.get("vision_config") or {}
    if not isinstance(text_cfg, dict) or not isinstance(vision_cfg, dict):
        raise FamilyConfigError(N_("text_config and vision_config must be JSON objects"))
    text_cfg = {"model_type": "llama", **text_cfg}
    spec: ModelSpec = text_reader(text_cfg, name)
    kind, h, layers, heads, inter, image, patch, tower = _vision_tower(vision_cfg)
    bias = cfg.get("multimodal_projector_bias", True) is not False
    text_h = spec.hidden_size
    projector = h * text_h + text_h * text_h + (2 * text_h if bias else 0)
    tokens = cfg.get("image_seq_length")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
        tokens = (image // patch) ** 2
    vision = VisionSpec(kind, h, layers, heads, inter, image, patch, tower, projector, tokens)
    return replace(
        spec,
        name=name,
        architecture=str(cfg.get("model_type")),
        vision=vision,
        notes=(
            *spec.notes,
            N_("vision tower {kind}: {tokens} tokens per {image}x{image} image").format(
                kind=kind, tokens=tokens, image=image
            ),
        ),
    )


def qwen2_5_vl_spec(name: str, cfg: Any, text_reader: Any) -> ModelSpec:
    """Qwen2-VL / Qwen2.5-VL: a Qwen2 language model and a ViT at native resolution (3-D patch
    embedding over 2 frames, RMSNorm blocks with a biased fused qkv and a gated MLP in 2.5-VL,
    windowed attention except ``fullatt_block_indexes``) whose 2 x 2 merged patches pass through
    an MLP merger into the language model: one token per 28 x 28 pixels."""
    text_cfg = cfg.get("text_config")
    if not isinstance(text_cfg, dict):
        text_cfg = {k: v for k, v in cfg.items() if k != "vision_config"}  # older flat configs
    spec: ModelSpec = text_reader({**text_cfg, "model_type": "qwen2"}, name)
    v = cfg.get("vision_config") or {}
    if not isinstance(v, dict):
        raise FamilyConfigError(N_("vision_config must be a JSON object"))
    qwen25 = cfg.get("model_type") == "qwen2_5_vl"
    h = get_int(v, ("hidden_size", "embed_dim"), 1280)
    depth = get_int(v, ("depth",), 32)
    heads = get_int(v, ("num_heads",), 16)
    patch = get_int(v, ("patch_size",), 14)
    merge = get_int(v, ("spatial_merge_size",), 2)
    frames = get_int(v, ("temporal_patch_size",), 2)
    out = get_int(v, ("out_hidden_size", "hidden_size"), spec.hidden_size)
    if qwen25:
        inter = get_int(v, ("intermediate_size",), 3420)
        mlp = 2 * (h * inter + inter) + (inter * h + h)
        norms = 2 * h
    else:  # Qwen2-VL: LayerNorms and a plain MLP of mlp_ratio x hidden
        ratio = v.get("mlp_ratio", 4)
        inter = int(ratio * h) if isinstance(ratio, (int, float)) and ratio > 0 else 4 * h
        mlp = (h * inter + inter) + (inter * h + h)
        norms = 4 * h
    block = norms + (h * 3 * h + 3 * h) + (h * h + h) + mlp
    grouped = h * merge * merge
    merger = (h if qwen25 else 2 * h) + (grouped * grouped + grouped) + (grouped * out + out)
    tower = 3 * frames * patch * patch * h + depth * block
    window = get_int(v, ("window_size",), 112) if qwen25 else 0
    full = v.get("fullatt_block_indexes") or []
    vision = VisionSpec(
        kind="qwen2_5_vl_vision" if qwen25 else "qwen2_vl_vision",
        hidden_size=h,
        num_layers=depth,
        num_heads=heads,
        intermediate_size=inter,
        image_size=448,
        patch_size=patch,
        tower_params=tower,
        projector_params=merger,
        tokens_per_image=(448 // (patch * merge)) ** 2,
        merge=merge,
        window_patches=(window // patch) ** 2 if window else 0,
        global_layers=len(full) if isinstance(full, list) else 0,
    )
    return replace(
        spec,
        name=name,
        architecture=str(cfg.get("model_type")),
        vision=vision,
        notes=(
            *spec.notes,
            N_(
                "native-resolution vision tower: one token per {side}x{side} pixels "
                "(--image-size WxH; 448x448 by default, 256 tokens)"
            ).format(side=patch * merge),
        ),
    )


def internvl_tiles(width: int, height: int, tile: int = 448, max_tiles: int = 12) -> int:
    """Tiles InternVL's dynamic preprocessing cuts a ``width x height`` image into: the grid of
    at most ``max_tiles`` tiles whose aspect ratio is closest to the image's (ties go to the
    larger grid when the image has more than half its pixels), plus one thumbnail when the grid
    has more than one tile (OpenGVLab InternVL ``dynamic_preprocess``; transformers'
    ``crop_to_patches``)."""
    aspect = width / height
    grids = sorted(
        {
            (i, j)
            for n in range(1, max_tiles + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if i * j <= max_tiles
        },
        key=lambda g: (g[0] * g[1], g[0]),
    )
    best, best_diff = (1, 1), float("inf")
    for i, j in grids:
        diff = abs(aspect - i / j)
        if diff < best_diff:
            best, best_diff = (i, j), diff
        elif diff == best_diff and width * height > 0.5 * tile * tile * i * j:
            best = (i, j)
    n = best[0] * best[1]
    return n + 1 if n > 1 else 1


def internvl_spec(name: str, cfg: Any, text_reader: Any) -> ModelSpec:
    """InternVL (transformers' ``internvl``): an InternViT tower (class token, biased patch
    convolution, learned positions, pre-norm blocks with layer scale, optional q/k RMSNorm), a
    pixel-unshuffle of ``1 / downsample_ratio`` per side, and a LayerNorm + two-layer MLP
    projector into the language model; 256 tokens per 448 x 448 tile."""
    text_cfg = cfg.get("text_config") or {}
    v = cfg.get("vision_config") or {}
    if not isinstance(text_cfg, dict) or not isinstance(v, dict):
        raise FamilyConfigError(N_("text_config and vision_config must be JSON objects"))
    # The composite config's own flag decides the tying (transformers >= 5; default True).
    tie = cfg.get("tie_word_embeddings", True) is not False
    text_cfg = {"model_type": "qwen2", **text_cfg, "tie_word_embeddings": tie}
    spec: ModelSpec = text_reader(text_cfg, name)
    h = get_int(v, ("hidden_size",), 1024)
    layers = get_int(v, ("num_hidden_layers",), 24)
    heads = get_int(v, ("num_attention_heads",), 16)
    inter = get_int(v, ("intermediate_size",), 4096)
    image = _side(v.get("image_size", 448))
    patch = _side(v.get("patch_size", 14))
    patches = (image // patch) ** 2
    rms = v.get("norm_type", "layer_norm") == "rms_norm"
    qkv_bias = 3 * h if v.get("attention_bias", False) else 0
    block = (
        3 * h * h
        + qkv_bias
        + (h * h + h)  # q, k, v, projection_layer
        + (2 * h if v.get("use_qk_norm", False) else 0)
        + (h * inter + inter)
        + (inter * h + h)
        + 2 * (h if rms else 2 * h)  # layernorm_before, layernorm_after
        + 2 * h  # lambda_1, lambda_2 (layer scale)
    )
    embeddings = h + 3 * patch * patch * h + h  # class token, patch convolution
    if v.get("use_mask_token", False):
        embeddings += h
    if v.get("use_absolute_position_embeddings", True):
        embeddings += (patches + 1) * h
    tower = embeddings + layers * block + (0 if v.get("use_mean_pooling", True) else 2 * h)
    ratio = cfg.get("downsample_ratio", 0.5)
    per_side = int(1 / ratio) if isinstance(ratio, (int, float)) and 0 < ratio <= 1 else 2
    grouped, text_h = h * per_side * per_side, spec.hidden_size
    projector = 2 * grouped + (grouped * text_h + text_h) + (text_h * text_h + text_h)
    tokens = patches // (per_side * per_side)
    vision = VisionSpec(
        "internvl_vision",
        h,
        layers,
        heads,
        inter,
        image,
        patch,
        tower,
        projector,
        tokens,
        max_tiles=12,
    )
    return replace(
        spec,
        name=name,
        architecture="internvl",
        vision=vision,
        notes=(
            *spec.notes,
            N_(
                "InternViT tower: {tokens} tokens per {image}x{image} tile, up to 12 tiles and a "
                "thumbnail by the image's aspect ratio (--image-size WxH; one tile by default)"
            ).format(tokens=tokens, image=image),
        ),
    )


def _side(value: Any) -> int:
    """``448`` or ``[448, 448]`` -> 448 (square tiles and patches)."""
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise FamilyConfigError(
            N_("vision_config size {value!r} must be a positive integer").format(value=value)
        )
    return value
