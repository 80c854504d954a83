"""Reading the package's data files (``suanli/catalog/data/*.toml``)."""

from __future__ import annotations

import sys
from functools import cache
from importlib import resources
from typing import Any

from suanli.catalog.loader import CatalogError
from suanli.catalog.toml_cache import parse_bundled_toml
from suanli.i18n import N_

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@cache
def read_data(name: str) -> dict[str, Any]:
    """One bundled TOML data file; a malformed one is a :class:`CatalogError` naming it.

    Parsed once per process (kernels.toml was parsed five times by ``suanli plan``): the tables
    are shared, so a caller copies what it changes."""
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    try:
        data: dict[str, Any] = parse_bundled_toml(text, f"catalog/{name}")
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{file}: not valid TOML ({error})").format(file=name, error=exc)
        ) from None
    return data
