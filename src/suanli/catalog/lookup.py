"""Forgiving GPU name lookup: case, spaces and dashes do not matter."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError
from suanli.catalog.names import normalize

__all__ = ["find_gpu", "normalize"]


def _keys(gpu: GPU) -> set[str]:
    return {normalize(k) for k in (gpu.id, gpu.name, *gpu.aliases)} - {""}


def find_gpu(name: str, gpus: Sequence[GPU]) -> GPU:
    """The one GPU that ``name`` designates.

    Exact matches on id, name or alias win; otherwise a unique entry whose key contains the query
    ("4090" finds the RTX 4090). Ambiguous or unknown names raise :class:`CatalogError` listing
    the candidates or the nearest names.
    """
    query = normalize(name)
    if not query:
        raise CatalogError(f"empty GPU name {name!r}; run 'suanli gpus' to list the catalog")
    exact = [g for g in gpus if query in _keys(g)]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        ids = ", ".join(g.id for g in exact)
        raise CatalogError(f"GPU name {name!r} is ambiguous: {ids}; use one of these ids")
    partial = [g for g in gpus if any(query in k for k in _keys(g))]
    if len(partial) == 1:
        return partial[0]
    if len(partial) > 1:
        ids = ", ".join(g.id for g in partial[:12])
        raise CatalogError(f"GPU name {name!r} is ambiguous: {ids}; use one of these ids")
    names = {normalize(g.id): g.id for g in gpus}
    near = difflib.get_close_matches(query, list(names), n=4, cutoff=0.5)
    hint = f" (did you mean {', '.join(names[n] for n in near)}?)" if near else ""
    raise CatalogError(f"unknown GPU {name!r}{hint}; run 'suanli gpus' to list the catalog")
