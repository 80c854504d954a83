"""Number types for every option: finite, bounded, one sentence when not (exit 2).

click's ``FloatRange`` lets ``nan`` through (every comparison with NaN is false) and accepts
``inf``; its ``IntRange`` without a maximum accepts integers no C type holds. These subclasses
refuse both, and give every option without a stated maximum the defaults of
:mod:`suanli.limits`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import click

from suanli.i18n import N_
from suanli.limits import BY_NAME, MAX_FLOAT, MAX_INT


def bind_named_cap(param: click.Parameter) -> None:
    """Give ``param``'s number type the ceiling :data:`suanli.limits.BY_NAME` has for its name,
    when the option states none of its own (its --help then shows the real range)."""
    _bind(param.type, param.name)


def _bind(kind: Any, name: str | None) -> None:
    if isinstance(kind, (IntRange, FloatRange)) and kind.named and name in BY_NAME:
        cap = BY_NAME[name]
        kind.max = int(cap) if isinstance(kind, IntRange) else cap
        kind.named = False


class FloatRange(click.FloatRange):
    """A finite float within ``[min, max]`` (``max``: the option's in :mod:`suanli.limits`, else
    :data:`MAX_FLOAT`)."""

    def __init__(
        self,
        min: float | None = None,
        max: float | None = None,
        *,
        allow_inf: bool = False,
        **kw: Any,
    ) -> None:
        self.named = max is None
        self.allow_inf = allow_inf
        super().__init__(min, MAX_FLOAT if max is None else max, **kw)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Parse, refuse NaN and infinities (``+inf`` where ``allow_inf`` documents a meaning,
        such as ``capacity --rate inf``: all requests at once), then check the range."""
        _bind(self, getattr(param, "name", None))
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(N_("{value!r} is not a valid float.").format(value=value), param, ctx)
        if math.isnan(number) or (
            not math.isfinite(number) and not (self.allow_inf and number > 0)
        ):
            self.fail(
                N_("{value!r} is not a finite number; give one such as 1.5").format(value=value),
                param,
                ctx,
            )
        if math.isinf(number):
            return number  # the documented +inf, above every finite bound
        return super().convert(number, param, ctx)


class IntRange(click.IntRange):
    """An integer within ``[min, max]`` (``max``: the option's in :mod:`suanli.limits`, else
    :data:`MAX_INT`)."""

    def __init__(self, min: int | None = None, max: int | None = None, **kw: Any) -> None:
        self.named = max is None
        super().__init__(min, MAX_INT if max is None else max, **kw)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Parse, check against the option's own ceiling and the range."""
        _bind(self, getattr(param, "name", None))
        if isinstance(value, str):  # our sentence: click's names its type in English
            try:
                value = int(value)
            except ValueError:
                self.fail(N_("{value!r} is not a valid integer.").format(value=value), param, ctx)
        return super().convert(value, param, ctx)


# --------------------------------------------------------------------------- shell completion
# A shell asks for completions on every <Tab>: only the preset index and the GPU catalog are read
# (tens of milliseconds), never the estimators, torch or the hub.


def _looks_like_path(text: str) -> bool:
    return text.startswith((".", "/", "~")) or text.endswith(".json")


def _squash(text: str) -> str:
    """Lower-case letters and digits only: ``Llama-3.1`` -> ``llama31``."""
    return "".join(c for c in text.lower() if c.isalnum())


def _ranked(incomplete: str, rows: Sequence[tuple[str, tuple[str, ...], str]]) -> list[Any]:
    """Completion items for ``rows`` (value, names it answers to, description): the values
    starting with what was typed first, then those whose names contain it."""
    from click.shell_completion import CompletionItem

    typed = incomplete.lower()
    squashed = _squash(incomplete)
    first, then = [], []
    for value, names, description in rows:
        item = CompletionItem(value, help=description)
        if value.lower().startswith(typed):
            first.append(item)
        elif any(squashed in _squash(n) for n in names):
            then.append(item)
    return sorted(first, key=lambda i: i.value) + sorted(then, key=lambda i: i.value)


class ModelName(click.types.StringParamType):
    """A model argument (preset name, path or hub id) whose completions are the presets."""

    def shell_complete(self, ctx: Any, param: Any, incomplete: str) -> list[Any]:
        """Preset names that start with (then contain) ``incomplete``; files for a path."""
        from click.shell_completion import CompletionItem

        if _looks_like_path(incomplete):
            return [CompletionItem(incomplete, type="file")]
        from suanli.models.presets import presets

        rows = [(p.name, (p.name, p.hf_id), p.display) for p in presets().values()]
        return _ranked(incomplete, rows)


class GpuName(click.types.StringParamType):
    """A GPU argument or option whose completions are the catalog's ids (the user's file
    included)."""

    def shell_complete(self, ctx: Any, param: Any, incomplete: str) -> list[Any]:
        """GPU ids that start with ``incomplete``, then those whose id, name or alias contain
        it (``4090`` -> ``rtx-4090``, ``rtx-4090d``)."""
        from suanli.catalog import bundled_gpus, load_catalog

        try:
            gpus = list(load_catalog())
        except (OSError, ValueError):  # a broken user catalog: complete from the bundled one
            gpus = list(bundled_gpus())
        rows = [(g.id, (g.id, g.name, *g.aliases), g.name) for g in gpus]
        return _ranked(incomplete, rows)


#: Parameter names that take a model (``suanli mem MODEL``, ``suanli card --model``).
MODEL_PARAMS = frozenset({"model", "models"})
#: Parameter names that take a GPU (``--gpu``, ``suanli cost GPU``, ``suanli mem --card``).
GPU_PARAMS = frozenset({"gpu", "gpu_name", "gpu_names", "cards"})


def bind_completion(param: click.Parameter, command_name: str | None) -> None:
    """Give a plain text parameter that names a model or a GPU the type that completes it
    (``suanli gpu NAME`` too); the value it converts to is unchanged."""
    if type(param.type) is not click.types.StringParamType:
        return
    if param.name in MODEL_PARAMS:
        param.type = ModelName()
    elif param.name in GPU_PARAMS or (command_name == "gpu" and param.name == "name"):
        param.type = GpuName()
