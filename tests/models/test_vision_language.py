"""LLaVA-style vision-language models: the CLIP/SigLIP tower and projector counted exactly, and
images as tokens in the context and work in the prefill."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest

from suanli.answers.memory import MemoryRequest, memory
from suanli.answers.perf import InferPerfAnswer, PerfRequest, perf
from suanli.answers.request import WorkRequest
from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.resolve import LoadedModel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _llava(kind: str, small: bool = True) -> Any:
    cfg = transformers.AutoConfig.for_model("llava", vision_config={"model_type": kind})
    if small:
        text = dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            vocab_size=256,
        )
        vision = dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            image_size=56,
            patch_size=14,
        )
        for k, v in text.items():
            setattr(cfg.text_config, k, v)
        for k, v in vision.items():
            setattr(cfg.vision_config, k, v)
    return cfg


def _torch_params(cfg: Any) -> int:
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.LlavaForConditionalGeneration(cfg)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("kind", ["clip_vision_model", "siglip_vision_model"])
def test_tower_and_projector_exact(kind: str) -> None:
    cfg = _llava(kind)
    doc = cfg.to_dict()
    doc["model_type"] = "llava"
    spec = spec_from_config(doc, "tiny-llava")
    assert count_params(spec).total == _torch_params(cfg)
    assert spec.vision is not None and spec.vision.tokens_per_image == 576


def test_llava_15_7b_default_config() -> None:
    """LLaVA-1.5-7B: Llama-2-7B (vocabulary 32,064) and CLIP ViT-L/14 at 336 px (hidden 1024, 24
    layers, MLP 4096); its checkpoint holds 7,063,427,072 parameters (llava-hf/llava-1.5-7b-hf,
    "7.06B params" on the hub: 6,738,939,904 + the tower's 303,507,456 + the projector's
    20,979,712)."""
    cfg = _llava("clip_vision_model", small=False)
    cfg.text_config.vocab_size = 32064
    vision = dict(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        image_size=336,
        patch_size=14,
        projection_dim=768,
    )
    for k, v in vision.items():
        setattr(cfg.vision_config, k, v)
    doc = cfg.to_dict()
    doc["model_type"] = "llava"
    spec = spec_from_config(doc, "llava-1.5-7b")
    assert count_params(spec).total == _torch_params(cfg) == 7_063_427_072


def test_images_grow_the_context_and_the_prefill() -> None:
    doc = _llava("clip_vision_model").to_dict()
    doc["model_type"] = "llava"
    spec = spec_from_config(doc, "tiny-llava")

    def loader(_: str) -> LoadedModel:
        return LoadedModel(spec, count_params(spec), "path", "tiny-llava")

    def mem(images: int) -> int:
        work = WorkRequest(task="infer", context=1024, images=images)
        return memory(MemoryRequest(model="x", work=work), loader=loader).breakdown["kv_cache"]

    per_token = mem(0) / 1024
    assert mem(2) == pytest.approx(per_token * (1024 + 2 * 576))
    fast = perf(PerfRequest(model="x", gpu="h100", work=WorkRequest(task="infer")), loader=loader)
    seen = perf(
        PerfRequest(model="x", gpu="h100", work=WorkRequest(task="infer", images=4)),
        loader=loader,
    )
    assert isinstance(fast, InferPerfAnswer) and isinstance(seen, InferPerfAnswer)
    assert seen.ttft_s > fast.ttft_s and seen.breakdown_s["vision_encoder"] > 0
    with pytest.raises(ValueError, match="vision-language"):
        memory(MemoryRequest(model="llama-3.1-8b", work=WorkRequest(task="infer", images=1)))


@pytest.mark.parametrize(
    ("model_type", "cls"),
    [
        ("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration"),
        ("qwen2_vl", "Qwen2VLForConditionalGeneration"),
    ],
)
def test_qwen_vl_exact_and_tokens_by_resolution(model_type: str, cls: str) -> None:
    cfg = transformers.AutoConfig.for_model(model_type)
    text = dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=256,
    )
    for k, v in text.items():
        setattr(cfg.text_config, k, v)
    vision = dict(
        hidden_size=32, embed_dim=32, depth=2, num_heads=4, intermediate_size=48, out_hidden_size=64
    )
    for k, v in vision.items():
        if hasattr(cfg.vision_config, k):
            setattr(cfg.vision_config, k, v)
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        expected = sum(p.numel() for p in getattr(transformers, cls)(cfg).parameters())
    doc = cfg.to_dict()
    doc["model_type"] = model_type
    spec = spec_from_config(doc, model_type)
    assert count_params(spec).total == expected
    # One token per 28 x 28 pixels: 1024 x 768 -> 37 x 28.
    assert spec.vision.tokens_for(1024, 768) == 37 * 28

    def loader(_: str) -> LoadedModel:
        return LoadedModel(spec, count_params(spec), "path", model_type)

    def kv(size: str) -> int:
        work = WorkRequest(task="infer", context=100, images=1, image_size=size)
        return memory(MemoryRequest(model="x", work=work), loader=loader).breakdown["kv_cache"]

    assert kv("1024x768") > kv("448x448")
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        kv("big")


def _internvl(small: bool) -> Any:
    cfg = transformers.AutoConfig.for_model("internvl")
    if small:
        for k, v in dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            vocab_size=256,
        ).items():
            setattr(cfg.text_config, k, v)
        for k, v in dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            use_qk_norm=True,
            attention_bias=True,
            norm_type="rms_norm",
            use_mean_pooling=False,
        ).items():
            setattr(cfg.vision_config, k, v)
    return cfg


@pytest.mark.parametrize("small", [True, False], ids=["tiny", "default-internvl3"])
def test_internvl_exact(small: bool) -> None:
    cfg = _internvl(small)
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.InternVLForConditionalGeneration(cfg)
    doc = cfg.to_dict()
    doc["model_type"] = "internvl"
    # Which flag ties the LM head differs by generation (5.x: the top-level one, 4.x: the text
    # config's): the file states what the installed version did.
    doc["tie_word_embeddings"] = (
        model.get_output_embeddings().weight is model.get_input_embeddings().weight
    )
    spec = spec_from_config(doc, "internvl")
    params = count_params(spec)
    assert params.total == sum(p.numel() for p in model.parameters())
    tower = sum(p.numel() for p in model.model.vision_tower.parameters())
    projector = sum(p.numel() for p in model.model.multi_modal_projector.parameters())
    assert spec.vision is not None
    assert (spec.vision.tower_params, spec.vision.projector_params) == (tower, projector)
    assert spec.vision.tokens_per_image == 256  # (448 / 14)^2 / 2^2


@pytest.mark.parametrize(
    "size",
    [
        (448, 448),
        (1024, 768),
        (768, 1024),
        (1920, 1080),
        (300, 2000),
        (4000, 500),
        (896, 448),
        (100, 100),
    ],
)
def test_internvl_tiles_match_the_transformers_processor(size: tuple[int, int]) -> None:
    try:  # transformers 5.x; 4.x keeps it in the fast-and-slow processor module
        from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
            get_optimal_tiled_canvas,
        )
    except ImportError:
        from transformers.models.got_ocr2.image_processing_got_ocr2 import (
            get_optimal_tiled_canvas,
        )

    from suanli.models.vision import internvl_tiles

    width, height = size
    cols, rows = get_optimal_tiled_canvas((height, width), (448, 448), 1, 12)
    expected = cols * rows + (1 if cols * rows > 1 else 0)  # a thumbnail when cut
    assert internvl_tiles(width, height, 448, 12) == expected
