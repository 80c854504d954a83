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

from suanli.limits import BY_NAME, MAX_FLOAT, MAX_INT


def _named_cap(number: float, param: Any, fail: Any, ctx: Any) -> None:
    """The ceiling :data:`suanli.limits.BY_NAME` gives an option of this name."""
    cap = BY_NAME.get(getattr(param, "name", None) or "")
    if cap is not None and number > cap:
        fail(f"{_show(number)} is above the largest accepted, {_show(cap)}", param, ctx)


def _show(number: float) -> str:
    """``4194304`` -> ``4,194,304``; ``1e+18`` stays short."""
    if float(number).is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:g}"


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
        super().__init__(min, MAX_FLOAT if max is None and not allow_inf else max, **kw)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Parse, refuse NaN and infinities (``+inf`` where ``allow_inf`` documents a meaning,
        such as ``capacity --rate inf``: all requests at once), then check the range."""
        number = click.FLOAT.convert(value, param, ctx)
        if math.isnan(number) or (
            not math.isfinite(number) and not (self.allow_inf and number > 0)
        ):
            self.fail(f"{value!r} is not a finite number; give one such as 1.5", param, ctx)
        if self.allow_inf and math.isinf(number):
            return super().convert(number, param, ctx)
        if self.named:
            _named_cap(number, param, self.fail, ctx)
        return super().convert(number, param, ctx)


class IntRange(click.IntRange):
    """An integer within ``[min, max]`` (``max``: the option's in :mod:`suanli.limits`, else
    :data:`MAX_INT`)."""

    def __init__(self, min: int | None = None, max: int | None = None, **kw: Any) -> None:
        self.named = max is None
        super().__init__(min, MAX_INT if max is None else max, **kw)

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Parse, then check the option's own ceiling and the range."""
        number = click.INT.convert(value, param, ctx)
        if self.named:
            _named_cap(number, param, self.fail, ctx)
        return super().convert(number, param, ctx)


#: Plain numbers for options that had ``type=int`` / ``type=float``.
INT = IntRange()
FLOAT = FloatRange(-MAX_FLOAT)
