"""Argument checks of the cost model: each returns the value as a float or raises ValueError."""

from __future__ import annotations

import math
from typing import Any

from suanli.i18n import N_

# ---------------------------------------------------------------------------------------------
# Checks


def check_number(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(
            N_("{name} must be a number, got {value!r}").format(name=name, value=value)
        )
    if math.isinf(value):
        raise ValueError(N_("{name} must be finite, got {value!r}").format(name=name, value=value))
    return float(value)


def check_nonneg(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a number >= 0."""
    v = check_number(name, value)
    if v < 0:
        raise ValueError(
            N_("{name} must not be negative, got {value:g}").format(name=name, value=v)
        )
    return v


def check_positive(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a number > 0."""
    v = check_number(name, value)
    if v <= 0:
        raise ValueError(N_("{name} must be positive, got {value:g}").format(name=name, value=v))
    return v


def check_fraction(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is in [0, 1]."""
    v = check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(
            N_("{name} must be between 0 and 1 (a fraction), got {value:g}").format(
                name=name, value=v
            )
        )
    return v
