"""Change one row of a bundled catalog file for the length of a ``with`` block (tests of the
catalog's validation): the file is read through the patched reader, the cached tables are
dropped on the way in and out so no other test sees the change."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def link_row_changed(link_id: str, **fields: Any) -> Iterator[None]:
    """interconnect.toml as bundled, with ``fields`` set on the ``[[link]]`` row ``link_id``."""
    from suanli.catalog import network
    from suanli.catalog.network import links

    real = network.read_data

    def patched(name: str) -> Any:
        data = real(name)
        if name != "interconnect.toml":
            return data
        rows = [dict(r, **fields) if r.get("id") == link_id else dict(r) for r in data["link"]]
        return {**data, "link": rows}

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(network, "read_data", patched)
        links.cache_clear()
        try:
            yield
        finally:
            links.cache_clear()
    links.cache_clear()
