"""Bundled model presets: real ``config.json`` copies that work offline by name.

``presets/index.toml`` lists each preset with its Hugging Face id, where the config came from,
and the published parameter count with its source (``docs/models.md`` shows the comparison).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from suanli.catalog.toml_cache import parse_bundled_toml

#: The model every command and the page use when none is named: one declaration for all views.
DEFAULT_MODEL = "llama-3.1-8b"


@dataclass(frozen=True)
class Preset:
    """One bundled model."""

    name: str
    """What users type, e.g. ``llama-3.1-8b``."""
    file: str
    hf_id: str
    family: str
    display: str
    config_source: str
    published_params_total: int | None = None
    published_params_active: int | None = None
    params_exact: bool = False
    """The published figure is an exact count (not rounded like "7.6B")."""
    published_buffers: int = 0
    """Elements in the published total that are buffers, not parameters (Llama 2 inv_freq)."""
    active_excludes_embeddings: bool = False
    """The publisher's active count leaves out the embedding table (DeepSeek)."""
    params_source: str = ""
    date: str = ""

    def config(self) -> dict[str, Any]:
        """The preset's ``config.json`` as a dict."""
        text = (resources.files("suanli.models") / "presets" / self.file).read_text("utf-8")
        data: dict[str, Any] = json.loads(text)
        return data


@lru_cache(maxsize=1)
def presets() -> dict[str, Preset]:
    """All bundled presets by name."""
    text = (resources.files("suanli.models") / "presets" / "index.toml").read_text("utf-8")
    out: dict[str, Preset] = {}
    for raw in parse_bundled_toml(text, "models/presets/index.toml").get("preset", []):
        fields = {k: raw[k] for k in Preset.__dataclass_fields__ if k in raw}
        preset = Preset(**fields)
        out[preset.name] = preset
    return out


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(" ", "-")


def find_preset(name: str) -> Preset | None:
    """The preset called ``name`` (case, spaces and underscores forgiven), or its HF id."""
    table = presets()
    key = _key(name)
    for preset in table.values():
        if key in (_key(preset.name), _key(preset.hf_id), _key(preset.hf_id.split("/")[-1])):
            return preset
    return None


def _squash(name: str) -> str:
    """Letters and digits only, lower-cased: ``Llama3.1_8B`` -> ``llama318b``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _similarity(query: str, preset: Preset) -> tuple[float, float]:
    """How alike ``query`` and the preset's names are: first with case, separators and dots set
    aside (``llama3.1-8b`` and ``llama-3.1-8b`` are the same), then as typed (a tie breaker)."""
    names = (preset.name, preset.hf_id, preset.hf_id.split("/")[-1])
    squashed = _squash(query)
    loose = max(difflib.SequenceMatcher(None, squashed, _squash(n)).ratio() for n in names)
    exact = max(difflib.SequenceMatcher(None, query.lower(), n.lower()).ratio() for n in names)
    return loose, exact


def similar_presets(name: str, limit: int = 8) -> list[str]:
    """The ``limit`` preset names most like ``name``, most alike first (for "did you mean"):
    ``similar_presets("llama3.1-8b")[0] == "llama-3.1-8b"``."""
    ranked = sorted(presets().values(), key=lambda p: (*(-x for x in _similarity(name, p)), p.name))
    return [p.name for p in ranked[:limit]]
