"""Text-to-image pipelines from the Hugging Face hub: ``model_index.json`` and each component's
``config.json`` are fetched (JSON only: no weights, no code), cached like a local diffusers
folder and read by :func:`suanli.diffusion.pipeline.read_diffusers_folder`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from suanli.diffusion.pipeline import (
    DENOISERS,
    TEXT_ENCODERS,
    Pipeline,
    PipelineError,
    read_diffusers_folder,
)
from suanli.i18n import N_


def _cache_root() -> Path:
    base = os.environ.get("SUANLI_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "suanli"
    return root / "hub-pipelines"


def hub_pipeline(repo_id: str) -> Pipeline:
    """The pipeline of hub repo ``repo_id`` (PipelineError with one sentence when it cannot be
    fetched or is not a text-to-image pipeline suanli reads)."""
    folder = _cache_root() / repo_id.replace("/", "--")
    if (folder / "model_index.json").is_file():
        return _named(read_diffusers_folder(folder), repo_id)
    hint = N_(
        "cannot fetch model_index.json of {repo!r} from the Hugging Face hub (offline, "
        "private or not a diffusers repo); download the configs and pass the folder"
    ).format(repo=repo_id)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise PipelineError(hint)
    try:
        import huggingface_hub
    except ImportError:
        raise PipelineError(
            N_(
                "reading {name!r} from the hub needs huggingface_hub: pip install 'suanli[hub]'"
            ).format(name=repo_id)
        ) from None
    try:
        index_path = huggingface_hub.hf_hub_download(repo_id, "model_index.json")
        index = json.loads(Path(index_path).read_text(encoding="utf-8"))
    except Exception:  # every hub failure means the same thing to the user
        raise PipelineError(hint) from None
    if not isinstance(index, dict):
        raise PipelineError(
            N_("{repo}: model_index.json is not a JSON object").format(repo=repo_id)
        )
    staging = folder.with_name(folder.name + ".partial")
    staging.mkdir(parents=True, exist_ok=True)
    for name, value in index.items():
        if name.startswith("_") or not isinstance(value, list) or len(value) != 2:
            continue
        if str(value[1]) not in (*DENOISERS, *TEXT_ENCODERS, "AutoencoderKL"):
            continue
        try:
            path = huggingface_hub.hf_hub_download(repo_id, f"{name}/config.json")
        except Exception:
            raise PipelineError(
                N_("{repo}: cannot fetch {name}/config.json; {hint}").format(
                    repo=repo_id, name=name, hint=hint
                )
            ) from None
        (staging / name).mkdir(exist_ok=True)
        (staging / name / "config.json").write_text(
            Path(path).read_text(encoding="utf-8"), encoding="utf-8"
        )
    (staging / "model_index.json").write_text(json.dumps(index), encoding="utf-8")
    pipe = read_diffusers_folder(staging)  # refuses what suanli does not read, before caching
    staging.rename(folder)
    return _named(pipe, repo_id)


def _named(pipe: Pipeline, repo_id: str) -> Pipeline:
    return Pipeline(repo_id, repo_id, pipe.pipeline_class, pipe.components, repo_id, "hub")
