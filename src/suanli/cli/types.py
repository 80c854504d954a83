"""Number types for every option: finite, bounded, one sentence when not (exit 2).

click's ``FloatRange`` lets ``nan`` through (every comparison with NaN is false) and accepts
``inf``; its ``IntRange`` without a maximum accepts integers no C type holds. These subclasses
refuse both, and give every option without a stated maximum the defaults of
:mod:`suanli.limits`.
"""

from __future__ import annotations

import math
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
        number = click.FLOAT.convert(value, param, ctx)
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
        """Check against the option's own ceiling and the range."""
        _bind(self, getattr(param, "name", None))
        return super().convert(value, param, ctx)
