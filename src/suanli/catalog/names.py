"""GPU name normalisation, shared by the catalog's validation and its lookup.

Kept apart so that :mod:`suanli.catalog.loader` (unique aliases) and
:mod:`suanli.catalog.lookup` (forgiving lookup) both use it without importing each other.
"""

from __future__ import annotations

import re
from functools import lru_cache

_VENDOR_WORDS = ("nvidia", "geforce", "amd", "radeon", "instinct", "intel", "huawei", "apple")


def strip_vendor_words(name: str) -> str:
    """Lower-case and drop vendor words, keeping separators ("NVIDIA RTX 4090" -> " rtx 4090")."""
    key = name.lower()
    for word in _VENDOR_WORDS:
        key = key.replace(word, "")
    return key


@lru_cache(maxsize=8192)
def normalize(name: str) -> str:
    """Lower-case; drop vendor words and non-alphanumerics ("RTX 4090" -> "rtx4090").

    Cached: a plan looks up each of the catalog's ~150 cards by name, and every lookup compares
    the query with every card's id, name and aliases (175,000 calls for ``suanli plan``)."""
    return re.sub(r"[^a-z0-9]", "", strip_vendor_words(name))
