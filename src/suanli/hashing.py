"""Hashing frozen dataclasses that caches key on."""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def hash_once(obj: Any) -> int:
    """The hash of a frozen dataclass's fields, computed on first use and kept on the object.

    The estimators' caches (shapes, FLOPs per token, formatted assumptions) look a model spec or
    a card's GEMM model up many times per estimate, and a nested frozen dataclass would rehash
    every field each time."""
    cached: int | None = obj.__dict__.get("_hash")
    if cached is None:
        cached = hash(tuple(getattr(obj, f.name) for f in fields(obj)))
        object.__setattr__(obj, "_hash", cached)
    return cached
