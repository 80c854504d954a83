"""The web API's models: a preset name, a Hugging Face id or an uploaded config.json, never a
path on the server. Uploads are parsed as JSON only, never executed, and kept in memory."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import find_preset, similar_presets
from suanli.models.resolve import LoadedModel, load_from_hub
from suanli.web.security import ApiError

#: Uploaded configs kept in memory, most recent first out last.
UPLOAD_SLOTS = 64
#: Hugging Face look-ups running at once, and how long another waits for one to finish (s).
HUB_LOOKUPS = 4
HUB_QUEUE_S = 2.0

_UPLOAD = re.compile(r"^upload:([0-9a-f]{16})$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


def _path_like(name: str) -> bool:
    return (
        name.startswith(("/", "\\", "~", "."))
        or any(c in name for c in ("\\", "\x00", ":"))
        or ".." in name
        or name.count("/") > 1
        or name.lower().endswith(".json")
        or bool(re.match(r"^[A-Za-z]:", name))
    )


class Models:
    """Resolves the web API's model strings; holds uploaded configs in memory."""

    def __init__(
        self, allow_hub: bool = True, hub_loader: Callable[[str], LoadedModel] | None = None
    ) -> None:
        self.allow_hub = allow_hub
        self.hub_loader = hub_loader or load_from_hub
        self._uploads: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._hub_slots = threading.BoundedSemaphore(HUB_LOOKUPS)

    def resolve(self, name: str) -> LoadedModel:
        """A preset, an uploaded config or a hub id; anything path-like is refused."""
        name = name.strip()
        if not name:
            raise ApiError(
                400,
                N_(
                    "give a model: a preset name, a Hugging Face id org/name or an uploaded "
                    "config.json"
                ),
            )
        upload = _UPLOAD.match(name)
        if upload:
            with self._lock:
                loaded = self._uploads.get(upload.group(1))
                if loaded is not None:
                    self._uploads.move_to_end(upload.group(1))
            if loaded is None:
                raise ApiError(
                    404, N_("this uploaded config is no longer on the server; upload again")
                )
            return loaded
        if _path_like(name):
            raise ApiError(
                400,
                N_(
                    "model {name!r} looks like a path; the web API takes a preset name, a "
                    "Hugging Face id org/name or an uploaded config.json, never a server path"
                ).format(name=name[:80]),
            )
        preset = find_preset(name)
        if preset is not None:
            spec = spec_from_config(preset.config(), preset.name)
            return LoadedModel(spec, count_params(spec), "preset", preset.name, preset=preset)
        if _HUB_ID.match(name):
            if not self.allow_hub:
                raise ApiError(
                    400,
                    N_(
                        "{name!r} is not a preset and this server does not read the Hugging "
                        "Face hub; upload its config.json instead"
                    ).format(name=name),
                )
            # Hub look-ups wait on the network in the shared thread pool: at most
            # HUB_LOOKUPS at once, so unreachable ids cannot starve every other request.
            if not self._hub_slots.acquire(timeout=HUB_QUEUE_S):
                raise ApiError(
                    503, N_("too many Hugging Face look-ups at once; retry in a few seconds")
                )
            try:
                return self.hub_loader(name)
            finally:
                self._hub_slots.release()
        names = ", ".join(similar_presets(name, 6))
        raise ApiError(
            400,
            N_(
                "unknown model {name!r}: not a preset (e.g. {names}; GET /api/presets lists "
                "all), a Hugging Face id org/name or an uploaded config"
            ).format(name=name[:80], names=names),
        )

    def add(self, raw: bytes, filename: str | None) -> tuple[str, LoadedModel]:
        """Parse an uploaded config.json (JSON only) and keep its model in memory."""
        if not raw.strip():
            raise ApiError(400, N_("the uploaded config.json is empty"))
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ApiError(400, N_("the uploaded config.json is not UTF-8 text")) from None

        def no_constants(token: str) -> Any:
            raise ValueError(N_("{token} is not a number JSON allows").format(token=token))

        try:
            cfg = json.loads(text, parse_constant=no_constants)
        except json.JSONDecodeError as exc:
            raise ApiError(
                400,
                N_("the uploaded config.json is not valid JSON (line {line}: {why})").format(
                    line=exc.lineno, why=exc.msg
                ),
            ) from None
        except RecursionError:
            raise ApiError(400, N_("the uploaded config.json is nested too deeply")) from None
        except ValueError as exc:
            why = N_("a number has too many digits") if "digits" in str(exc) else str(exc)
            raise ApiError(
                400, N_("the uploaded config.json is not valid JSON ({why})").format(why=why)
            ) from None
        if not isinstance(cfg, dict):
            raise ApiError(400, N_("the uploaded config.json must hold a JSON object"))
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", (filename or "config.json").rsplit("/")[-1])
        label = label.strip("-")[:60] or "config.json"
        digest = hashlib.sha256(
            json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode("utf-8")
        ).hexdigest()[:16]
        spec = spec_from_config(cfg, f"upload:{label}")
        loaded = LoadedModel(spec, count_params(spec), "upload", f"upload:{digest}")
        _check_sizes(loaded)
        # A config can pass the reader and still describe nothing the estimators can size:
        # find out now, and say so, rather than fail on the first estimate.
        from suanli.estimate.inference_memory import inference_memory
        from suanli.estimate.memory import training_memory

        try:
            training_memory(spec, TrainWork(task="lora", seq=16))
            inference_memory(spec, InferWork(context=16))
        except ValueError:
            raise
        except Exception as exc:  # arithmetic on nonsense sizes: a bad config, not a bug
            raise ApiError(
                400,
                N_(
                    "the uploaded config.json describes a model suanli cannot size "
                    "({error}); check its sizes and layer counts"
                ).format(error=type(exc).__name__),
            ) from None
        with self._lock:
            self._uploads[digest] = loaded
            self._uploads.move_to_end(digest)
            while len(self._uploads) > UPLOAD_SLOTS:
                self._uploads.popitem(last=False)
        return f"upload:{digest}", loaded


