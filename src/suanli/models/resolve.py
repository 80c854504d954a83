"""Turn a model argument into a ModelSpec: a preset name, a local path, or a hub id.

- A preset name (``llama-3.1-8b``) reads a bundled ``config.json`` copy: offline, instant.
- A path to a ``config.json``, or a folder that holds one: the folder's ``*.safetensors`` headers
  (never the weights) give the stored parameter count, reported next to ours.
- A hub id (``org/name``) downloads ``config.json`` only (and the safetensors headers through the
  hub's metadata call), caches both under ``~/.cache/suanli/hub``, and never runs remote code.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suanli.i18n import N_
from suanli.limits import MAX_NAME_CHARS, MAX_PATH_CHARS
from suanli.models.config import ModelConfigError, spec_from_config
from suanli.models.params import ParamCount, count_params
from suanli.models.presets import Preset, find_preset, presets
from suanli.models.safetensors import SafetensorsError, StoredParams, stored_params
from suanli.models.spec import ModelSpec

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
    """Where hub configs are cached: ``$SUANLI_CACHE`` or ``~/.cache/suanli``."""
    base = os.environ.get("SUANLI_CACHE") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return (root if os.environ.get("SUANLI_CACHE") else root / "suanli") / "hub"


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
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ModelSourceError(
                N_("{path} is larger than a config can be; check the file").format(path=path)
            )
        text = path.read_text(encoding="utf-8")
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
        raise ModelSourceError(f"{name}: {exc}") from None


def _from_gguf(path: Path, name: str | None = None) -> LoadedModel:
    from suanli.models.gguf import GGUFError, read_gguf

    try:
        header = read_gguf(path)
    except GGUFError as exc:
        raise ModelSourceError(str(exc)) from None
    return _from_gguf_header(header, name or path.name, "path", str(path))


def _from_gguf_header(header: Any, name: str, source: str, location: str) -> LoadedModel:
    from suanli.catalog.formats import gguf_file_format
    from suanli.models.gguf import GGUFError, hf_config

    try:
        cfg = hf_config(header)
    except GGUFError as exc:
        raise ModelSourceError(str(exc)) from None
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


def load_gguf_from_hub(arg: str) -> LoadedModel:
    """``org/name/file.gguf`` on the hub: only the file's header is read, through HTTP range
    requests (``HfFileSystem``), and cached as JSON; the tensor data is never downloaded."""
    from suanli.models.gguf import GGUFError, GGUFHeader, GGUFTensor, read_gguf_stream

    parts = arg.split("/")
    repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
    cached = cache_dir() / repo_id.replace("/", "--") / f"gguf--{filename.replace('/', '--')}.json"
    if cached.is_file():
        raw = _read_json(cached)
        tensors = tuple(GGUFTensor(t[0], tuple(t[1]), int(t[2])) for t in raw["tensors"])
        header = GGUFHeader(int(raw["version"]), raw["metadata"], tensors)
        return _from_gguf_header(header, arg, "hub", arg)
    hint = N_(
        "cannot read the GGUF header of {name!r} from the Hugging Face hub (offline, private or "
        "not found); download the file and pass its path"
    ).format(name=arg)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise ModelSourceError(hint)
    try:
        from huggingface_hub import HfFileSystem
    except ImportError:
        raise ModelSourceError(
            N_(
                "reading {name!r} from the hub needs huggingface_hub: pip install 'suanli[hub]'"
            ).format(name=arg)
        ) from None
    try:
        with HfFileSystem().open(f"{repo_id}/{filename}", "rb", block_size=GGUF_BLOCK_BYTES) as f:
            header = read_gguf_stream(f, arg)
    except GGUFError as exc:
        raise ModelSourceError(str(exc)) from None
    except Exception:  # every hub failure means the same thing to the user
        raise ModelSourceError(hint) from None
    doc = {
        "version": header.version,
        "metadata": header.metadata,
        "tensors": [[t.name, list(t.shape), t.ggml_type] for t in header.tensors],
    }
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(doc), encoding="utf-8")
    except OSError:
        pass  # a read-only cache: the answer stands
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
                N_("{error}; remove it or pass config.json alone").format(error=exc)
            ) from None
    return LoadedModel(spec, count_params(spec), "path", str(path), stored=stored)


def load_from_hub(repo_id: str) -> LoadedModel:
    """A hub id read as JSON: config.json and the safetensors headers, cached; never remote code."""
    cached = cache_dir() / repo_id.replace("/", "--")
    config_path = cached / "config.json"
    stored_path = cached / "safetensors.json"
    if not config_path.is_file():
        _download(repo_id, cached)
    cfg = _read_json(config_path)
    spec = _spec(cfg, repo_id)
    stored = None
    if stored_path.is_file():
        raw = _read_json(stored_path)
        by_dtype = {str(k): int(v) for k, v in raw.get("by_dtype", {}).items()}
        stored = StoredParams(sum(by_dtype.values()), by_dtype, int(raw.get("files", 1)))
    return LoadedModel(spec, count_params(spec), "hub", repo_id, stored=stored)


def _download(repo_id: str, target: Path) -> None:
    """Fetch ``config.json`` and the safetensors header summary of ``repo_id`` into ``target``."""
    offline_hint = N_(
        "cannot fetch config.json for {repo!r} from the Hugging Face hub (offline, private "
        "or not found); use a preset ('suanli models') or pass a local path to its config.json"
    ).format(repo=repo_id)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise ModelSourceError(offline_hint)
    try:
        import huggingface_hub
    except ImportError:
        raise ModelSourceError(
            N_(
                "reading {name!r} from the hub needs huggingface_hub: pip install 'suanli[hub]', "
                "or pass a local path to its config.json"
            ).format(name=repo_id)
        ) from None
    try:
        downloaded = huggingface_hub.hf_hub_download(repo_id, "config.json")
    except Exception:  # every hub failure means the same thing to the user
        raise ModelSourceError(offline_hint) from None
    # Only the JSON is read: a repo's custom modelling code (``auto_map``) is never imported.
    cfg = _read_json(Path(downloaded))
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    try:
        meta = huggingface_hub.get_safetensors_metadata(repo_id)
        summary = {"by_dtype": dict(meta.parameter_count), "files": len(meta.files_metadata)}
        (target / "safetensors.json").write_text(json.dumps(summary), encoding="utf-8")
    except Exception:  # no safetensors, or the header call failed: the stored count is optional
        pass


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
    if not manifest.is_file():
        return None
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
    except (OSError, ValueError, AttributeError):
        return None
    for layer in layers if isinstance(layers, list) else []:
        if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER:
            digest = str(layer.get("digest", ""))
            if re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                blob = root / "blobs" / digest.replace(":", "-")
                return blob if blob.is_file() else None
    return None


def load_model(arg: str) -> LoadedModel:
    """Resolve a model argument: preset name, local path, or hub id (see module docstring)."""
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
    path = Path(arg).expanduser()
    if path_exists(path):
        return _from_path(path)
    preset = find_preset(arg)
    if preset is not None:
        spec = _spec(preset.config(), preset.name)
        return LoadedModel(spec, count_params(spec), "preset", preset.name, preset=preset)
    if (
        arg.lower().endswith(".gguf")
        and arg.count("/") >= 2
        and not arg.startswith((".", "/", "~"))
        and _HUB_ID.match("/".join(arg.split("/")[:2]))
    ):
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
    from suanli.diffusion.pipeline import find_pipeline

    if find_pipeline(arg) is not None:
        raise ModelSourceError(
            N_(
                "{name} is a text-to-image pipeline: use suanli perf or mem with --task "
                "generate-image"
            ).format(name=arg)
        )
    if _HUB_ID.match(arg):
        return load_from_hub(arg)
    names = ", ".join(sorted(presets())[:8])
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
