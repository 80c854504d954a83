"""Reading the package's data files (``suanli/catalog/data/*.toml``)."""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

from suanli.catalog.loader import CatalogError
from suanli.i18n import N_

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_data(name: str) -> dict[str, Any]:
    """One bundled TOML data file; a malformed one is a :class:`CatalogError` naming it."""
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{file}: not valid TOML ({error})").format(file=name, error=exc)
        ) from None
    return data
