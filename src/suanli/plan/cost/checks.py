"""Argument checks of the cost model: each returns the value as a float or raises ValueError."""

from __future__ import annotations

import math
from typing import Any

# ---------------------------------------------------------------------------------------------
# Checks


def check_number(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def check_nonneg(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a number >= 0."""
    v = check_number(name, value)
    if v < 0:
        raise ValueError(f"{name} must not be negative, got {v:g}")
    return v


def check_positive(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is a number > 0."""
    v = check_number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {v:g}")
    return v


def check_fraction(name: str, value: Any) -> float:
    """``value`` as a float; raises ValueError unless it is in [0, 1]."""
    v = check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (a fraction), got {v:g}")
    return v
