"""The walks against the real modules: every preset component is built by diffusers or
transformers from the same config on the meta device (no weights), its parameters counted tensor
by tensor and its forward FLOPs measured with FlopCounterMode; the walk must match both exactly.
Published full-size counts are pinned independently of either."""

from __future__ import annotations

from typing import Any

import pytest

from suanli.diffusion.dit import walk_flux, walk_sd3
from suanli.diffusion.pipeline import find_pipeline, pipeline_presets
from suanli.diffusion.text import walk_clip_text, walk_t5_encoder
from suanli.diffusion.unet import walk_unet
from suanli.diffusion.vae import vae_params, walk_vae_decoder

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


def _build(cls: str, cfg: dict[str, Any]) -> Any:
    fields = {k: v for k, v in cfg.items() if not k.startswith("_")}
    with torch.device("meta"):
        if cls in ("CLIPTextModel", "CLIPTextModelWithProjection", "T5EncoderModel"):
            config_cls = (
                transformers.T5Config if cls == "T5EncoderModel" else transformers.CLIPTextConfig
            )
            fields.pop("architectures", None)
            fields.pop("model_type", None)
            return getattr(transformers, cls)(config_cls(**fields))
        return getattr(diffusers, cls).from_config(fields)


def _count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def _flops(fn: Any) -> float:
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        fn()
    return float(counter.get_total_flops())


def _meta(*shape: int) -> Any:
    return torch.zeros(*shape, device="meta")


COMPONENTS = [
    (pipe.name, comp.name) for pipe in pipeline_presets().values() for comp in pipe.components
]


@pytest.mark.parametrize(("pipe_name", "comp_name"), COMPONENTS)
def test_parameters_exact(pipe_name: str, comp_name: str) -> None:
    pipe = find_pipeline(pipe_name)
    assert pipe is not None
    comp = next(c for c in pipe.components if c.name == comp_name)
    module = _build(comp.cls, comp.config)
    cfg = comp.config
    if comp.cls == "AutoencoderKL":
        ours = vae_params(cfg)
    elif comp.cls == "T5EncoderModel":
        ours = walk_t5_encoder(cfg, 1, 8).params
    elif comp.cls.startswith("CLIP"):
        ours = walk_clip_text(cfg, 1, 8, comp.cls.endswith("Projection")).params
    elif comp.cls == "UNet2DConditionModel":
        ours = walk_unet(cfg, 1, 16, 16, 8).params
    elif comp.cls == "SD3Transformer2DModel":
        ours = walk_sd3(cfg, 1, 16, 16, 8).params
    else:
        ours = walk_flux(cfg, 1, 16, 16, 8).params
    assert ours == _count(module)


#: Published counts, from sources other than suanli or the modules above.
PUBLISHED = {
    # diffusers ModelMixin.num_parameters docstring: the SD 1.5 UNet "859520964"
    ("sd-1.5", "unet"): 859_520_964,
    # SDXL DreamBooth training logs: "unet params = 2567463684"
    ("sdxl", "unet"): 2_567_463_684,
    # NVIDIA AITune inspect guide, stable-diffusion-3-medium-diffusers module table
    ("sd3-medium", "transformer"): 2_028_328_000,
    ("sd3-medium", "text_encoder"): 123_650_304,
    ("sd3-medium", "text_encoder_2"): 694_659_840,
    ("sd3-medium", "text_encoder_3"): 4_762_310_656,
    # the Hub's safetensors metadata of black-forest-labs/FLUX.1-dev (transformer)
    ("flux.1-dev", "transformer"): 11_901_408_320,
    # SD VAE: "VAE : ... 파라미터 수: 83653863" (a published SDXL fine-tuning report)
    ("sdxl", "vae"): 83_653_863,
}


@pytest.mark.parametrize(("pipe_name", "comp_name"), sorted(PUBLISHED))
def test_published_counts(pipe_name: str, comp_name: str) -> None:
    from suanli.answers.image import ImageRequest, generate_image

    answer = generate_image(ImageRequest(pipe_name, "h100-sxm-80gb", ignore_fit=True))
    row = next(c for c in answer.components if c.name == comp_name)
    assert row.params == PUBLISHED[(pipe_name, comp_name)]


def test_sd3_vae_decoder_alone_matches_the_published_module_count() -> None:
    """The AITune table lists SD3's decoder alone (49,545,475): the 16-channel VAE without
    ``post_quant_conv``."""
    pipe = find_pipeline("sd3-medium")
    assert pipe is not None
    assert walk_vae_decoder(pipe.vae.config, 1, 8, 8).params == 49_545_475


def test_unet_flops_match_flop_counter_for_sd15_and_sdxl() -> None:
    for name, res in (("sd-1.5", 32), ("sdxl", 32)):
        pipe = find_pipeline(name)
        assert pipe is not None
        cfg = pipe.denoiser.config
        module = _build("UNet2DConditionModel", cfg)
        cross = int(cfg["cross_attention_dim"])
        kwargs: dict[str, Any] = {}
        if cfg.get("addition_embed_type") == "text_time":
            kwargs["added_cond_kwargs"] = {"text_embeds": _meta(2, 1280), "time_ids": _meta(2, 6)}
        measured = _flops(
            lambda m=module, c=cross, kw=kwargs, r=res: m(
                _meta(2, 4, r, r), torch.tensor([10, 10], device="meta"), _meta(2, 77, c), **kw
            )
        )
        assert walk_unet(cfg, 2, res, res, 77).flops == pytest.approx(measured, rel=1e-9)


def test_dit_flops_match_flop_counter_for_sd3_and_flux() -> None:
    sd3 = find_pipeline("sd3-medium")
    flux = find_pipeline("flux.1-dev")
    assert sd3 is not None and flux is not None
    module = _build("SD3Transformer2DModel", sd3.denoiser.config)
    measured = _flops(
        lambda: module(_meta(2, 16, 32, 32), _meta(2, 333, 4096), _meta(2, 2048), _meta(2))
    )
    assert walk_sd3(sd3.denoiser.config, 2, 32, 32, 333).flops == pytest.approx(measured, rel=1e-9)
    module = _build("FluxTransformer2DModel", flux.denoiser.config)
    tokens = 16 * 16
    measured = _flops(
        lambda: module(
            _meta(1, tokens, 64),
            _meta(1, 512, 4096),
            _meta(1, 768),
            _meta(1),
            _meta(tokens, 3),
            _meta(512, 3),
            _meta(1),
        )
    )
    assert walk_flux(flux.denoiser.config, 1, 32, 32, 512).flops == pytest.approx(
        measured, rel=1e-9
    )


def test_vae_and_text_encoder_flops_match_flop_counter() -> None:
    pipe = find_pipeline("sd3-medium")
    assert pipe is not None
    vae = _build("AutoencoderKL", pipe.vae.config)
    measured = _flops(lambda: vae.decode(_meta(1, 16, 24, 32)))
    assert walk_vae_decoder(pipe.vae.config, 1, 24, 32).flops == pytest.approx(measured, rel=1e-9)
    for comp in pipe.components:
        if comp.cls == "AutoencoderKL" or "Transformer" in comp.cls:
            continue
        module = _build(comp.cls, comp.config)
        ids = torch.zeros((2, 77), dtype=torch.long, device="meta")
        measured = _flops(lambda m=module, i=ids: m(i))
        if comp.cls == "T5EncoderModel":
            ours = walk_t5_encoder(comp.config, 2, 77).flops
        else:
            ours = walk_clip_text(comp.config, 2, 77, comp.cls.endswith("Projection")).flops
        assert ours == pytest.approx(measured, rel=1e-9), comp.name
