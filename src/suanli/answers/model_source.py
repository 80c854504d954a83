"""A model name as the answers take it: :func:`suanli.models.resolve.load_model`, told about the
text-to-image pipelines of :mod:`suanli.diffusion`, which sits above the models layer and so
cannot be looked up from it. A pipeline's name (``sdxl``, ``flux.1-dev``, their hub ids) is then
refused with a pointer to ``--task generate-image`` before the hub is asked for a config.json a
diffusers repository does not have.
"""

from __future__ import annotations

from suanli.models.resolve import LoadedModel
from suanli.models.resolve import load_model as load_language_model


def _pipeline_refusal(name: str) -> str | None:
    # Imported on use: the pipeline presets are read only for a name no model matched.
    from suanli.diffusion.pipeline import pipeline_refusal

    return pipeline_refusal(name)


def load_model(arg: str, revision: str | None = None) -> LoadedModel:
    """Resolve a model argument (a preset, a local path, an Ollama model or a hub id; see
    :func:`suanli.models.resolve.load_model`), refusing a text-to-image pipeline's name in one
    sentence that says how to estimate it."""
    return load_language_model(arg, revision, not_a_model=_pipeline_refusal)
