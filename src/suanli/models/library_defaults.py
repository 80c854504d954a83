"""The defaults ``transformers`` applies to the keys a ``config.json`` leaves out.

A config file may omit any key its configuration class declares: ``transformers`` then builds
the model with the class's default (``Ernie4_5Config.head_dim`` is 128 and its embeddings are
tied, whatever ``hidden_size // num_attention_heads`` says). suanli reads the same defaults so a
short hand-written config counts the model transformers would build.

Where the defaults come from:

- ``transformers`` itself, when the process has already imported it (a training script, a
  notebook, the tests): the configuration class of the installed version is read, never its
  modeling code.
- otherwise the table ``data/config_defaults.json``, generated from the transformers version of
  the locked test environment by ``scripts/gen_config_defaults.py``. Importing transformers to
  read it live would cost seconds and pull in torch, which planning commands must not do.
  ``tests/models/test_library_defaults.py`` checks the table against the installed version.

Only scalar defaults that are not ``None`` are kept: a ``None`` default means the class derives
the value from other keys (``num_key_value_heads`` from ``num_attention_heads``), which each
family reader already does; nested sub-configs are read by their own model type.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import sys
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

#: Scalar JSON types a default may have.
Scalar = bool | int | float | str

TABLE_FILE = "config_defaults.json"


@dataclasses.dataclass(frozen=True)
class ClassDefaults:
    """One configuration class's defaults: ``{key: value}`` and its ``{alias: key}`` map."""

    defaults: Mapping[str, Scalar]
    aliases: Mapping[str, str]


def _declared(cls: type) -> dict[str, Any]:
    """Keyword defaults the class declares: dataclass fields (transformers 5) or the keyword
    arguments of ``__init__`` (transformers 4), the class's own and its parents' alike."""
    # The base class's own keys (return_dict, output_attentions, ...) shape no model.
    base = {"PreTrainedConfig", "PretrainedConfig", "object"}
    if dataclasses.is_dataclass(cls):
        inherited = {
            f.name
            for klass in cls.__mro__
            if klass.__name__ in base and dataclasses.is_dataclass(klass)
            for f in dataclasses.fields(klass)
        }
        return {
            f.name: f.default
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING and f.name not in inherited
        }
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None or klass.__name__ in base:
            continue
        for name, param in inspect.signature(init).parameters.items():
            keyword = param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and name != "self"
            if keyword and param.default is not inspect.Parameter.empty:
                out[name] = param.default
    return out


def class_defaults(cls: type) -> ClassDefaults:
    """The scalar, non-``None`` defaults of a transformers configuration class."""
    declared = _declared(cls)
    # transformers 4 sets tie_word_embeddings in the base class from **kwargs (default True),
    # so it is in no signature; an instance built with the defaults has it.
    # So does transformers 5 when the class does not declare it: the base class's field.
    if "tie_word_embeddings" not in declared:
        # a class that cannot be built without arguments keeps what it declares
        with contextlib.suppress(Exception):
            declared["tie_word_embeddings"] = getattr(cls(), "tie_word_embeddings", None)
    defaults = {
        key: value
        for key, value in sorted(declared.items())
        if isinstance(value, (bool, int, float, str)) and not key.startswith("_")
    }
    aliases = {str(k): str(v) for k, v in sorted(getattr(cls, "attribute_map", {}).items())}
    return ClassDefaults(defaults, aliases)


def _live(model_type: str) -> ClassDefaults | None:
    """The defaults of the transformers already imported in this process, if it knows the type."""
    if "transformers" not in sys.modules:
        return None
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        cls = CONFIG_MAPPING[model_type]
    except Exception:  # an unknown type, or a transformers too old for the auto mapping
        return None
    return class_defaults(cls)


@cache
def _table() -> dict[str, Any]:
    text = (resources.files("suanli.models") / "data" / TABLE_FILE).read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def table_version() -> str:
    """The transformers version the shipped table was generated from."""
    return str(_table()["transformers"])


def defaults_for(model_type: str) -> ClassDefaults | None:
    """The defaults transformers applies for ``model_type``: the imported library's, else the
    shipped table's; ``None`` for a type neither knows."""
    live = _live(model_type)
    if live is not None:
        return live
    entry = _table()["model_types"].get(model_type)
    if entry is None:
        return None
    return ClassDefaults(entry["defaults"], entry["aliases"])


@dataclasses.dataclass(frozen=True)
class Filled:
    """A config with its class's defaults applied, and which keys the defaults supplied."""

    config: dict[str, Any]
    defaulted: tuple[str, ...]
    """Keys the file left out (under every alias) that a class default now sets."""
    source: str
    """Where the defaults came from: ``transformers X.Y.Z``."""


def fill_defaults(cfg: Mapping[str, Any]) -> Filled:
    """``cfg`` with every key it leaves out set to its configuration class's default.

    A key counts as given when the config sets it under its own name or under an alias
    (``n_embd`` for GPT-2's ``hidden_size``), and the alias's value is copied to the key, as
    transformers' ``attribute_map`` does; a key set to ``null`` is left null, as transformers
    leaves it for the class to derive."""
    out = dict(cfg)
    model_type = str(cfg.get("model_type", ""))
    live = _live(model_type)
    found = live if live is not None else defaults_for(model_type)
    if found is None:
        return Filled(out, (), "")
    for alias, key in found.aliases.items():
        if alias in cfg and key not in cfg:
            out[key] = cfg[alias]
    defaulted = []
    for key, value in found.defaults.items():
        if key not in out:
            out[key] = value
            defaulted.append(key)
    if live is not None:
        import transformers

        version = str(transformers.__version__)
    else:
        version = table_version()
    return Filled(out, tuple(defaulted), f"transformers {version}")


def with_library_defaults(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``cfg`` with every key it leaves out set to its configuration class's default
    (:func:`fill_defaults`'s config)."""
    return fill_defaults(cfg).config


#: Defaulted keys worth a note besides the integer sizes: they change the parameter count.
_SHAPE_FLAGS = frozenset({"tie_word_embeddings", "attention_bias", "mlp_bias", "use_bias", "bias"})


def defaults_note(filled: Filled) -> str | None:
    """One sentence naming the sizes a class default supplied (shown by ``suanli model``), or
    ``None`` when the file gave every size itself."""
    from suanli.i18n import N_
    from suanli.models.validate import INT_FIELDS

    keys = [k for k in filled.defaulted if k in INT_FIELDS or k in _SHAPE_FLAGS]
    if not keys:
        return None
    model_type = filled.config.get("model_type")
    return N_(
        "not in config.json, so the {model_type} configuration class's defaults apply "
        "({source}): {keys}"
    ).format(
        model_type=model_type,
        source=filled.source,
        keys=", ".join(f"{k}={filled.config[k]}" for k in keys),
    )
