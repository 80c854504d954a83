"""Text-to-image pipelines from the Hugging Face hub: ``model_index.json`` and each component's
``config.json`` are fetched through huggingface_hub's own cache (JSON only: no weights, no code;
refreshed when the branch moves, read from the cache offline) and read like a local diffusers
folder by :func:`suanli.diffusion.pipeline.read_diffusers_folder`."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from suanli.diffusion.pipeline import (
    DENOISERS,
    PIPELINE_DEFAULTS,
    TEXT_ENCODERS,
    Pipeline,
    PipelineError,
    read_diffusers_folder,
)
from suanli.i18n import N_, message_of
from suanli.models.hub import HubError, current_revision, hub_file, snapshot_commit

#: The component classes whose config is read (the rest hold no weights on the GPU).
READ_CLASSES = (*DENOISERS, *TEXT_ENCODERS, "AutoencoderKL")


def hub_pipeline(repo_id: str, revision: str | None = None) -> Pipeline:
    """The pipeline of hub repo ``repo_id`` at ``revision`` (default: the enclosing
    :func:`suanli.models.hub.hub_revision` block, else main). PipelineError with one sentence
    when it cannot be fetched or is not a text-to-image pipeline suanli reads; its ``__cause__``
    is the typed :class:`suanli.models.hub.HubError` when the hub refused."""
    try:
        revision = current_revision(revision)
        index_path = hub_file(
            repo_id,
            "model_index.json",
            revision=revision,
            missing=N_(
                "{repo!r} has no model_index.json at {revision}, so it is not a diffusers "
                "pipeline; give a pipeline repo or a local diffusers folder"
            ).format(repo=repo_id, revision=revision or "main"),
        )
    except HubError as exc:
        raise PipelineError(message_of(exc)) from exc
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        index = None
    if not isinstance(index, dict):
        raise PipelineError(
            N_("{repo}: model_index.json is not a JSON object").format(repo=repo_id)
        )
    pipeline_class = str(index.get("_class_name", ""))
    if pipeline_class not in PIPELINE_DEFAULTS:  # refused before any component is fetched
        raise PipelineError(
            N_("{folder} is a {cls} pipeline; suanli reads {known}").format(
                folder=repo_id, cls=pipeline_class or "?", known=", ".join(PIPELINE_DEFAULTS)
            )
        )
    # Every component at the commit the index came from, so a branch moving mid-way cannot mix.
    commit = snapshot_commit(index_path) or revision
    folder = index_path.parent
    fetched: dict[str, Path] = {}
    for name, value in index.items():
        if name.startswith("_") or not isinstance(value, list) or len(value) != 2:
            continue
        if str(value[1]) not in READ_CLASSES:
            continue
        try:
            fetched[name] = hub_file(
                repo_id,
                f"{name}/config.json",
                revision=commit,
                missing=N_(
                    "{repo!r} has no {name}/config.json at {revision}; pass a local diffusers "
                    "folder"
                ).format(repo=repo_id, name=name, revision=commit or "main"),
            )
        except HubError as exc:
            raise PipelineError(message_of(exc)) from exc
    if all(path == folder / name / "config.json" for name, path in fetched.items()):
        return _named(read_diffusers_folder(folder), repo_id)
    # Files outside one snapshot folder (a cache laid out otherwise): read them side by side.
    with tempfile.TemporaryDirectory(prefix="suanli-pipeline-") as tmp:
        staging = Path(tmp)
        shutil.copyfile(index_path, staging / "model_index.json")
        for name, path in fetched.items():
            (staging / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, staging / name / "config.json")
        return _named(read_diffusers_folder(staging), repo_id)


def _named(pipe: Pipeline, repo_id: str) -> Pipeline:
    return Pipeline(repo_id, repo_id, pipe.pipeline_class, pipe.components, repo_id, "hub")