#: Bounds on an uploaded model, far above any real one, so that the estimators' integer
#: arithmetic (numpy int64 in the plan search) cannot overflow on a crafted config.
UPLOAD_BOUNDS = {
    "hidden_size": 1 << 20,
    "num_hidden_layers": 10_000,
    "vocab_size": 1 << 24,
    "num_attention_heads": 1024,
    "intermediate_size": 1 << 22,
    "num_experts": 1 << 16,
}
UPLOAD_MAX_PARAMS = 10**14


def _check_sizes(loaded: LoadedModel) -> None:
    spec = loaded.spec
    sizes = {
        "hidden_size": spec.hidden_size,
        "num_hidden_layers": spec.num_layers,
        "vocab_size": spec.vocab_size,
        "num_attention_heads": spec.attention.num_heads,
        "intermediate_size": max(
            [m.intermediate_size for m in (spec.mlp, spec.moe.expert if spec.moe else None) if m]
            or [0]
        ),
        "num_experts": spec.moe.num_experts if spec.moe else 0,
    }
    for key, value in sizes.items():
        if value > UPLOAD_BOUNDS[key]:
            raise ApiError(
                400,
                N_(
                    "the uploaded config.json has {key} {value:,}, above the {bound:,} "
                    "this page accepts; check the file"
                ).format(key=key, value=value, bound=UPLOAD_BOUNDS[key]),
            )
    if loaded.params.total > UPLOAD_MAX_PARAMS:
        raise ApiError(
            400,
            N_(
                "the uploaded config.json describes {params:.3g} parameters, above the "
                "{bound:.0e} this page accepts; check its sizes"
            ).format(params=loaded.params.total, bound=UPLOAD_MAX_PARAMS),
        )
