"""A text-to-image pipeline: its components with their real configs, and what one call runs.

A pipeline is read from a bundled preset (``presets/*.json``: the diffusers and transformers
configs of SD 1.5, SDXL, SD3 Medium and FLUX.1 [dev]/[schnell]) or from a local diffusers folder
(``model_index.json`` naming the components, ``<component>/config.json`` for each). Per image the
pipeline encodes the prompt once (and the negative prompt under classifier-free guidance),
runs the denoiser once per step on the latents (twice the batch under guidance) and decodes the
final latents once with the VAE: :func:`pipeline_graphs` walks each of those calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from suanli.diffusion.dit import walk_flux, walk_sd3
from suanli.diffusion.graph import Graph
from suanli.diffusion.text import walk_clip_text, walk_t5_encoder
from suanli.diffusion.unet import walk_unet
from suanli.diffusion.vae import vae_params, walk_vae_decoder
from suanli.i18n import N_
from suanli.limits import MAX_NAME_CHARS, MAX_PATH_CHARS

#: Pixels per latent cell of the autoencoders (three stride-2 stages).
VAE_SCALE = 8

#: What each diffusers pipeline class does by default (the ``__call__`` signature's defaults):
#: denoising steps, width and height, classifier-free guidance, T5 sequence length.
PIPELINE_DEFAULTS: dict[str, dict[str, Any]] = {
    "StableDiffusionPipeline": {"steps": 50, "size": 512, "guidance": True},
    "StableDiffusionXLPipeline": {"steps": 50, "size": 1024, "guidance": True},
    "StableDiffusion3Pipeline": {
        "steps": 28,
        "size": 1024,
        "guidance": True,
        "max_sequence_length": 256,
    },
    "FluxPipeline": {"steps": 28, "size": 1024, "guidance": False, "max_sequence_length": 512},
}

DENOISERS = ("UNet2DConditionModel", "SD3Transformer2DModel", "FluxTransformer2DModel")
TEXT_ENCODERS = ("CLIPTextModel", "CLIPTextModelWithProjection", "T5EncoderModel")


class PipelineError(ValueError):
    """A pipeline that cannot be read (one sentence: what is wrong, what to do)."""


@dataclass(frozen=True)
class Component:
    """One model of the pipeline: its attribute name, class and config."""

    name: str
    cls: str
    config: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Pipeline:
    """A text-to-image pipeline: components and the defaults of its pipeline class."""

    name: str
    title: str
    pipeline_class: str
    components: tuple[Component, ...]
    hub_id: str = ""
    source: str = "preset"
    defaults: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def denoiser(self) -> Component:
        """The UNet or diffusion transformer."""
        return next(c for c in self.components if c.cls in DENOISERS)

    @property
    def vae(self) -> Component:
        """The autoencoder."""
        return next(c for c in self.components if c.cls == "AutoencoderKL")

    def default(self, key: str) -> Any:
        """A default of this pipeline (preset value, else its pipeline class's)."""
        if key in self.defaults:
            return self.defaults[key]
        return PIPELINE_DEFAULTS.get(self.pipeline_class, {}).get(key)


def _preset_dir() -> Any:
    return resources.files("suanli.diffusion").joinpath("presets")


@lru_cache(maxsize=1)
def _preset_documents() -> tuple[dict[str, Any], ...]:
    """The bundled preset files, read once per process."""
    return tuple(
        json.loads(entry.read_text(encoding="utf-8"))
        for entry in sorted(_preset_dir().iterdir(), key=lambda p: p.name)
        if entry.name.endswith(".json")
    )


def pipeline_presets() -> dict[str, Pipeline]:
    """The bundled pipelines by name."""
    pipes = (_from_document(doc, "preset") for doc in _preset_documents())
    return {pipe.name: pipe for pipe in pipes}


def find_pipeline(name: str, *, local_paths: bool = True) -> Pipeline | None:
    """A bundled pipeline by name, alias or hub id (case-insensitive), or (``local_paths``) a
    local diffusers folder; None when ``name`` is neither."""
    key = name.strip().lower()
    for doc in _preset_documents():
        names = [doc["name"], doc.get("hub_id", ""), *doc.get("aliases", ())]
        if key in (n.lower() for n in names if n):
            return _from_document(doc, "preset")
    if not local_paths:
        return None
    path = Path(name).expanduser()
    try:
        is_folder = (
            len(name) < MAX_PATH_CHARS
            and all(len(part) <= MAX_NAME_CHARS for part in path.parts)
            and path.is_dir()
            and (path / "model_index.json").is_file()
        )
    except (OSError, ValueError):
        is_folder = False
    if is_folder:
        return read_diffusers_folder(path)
    return None


def pipeline_refusal(name: str) -> str | None:
    """The sentence that refuses ``name`` as a language model when it names a text-to-image
    pipeline (a bundled one, by name, alias or hub id, or a local diffusers folder), else None;
    :func:`suanli.models.resolve.load_model` raises it (its ``not_a_model``)."""
    if find_pipeline(name) is None:
        return None
    return N_(
        "{name} is a text-to-image pipeline: use suanli perf or mem with --task generate-image"
    ).format(name=name)


def _from_document(doc: dict[str, Any], source: str) -> Pipeline:
    comps = tuple(
        Component(name, spec["class"], spec["config"]) for name, spec in doc["components"].items()
    )
    return Pipeline(
        doc["name"],
        doc.get("title", doc["name"]),
        doc["pipeline"],
        comps,
        doc.get("hub_id", ""),
        source,
        doc.get("defaults", {}),
    )


#: Largest config file read from a diffusers folder (configs are a few KiB).
MAX_CONFIG_BYTES = 1 << 20


def _read_json(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise PipelineError(
                N_("{path} is larger than a config file can be; check the folder").format(path=path)
            )
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise PipelineError(
            N_("{path} nests JSON too deeply; check the file").format(path=path)
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PipelineError(
            N_("cannot read {path} as JSON ({error}); check the file").format(path=path, error=exc)
        ) from None
    if not isinstance(data, dict):
        raise PipelineError(N_("{path} is not a JSON object; check the file").format(path=path))
    return data


def read_diffusers_folder(folder: Path) -> Pipeline:
    """A pipeline from a local diffusers folder: ``model_index.json`` and each component's
    ``config.json`` (nothing else is read; no code in the folder is run)."""
    index = _read_json(folder / "model_index.json")
    pipeline_class = str(index.get("_class_name", ""))
    if pipeline_class not in PIPELINE_DEFAULTS:
        known = ", ".join(PIPELINE_DEFAULTS)
        if pipeline_class:
            raise PipelineError(
                N_("{folder} is a {cls} pipeline; suanli reads {known}").format(
                    folder=folder, cls=pipeline_class, known=known
                )
            )
        raise PipelineError(
            N_("{folder} is a unnamed pipeline; suanli reads {known}").format(
                folder=folder, known=known
            )
        )
    comps = []
    for name, value in index.items():
        if name.startswith("_") or not isinstance(value, list) or len(value) != 2:
            continue
        cls = str(value[1])
        if cls not in (*DENOISERS, *TEXT_ENCODERS, "AutoencoderKL"):
            continue  # tokenizers, schedulers, image processors: no weights on the GPU
        cfg_path = folder / name / "config.json"
        if not cfg_path.is_file():
            raise PipelineError(
                N_("{path} is missing; download the component's config.json").format(path=cfg_path)
            )
        comps.append(Component(name, cls, _read_json(cfg_path)))
    if not any(c.cls in DENOISERS for c in comps) or not any(
        c.cls == "AutoencoderKL" for c in comps
    ):
        raise PipelineError(
            N_("{folder} has no denoiser or no AutoencoderKL; check model_index.json").format(
                folder=folder
            )
        )
    return Pipeline(folder.name, folder.name, pipeline_class, tuple(comps), source="path")


@dataclass(frozen=True)
class Call:
    """One component's call in one image generation: its walk and how often it runs."""

    component: Component
    graph: Graph
    calls_per_image: int
    """Calls per pipeline call (the denoiser: one per step)."""
    role: str
    """``encode``, ``denoise`` or ``decode``."""


def text_tokens(pipe: Pipeline, comp: Component, max_sequence_length: int | None) -> int:
    """Tokens one text encoder reads: CLIP its 77 positions, T5 the pipeline's
    ``max_sequence_length`` (prompts are padded to it)."""
    if comp.cls == "T5EncoderModel":
        return int(max_sequence_length or pipe.default("max_sequence_length") or 256)
    return int(comp.config.get("max_position_embeddings", 77))


def _context(pipe: Pipeline, tokens: dict[str, int]) -> int:
    """Context tokens the denoiser attends to: CLIP's 77 for the UNets, CLIP then T5
    concatenated for SD3, T5 alone for Flux (CLIP gives only the pooled vector)."""
    if pipe.denoiser.cls == "SD3Transformer2DModel":
        clip = max((v for k, v in tokens.items() if "t5" not in k), default=77)
        return clip + sum(v for k, v in tokens.items() if "t5" in k)
    if pipe.denoiser.cls == "FluxTransformer2DModel":
        return sum(v for k, v in tokens.items() if "t5" in k) or 512
    return max(tokens.values(), default=77)


def pipeline_graphs(
    pipe: Pipeline,
    *,
    width: int,
    height: int,
    batch: int,
    guidance: bool,
    max_sequence_length: int | None,
    dtype_bytes: float,
    vae_dtype_bytes: float,
) -> tuple[Call, ...]:
    """Every component's call for ``batch`` images of ``width x height`` pixels."""
    if width % (2 * VAE_SCALE) or height % (2 * VAE_SCALE):
        raise PipelineError(
            N_(
                "--size {width}x{height}: width and height must be multiples of 16; round them"
            ).format(width=width, height=height)
        )
    lh, lw = height // VAE_SCALE, width // VAE_SCALE
    passes = 2 * batch if guidance else batch
    calls: list[Call] = []
    tokens: dict[str, int] = {}
    for comp in pipe.components:
        if comp.cls not in TEXT_ENCODERS:
            continue
        n = text_tokens(pipe, comp, max_sequence_length)
        tokens[("t5:" if comp.cls == "T5EncoderModel" else "clip:") + comp.name] = n
        if comp.cls == "T5EncoderModel":
            graph = walk_t5_encoder(comp.config, passes, n, dtype_bytes)
        else:
            graph = walk_clip_text(
                comp.config, passes, n, comp.cls == "CLIPTextModelWithProjection", dtype_bytes
            )
        calls.append(Call(comp, graph, 1, "encode"))
    den = pipe.denoiser
    context = _context(pipe, tokens)
    if den.cls == "UNet2DConditionModel":
        graph = walk_unet(den.config, passes, lh, lw, context, dtype_bytes)
    elif den.cls == "SD3Transformer2DModel":
        graph = walk_sd3(den.config, passes, lh, lw, context, dtype_bytes)
    else:
        graph = walk_flux(den.config, passes, lh, lw, context, dtype_bytes)
    calls.append(Call(den, graph, 1, "denoise"))
    decoder = walk_vae_decoder(pipe.vae.config, batch, lh, lw, vae_dtype_bytes)
    decoder.params = vae_params(pipe.vae.config)  # the encoder is loaded too
    calls.append(Call(pipe.vae, decoder, 1, "decode"))
    return tuple(calls)
