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
    """Tokens one image adds to the language model's context."""

    @property
    def params(self) -> int:
        """Tower and projector together."""
        return self.tower_params + self.projector_params

    @property
    def patches(self) -> int:
        """Patches the tower attends over per image."""
        return (self.image_size // self.patch_size) ** 2

    def forward_flops_per_image(self) -> float:
        """FLOPs of the tower on one image: its linears (2 x weights per patch), the patch
        convolution, and full (non-causal) attention over the patches."""
        n = self.patches + (1 if self.kind.startswith("clip") else 0)
        h, i = self.hidden_size, self.intermediate_size
        linears = self.num_layers * (4 * h * h + 2 * h * i)
        conv = 3 * self.patch_size**2 * h
        attention = self.num_layers * 4 * n * h  # per token: scores and values, full
        return 2.0 * n * (linears + conv) + attention * n


def _vision_tower(cfg: Any) -> tuple[str, int, int, int, int, int, int, int]:
    kind = str(cfg.get("model_type") or "clip_vision_model")
    if kind not in ("clip_vision_model", "siglip_vision_model"):
        raise FamilyConfigError(
            f"vision tower {kind!r} is not one suanli counts yet (CLIP and SigLIP are)"
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
        raise FamilyConfigError("text_config and vision_config must be JSON objects")
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
        notes=(*spec.notes, f"vision tower {kind}: {tokens} tokens per {image}x{image} image"),
    )
