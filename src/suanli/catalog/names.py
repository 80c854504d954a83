"""GPU name normalisation, shared by the catalog's validation and its lookup.

Kept apart so that :mod:`suanli.catalog.loader` (unique aliases) and
:mod:`suanli.catalog.lookup` (forgiving lookup) both use it without importing each other.
"""

from __future__ import annotations

import re

_VENDOR_WORDS = ("nvidia", "geforce", "amd", "radeon", "instinct", "intel", "huawei", "apple")


def normalize(name: str) -> str:
    """Lower-case; drop vendor words and non-alphanumerics ("RTX 4090" -> "rtx4090")."""
    key = name.lower()
    for word in _VENDOR_WORDS:
        key = key.replace(word, "")
    return re.sub(r"[^a-z0-9]", "", key)
