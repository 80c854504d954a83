"""GPU name lookup: forgiving about spelling, strict about which card is meant.

Case, spaces, dashes and vendor words ("NVIDIA", "GeForce", "Radeon", ...) do not matter. A name
resolves in three steps (docs/catalog.md, "Name resolution"):

1. **Exact**: the query equals an entry's id, name or alias (aliases are unique across the
   catalog, so an exact match names one card).
2. **Model number**: the query names the same model as an entry's id, name or alias once the
   family prefix (``rtx``, ``gtx``, ``rx``, ``arc``, ``tesla``, ``quadro``) and a trailing memory
   size (``16gb``) are set aside on both sides. A model number is whole: ``4060`` is not
   ``4060 Ti``, ``4090`` is not ``4090D``, ``7900 XT`` is not ``7900 XTX``. A memory size in the
   query must be the entry's (``4060 ti 8gb``). Several entries of the same model (RTX 3080 10 GB
   and 12 GB) are ambiguous.
3. Otherwise the name is **unknown**: the error lists the entries whose names contain it (a
   different, longer model number is never chosen silently) or the nearest ids.

Ambiguous and unknown names raise :class:`CatalogError` naming the candidates.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Sequence
from functools import cached_property

from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError
from suanli.catalog.names import normalize, strip_vendor_words
from suanli.i18n import N_

__all__ = ["find_gpu", "model_key", "normalize", "similar_gpus"]

#: Family words that prefix a model number without changing the card ("RTX 4090" is "4090").
FAMILY_PREFIXES = frozenset({"rtx", "gtx", "rx", "arc", "tesla", "quadro"})

_TOKEN_RE = re.compile(r"[a-z]+|[0-9]+")
_GIB = 2**30


def model_key(name: str) -> tuple[tuple[str, ...], int | None]:
    """(model tokens, memory in GB or None) of a GPU name.

    ``"GeForce RTX 4060 Ti 16GB"`` -> ``(("4060", "ti"), 16)``; ``"H100 SXM"`` ->
    ``(("h", "100", "sxm"), None)``. Letters and digits split into tokens, so a model number
    only ever matches whole.
    """
    # Tokenise before separators are dropped, so "RTX 3090 24GB" keeps 3090 and 24 apart.
    tokens = [t for t in _TOKEN_RE.findall(strip_vendor_words(name)) if t]
    memory: int | None = None
    if len(tokens) >= 2 and tokens[-1] == "gb" and tokens[-2].isdigit():
        memory = int(tokens[-2])
        tokens = tokens[:-2]
    if len(tokens) >= 2 and tokens[0] in FAMILY_PREFIXES:
        tokens = tokens[1:]
    return tuple(tokens), memory


def _keys(gpu: GPU) -> tuple[str, ...]:
    return tuple(k for k in (gpu.id, gpu.name, *gpu.aliases) if normalize(k))


def _memory_sizes(gpu: GPU) -> set[int]:
    """Memory sizes (GB) an entry answers to: those in its names, and its memory in GiB."""
    sizes = {round(gpu.memory_bytes / _GIB)}
    sizes.update(m for k in _keys(gpu) if (m := model_key(k)[1]) is not None)
    return sizes


class _Index:
    """One catalog's names, normalised once: a plan looks up every card of the catalog, and each
    lookup compared the query with every entry's id, name and aliases (about 40% of the CPU time
    of ``suanli plan``)."""

    def __init__(self, gpus: Sequence[GPU]) -> None:
        self.gpus = tuple(gpus)
        """The catalog, in its order (held, so that the ids of its entries stay theirs)."""
        exact: dict[str, list[GPU]] = {}
        for gpu in self.gpus:
            for norm in dict.fromkeys(normalize(k) for k in _keys(gpu)):
                exact.setdefault(norm, []).append(gpu)
        self.exact = {k: tuple(v) for k, v in exact.items()}
        """Normalised id, name or alias -> the entries it names, in catalog order."""

    @cached_property
    def models(self) -> dict[tuple[str, ...], tuple[tuple[GPU, frozenset[int]], ...]]:
        """Model tokens of an id, name or alias -> the entries with them and their memory
        sizes; built when a name first misses the exact step (ids rarely do)."""
        models: dict[tuple[str, ...], list[tuple[GPU, frozenset[int]]]] = {}
        for gpu in self.gpus:
            sizes = frozenset(_memory_sizes(gpu))
            for tokens in dict.fromkeys(model_key(k)[0] for k in _keys(gpu)):
                models.setdefault(tokens, []).append((gpu, sizes))
        return {k: tuple(v) for k, v in models.items()}


#: Indexes of the catalogs looked up lately, by the identity of their entries: a catalog is a
#: fresh list on every load_catalog(), but of the same entry objects until a file changes.
_INDEXES: dict[tuple[int, ...], _Index] = {}
_MAX_INDEXES = 8
#: The web page looks names up from several threads.
_INDEXES_LOCK = threading.Lock()


def _index(gpus: Sequence[GPU]) -> _Index:
    """The index of ``gpus``, built on first use. Keyed on the entries' identities, which the
    cached index keeps alive: a changed or patched catalog has other entries, hence its own."""
    key = tuple(map(id, gpus))
    found = _INDEXES.get(key)
    if found is not None:
        return found
    index = _Index(gpus)
    with _INDEXES_LOCK:
        if len(_INDEXES) >= _MAX_INDEXES:
            _INDEXES.pop(next(iter(_INDEXES)))
        _INDEXES[key] = index
    return index


def _model_matches(name: str, index: _Index) -> list[GPU]:
    """The entries of the same model as ``name`` (step 2 of the module docstring)."""
    tokens, memory = model_key(name)
    if not tokens:
        return []
    return [gpu for gpu, sizes in index.models.get(tokens, ()) if memory is None or memory in sizes]


def _ambiguous(name: str, gpus: Sequence[GPU]) -> CatalogError:
    ids = ", ".join(g.id for g in gpus[:12])
    if len(gpus) > 12:
        return CatalogError(
            N_(
                "GPU name {name!r} is ambiguous: {ids} and {more} more; use one of these ids"
            ).format(name=name, ids=ids, more=len(gpus) - 12)
        )
    return CatalogError(
        N_("GPU name {name!r} is ambiguous: {ids}; use one of these ids").format(name=name, ids=ids)
    )


def find_gpu(name: str, gpus: Sequence[GPU]) -> GPU:
    """The one GPU that ``name`` designates (see the module docstring for the rules).

    Raises :class:`CatalogError` for an ambiguous name (listing the candidates) or an unknown
    one (listing the entries that contain it, or the nearest ids). Never returns a card of a
    different model number than the one asked for.
    """
    query = normalize(name)
    if not query:
        raise CatalogError(
            N_("empty GPU name {name!r}; run 'suanli gpus' to list the catalog").format(name=name)
        )
    index = _index(gpus)
    exact = index.exact.get(query, ())
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        raise _ambiguous(name, exact)
    model = _model_matches(name, index)
    if len(model) == 1:
        return model[0]
    if len(model) > 1:
        raise _ambiguous(name, model)
    tokens = model_key(name)[0]
    containing = [
        g
        for g in gpus
        if any(query in normalize(k) for k in _keys(g))
        or (tokens and any(model_key(k)[0][: len(tokens)] == tokens for k in _keys(g)))
    ]
    if len(containing) > 1:
        raise _ambiguous(name, containing)
    if len(containing) == 1:
        raise CatalogError(
            N_(
                "no GPU is named {name!r}; did you mean {id} ({full_name})? Use its id if so"
            ).format(name=name, id=containing[0].id, full_name=containing[0].name)
        )
    near = similar_gpus(name, gpus)
    if near:
        raise CatalogError(
            N_(
                "unknown GPU {name!r} (did you mean {near}?); run 'suanli gpus' to list the catalog"
            ).format(name=name, near=", ".join(g.id for g in near))
        )
    raise CatalogError(
        N_("unknown GPU {name!r}; run 'suanli gpus' to list the catalog").format(name=name)
    )


def similar_gpus(name: str, gpus: Sequence[GPU], limit: int = 4, cutoff: float = 0.5) -> list[GPU]:
    """The GPUs most like ``name``, most alike first: at most ``limit``, none below ``cutoff``
    (difflib's ratio, 0 to 1), case, spaces, dashes and vendor words set aside.

    Ids are compared first (``"4090x"`` -> ``rtx-4090-24gb``); when no id is near, names and
    aliases are (``"Tesla V1OO"`` -> ``v100-...``). Ties go to the id first in order.
    """
    query = normalize(name)
    for keys in (lambda g: (g.id,), _keys):
        scored = []
        for gpu in gpus:
            score = max(
                difflib.SequenceMatcher(None, query, normalize(k)).ratio() for k in keys(gpu)
            )
            if score >= cutoff:
                scored.append((-score, gpu.id, gpu))
        if scored:
            return [gpu for _, _, gpu in sorted(scored, key=lambda row: row[:2])[:limit]]
    return []
