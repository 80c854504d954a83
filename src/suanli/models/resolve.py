"""Turn a model argument into a ModelSpec: a preset name, a local path, or a hub id.

- A preset name (``llama-3.1-8b``) reads a bundled ``config.json`` copy: offline, instant.
- A path to a ``config.json``, or a folder that holds one: the folder's ``*.safetensors`` headers
  (never the weights) give the stored parameter count, reported next to ours.
- A hub id (``org/name``, at ``--revision`` when given) reads ``config.json`` through
  huggingface_hub's own cache (refreshed when the branch moves, served from the cache offline)
  and the safetensors headers through the hub's metadata call, whose summary suanli keeps by
  commit under its cache directory; no remote code is ever run (see :mod:`suanli.models.hub`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suanli.i18n import N_, concat, message_of
from suanli.limits import MAX_NAME_CHARS, MAX_PATH_CHARS
from suanli.models.config import ModelConfigError, spec_from_config
from suanli.models.hub import (
    HubError,
    HubOfflineError,
    HubUnreachableError,
    current_revision,
    hub_error,
    hub_file,
    is_commit,
    is_offline,
    library,
    offline_error,
    resolved_commit,
    safetensors_summary,
    snapshot_commit,
)
from suanli.models.params import ParamCount, count_params
from suanli.models.presets import Preset, find_preset, similar_presets
from suanli.models.safetensors import SafetensorsError, StoredParams, stored_params
from suanli.models.spec import ModelSpec
from suanli.safe_files import UnsafeFileError, read_regular_text

#: Largest config.json read (real ones are a few KiB; a GGUF-converted tokenizer is not one).
MAX_CONFIG_BYTES = 16 << 20

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ModelSourceError(ValueError):
    """The model argument cannot be read; the message says what to pass instead."""


@dataclass(frozen=True)
class LoadedModel:
    """A model spec with where it came from and what its checkpoint stores."""

    spec: ModelSpec
    params: ParamCount
    source: str
    """``preset``, ``path``, ``hub`` or ``ollama`` (a locally pulled Ollama model's GGUF blob)."""
    location: str
    """Preset name, file path or hub id."""
    preset: Preset | None = None
    stored: StoredParams | None = None
    """Element counts from safetensors headers, when available."""
    weight_format: str | None = None
    """The format the file stores its weights in (a GGUF file's exact mix), when known."""
    quantization: dict[str, int] | None = None
    """A GGUF file's tensor count per quantisation type."""


def cache_dir() -> Path:
    """Where suanli keeps what it derives from hub files (safetensors summaries, GGUF headers),
    one folder per repo and commit: ``hub`` under :func:`suanli.paths.cache_dir` (which honours
    ``$SUANLI_CACHE``). The hub's files themselves stay in huggingface_hub's cache."""
    from suanli.paths import cache_dir as suanli_cache

    return suanli_cache() / "hub"


def _repo_dir(repo_id: str) -> Path:
    return cache_dir() / repo_id.replace("/", "--")


def _ref_file(repo_id: str, revision: str | None) -> Path:
    """Where the commit a branch or tag last pointed to is noted (like the hub cache's refs/)."""
    return _repo_dir(repo_id) / "refs" / (revision or "main").replace("/", "--")


def _commit_of(repo_id: str, revision: str | None) -> str:
    """The commit ``revision`` points to: asked of the hub, or (offline, unreachable) the one
    noted when it was last read."""
    if revision is not None and is_commit(revision):
        return revision
    try:
        return resolved_commit(repo_id, revision)
    except (HubOfflineError, HubUnreachableError):
        with suppress(OSError, UnicodeDecodeError):
            noted = _ref_file(repo_id, revision).read_text(encoding="utf-8").strip()
            if is_commit(noted):
                return noted
        raise


def _note(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        pass  # a read-only cache: the answer stands


def path_exists(path: Path) -> bool:
    """``path.exists()``, false for names the OS refuses (a component over NAME_MAX bytes, a
    path over PATH_MAX): such a name is not a file the user has."""
    if any(len(part.encode("utf-8", "replace")) > MAX_NAME_CHARS for part in path.parts):
        return False
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = read_regular_text(path, MAX_CONFIG_BYTES)
    except UnsafeFileError as exc:
        raise ModelSourceError(message_of(exc)) from None
    except OSError as exc:
        raise ModelSourceError(
            N_("cannot read {path} ({error}); check the path").format(path=path, error=exc.strerror)
        ) from None
    except UnicodeDecodeError:
        raise ModelSourceError(
            N_("{path} is not UTF-8 text; pass a config.json").format(path=path)
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelSourceError(
            N_("{path} is not valid JSON (line {line}: {error}); fix or re-download it").format(
                path=path, line=exc.lineno, error=exc.msg
            )
        ) from None
    except RecursionError:
        raise ModelSourceError(
            N_("{path} nests JSON too deeply to be a config; check it").format(path=path)
        ) from None
    if not isinstance(data, dict):
        raise ModelSourceError(
            N_("{path} must hold a JSON object with the model's config").format(path=path)
        )
    return data


def _spec(cfg: dict[str, Any], name: str) -> ModelSpec:
    try:
        return spec_from_config(cfg, name)
    except ModelConfigError as exc:
        raise ModelSourceError(concat(name, N_(": "), message_of(exc))) from None


def _from_gguf(path: Path, name: str | None = None) -> LoadedModel:
    from suanli.models.gguf import GGUFError, read_gguf

    try:
        header = read_gguf(path)
    except GGUFError as exc:
        raise ModelSourceError(message_of(exc)) from None
    return _from_gguf_header(header, name or path.name, "path", str(path))


def _from_gguf_header(header: Any, name: str, source: str, location: str) -> LoadedModel:
    from suanli.catalog.formats import gguf_file_format
    from suanli.models.gguf import GGUFError, hf_config

    try:
        cfg = hf_config(header)
    except GGUFError as exc:
        raise ModelSourceError(message_of(exc)) from None
    spec = _spec(cfg, name)
    params = count_params(spec)
    bits = 8 * header.weight_bytes / max(params.total, 1)
    stored = StoredParams(header.parameters, {t: 0 for t in header.types()}, 1)
    return LoadedModel(
        spec,
        params,
        source,
        location,
        stored=stored,
        weight_format=gguf_file_format(bits),
        quantization=header.types(),
    )


#: Bytes fetched per HTTP range request while reading a hub GGUF header.
GGUF_BLOCK_BYTES = 1 << 20


def load_gguf_from_hub(arg: str, revision: str | None = None) -> LoadedModel:
    """``org/name/file.gguf`` on the hub, at ``revision`` (default: main): only the file's header
    is read, through HTTP range requests (``HfFileSystem``), and kept as JSON by commit, so a
    moved branch is read again; the tensor data is never downloaded."""
    from suanli.models.gguf import GGUFError, GGUFHeader, GGUFTensor, read_gguf_stream

    parts = arg.split("/")
    repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
    revision = current_revision(revision)
    try:
        commit = _commit_of(repo_id, revision)
    except HubOfflineError:
        offline = offline_error(repo_id, filename, revision)
        raise ModelSourceError(str(offline)) from offline
    except HubError as exc:
        raise ModelSourceError(message_of(exc)) from exc
    cached = _repo_dir(repo_id) / commit / f"gguf--{filename.replace('/', '--')}.json"
    if cached.is_file():
        raw = _read_json(cached)
        tensors = tuple(GGUFTensor(t[0], tuple(t[1]), int(t[2])) for t in raw["tensors"])
        header = GGUFHeader(int(raw["version"]), raw["metadata"], tensors)
        _note(_ref_file(repo_id, revision), commit)
        return _from_gguf_header(header, arg, "hub", arg)
    if is_offline():
        offline = offline_error(repo_id, filename, revision)
        raise ModelSourceError(str(offline)) from offline
    try:
        fs = library().HfFileSystem()
        path = f"{repo_id}@{commit}/{filename}"
        with fs.open(path, "rb", block_size=GGUF_BLOCK_BYTES) as f:
            header = read_gguf_stream(f, arg)
    except GGUFError as exc:
        raise ModelSourceError(message_of(exc)) from None
    except Exception as exc:  # a typed sentence for each hub failure
        error = hub_error(exc, repo_id, revision=revision, filename=filename)
        raise ModelSourceError(message_of(error)) from error
    doc = {
        "version": header.version,
        "metadata": header.metadata,
        "tensors": [[t.name, list(t.shape), t.ggml_type] for t in header.tensors],
    }
    _note(cached, json.dumps(doc))
    _note(_ref_file(repo_id, revision), commit)
    return _from_gguf_header(header, arg, "hub", arg)


def _from_path(path: Path) -> LoadedModel:
    if path.is_file() and path.suffix.lower() == ".gguf":
        return _from_gguf(path)
    folder = path if path.is_dir() else path.parent
    config_path = path / "config.json" if path.is_dir() else path
    if path.is_dir() and (path / "model_index.json").is_file():
        raise ModelSourceError(
            N_(
                "{path} is a diffusers pipeline: use suanli perf or mem with --task generate-image"
            ).format(path=path)
        )
    if not config_path.is_file():
        raise ModelSourceError(
            N_("{path} holds no config.json; pass the model folder or its config.json").format(
                path=path
            )
        )
    cfg = _read_json(config_path)
    spec = _spec(cfg, str(path))
    stored = None
    shards = sorted(folder.glob("*.safetensors"))
    if shards:
        try:
            stored = stored_params(shards)
        except SafetensorsError as exc:
            raise ModelSourceError(
                N_("{error}; remove it or pass config.json alone").format(error=message_of(exc))
            ) from None
    return LoadedModel(spec, count_params(spec), "path", str(path), stored=stored)


def load_from_hub(repo_id: str, revision: str | None = None) -> LoadedModel:
    """A hub id at ``revision`` (default: main) read as JSON: ``config.json`` through
    huggingface_hub's cache, and the safetensors headers' summary kept by commit; never remote
    code. Raises :class:`ModelSourceError` whose ``__cause__`` is the typed
    :class:`suanli.models.hub.HubError` (gated, not found, no such revision, offline...)."""
    revision = current_revision(revision)
    missing = N_(
        "{repo!r} has no config.json at {revision}, so it is not a transformers model; use a "
        "preset ('suanli models') or pass a local path to its config.json"
    ).format(repo=repo_id, revision=revision or "main")
    try:
        config_path = hub_file(repo_id, "config.json", revision=revision, missing=missing)
    except HubError as exc:
        raise ModelSourceError(message_of(exc)) from exc
    # Only the JSON is read: a repo's custom modelling code (``auto_map``) is never imported.
    cfg = _read_json(config_path)
    spec = _spec(cfg, repo_id)
    commit = snapshot_commit(config_path)
    summary: dict[str, Any] | None = None
    noted = _repo_dir(repo_id) / commit / "safetensors.json" if commit else None
    if noted is not None and noted.is_file():
        with suppress(ModelSourceError):
            summary = _read_json(noted)
    if summary is None:
        summary = safetensors_summary(repo_id, commit or revision)
        if summary is not None and noted is not None:
            _note(noted, json.dumps(summary))
    stored = None
    if summary is not None:
        by_dtype = {str(k): int(v) for k, v in summary.get("by_dtype", {}).items()}
        stored = StoredParams(sum(by_dtype.values()), by_dtype, int(summary.get("files", 1)))
    return LoadedModel(spec, count_params(spec), "hub", repo_id, stored=stored)


_OLLAMA_NAME = re.compile(
    r"^(?:([a-z0-9][a-z0-9._-]*)/)?([a-z0-9][a-z0-9._-]*)(?::([A-Za-z0-9._-]+))?$"
)
#: The manifest layer that holds an Ollama model's GGUF weights.
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"


def ollama_blob(arg: str) -> Path | None:
    """The GGUF blob of a locally pulled Ollama model (``llama3.1:8b``, ``qwen2.5``), found
    through its manifest under ``$OLLAMA_MODELS`` or ``~/.ollama/models``; None when absent."""
    m = _OLLAMA_NAME.match(arg)
    if m is None:
        return None
    namespace, name, tag = m.group(1) or "library", m.group(2), m.group(3) or "latest"
    root = Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")
    manifest = root / "manifests" / "registry.ollama.ai" / namespace / name / tag
    try:
        # a name longer than the file system's (ENAMETOOLONG) is no pulled model either
        text = read_regular_text(manifest, MAX_CONFIG_BYTES)
        layers = json.loads(text).get("layers", [])
    except (OSError, ValueError, AttributeError):
        return None
    for layer in layers if isinstance(layers, list) else []:
        if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
            digest = str(layer.get("digest", ""))
            if re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                blob = root / "blobs" / digest.replace(":", "-")
                with suppress(OSError):
                    if blob.is_file():
                        return blob
                return None
    return None


def _hub_gguf(arg: str) -> bool:
    """Whether ``arg`` names a GGUF file of a hub repo (``org/name/file.gguf``)."""
    return (
        arg.lower().endswith(".gguf")
        and arg.count("/") >= 2
        and not arg.startswith((".", "/", "~"))
        and bool(_HUB_ID.match("/".join(arg.split("/")[:2])))
    )


def load_model(
    arg: str,
    revision: str | None = None,
    *,
    not_a_model: Callable[[str], str | None] | None = None,
) -> LoadedModel:
    """Resolve a model argument: preset name, local path, or hub id (see module docstring).

    ``revision`` (a branch, tag or commit; default: the enclosing
    :func:`suanli.models.hub.hub_revision` block, else main) sends a hub id to the hub even when
    a preset has the same id; it applies to hub ids only. ``not_a_model`` recognises a name that
    is no preset, path or Ollama model but something else suanli knows, before it is asked of the
    hub: it returns the sentence that refuses it, or None. The answers pass the text-to-image
    pipelines (:func:`suanli.answers.model_source.load_model`); this layer cannot look them up."""
    if not arg or not arg.strip():
        raise ModelSourceError(
            N_("empty model name; pass a preset ('suanli models'), a path or org/name")
        )
    if len(arg) > MAX_PATH_CHARS or "\x00" in arg:
        raise ModelSourceError(
            N_(
                "the model name is {length:,} characters long; give a preset, a path or org/name"
            ).format(length=len(arg))
        )
    try:
        revision = current_revision(revision)
    except ValueError as exc:
        raise ModelSourceError(message_of(exc)) from None
    if revision is not None:
        if _hub_gguf(arg):
            return load_gguf_from_hub(arg, revision)
        if _HUB_ID.match(arg):
            return load_from_hub(arg, revision)
        raise ModelSourceError(
            N_(
                "a revision ({revision}) applies to a Hugging Face id org/name, not to {name!r}; "
                "drop --revision or give the hub id"
            ).format(revision=revision, name=arg)
        )
    path = Path(arg).expanduser()
    if path_exists(path):
        return _from_path(path)
    preset = find_preset(arg)
    if preset is not None:
        spec = _spec(preset.config(), preset.name)
        return LoadedModel(spec, count_params(spec), "preset", preset.name, preset=preset)
    if _hub_gguf(arg):
        return load_gguf_from_hub(arg)
    if arg.endswith(".json") or arg.startswith((".", "/", "~")) or arg.count("/") > 1:
        raise ModelSourceError(N_("no such file {path!r}; check the path").format(path=arg))
    blob = ollama_blob(arg)
    if blob is not None:
        loaded = _from_gguf(blob, arg)
        return LoadedModel(
            loaded.spec,
            loaded.params,
            "ollama",
            arg,
            stored=loaded.stored,
            weight_format=loaded.weight_format,
            quantization=loaded.quantization,
        )
    refusal = not_a_model(arg) if not_a_model is not None else None
    if refusal is not None:
        raise ModelSourceError(refusal)
    if _HUB_ID.match(arg):
        return load_from_hub(arg)
    names = ", ".join(similar_presets(arg))
    raise ModelSourceError(
        N_(
            "unknown model {name!r}: not a preset (e.g. {examples}; 'suanli models' lists all), "
            "a local config.json or folder, or a hub id org/name"
        ).format(name=arg, examples=names)
    )


def model_from_module(module: Any) -> ModelSpec:
    """A ModelSpec for a ``transformers`` model object (its ``config`` is read as a dict)."""
    config = getattr(module, "config", None)
    if config is None or not hasattr(config, "to_dict"):
        raise ModelSourceError(
            N_(
                "this module has no transformers config; use suanli.module_params(module) for "
                "counts"
            )
        )
    cfg = config.to_dict()
    cfg.setdefault("model_type", getattr(config, "model_type", ""))
    return _spec(cfg, type(module).__name__)
