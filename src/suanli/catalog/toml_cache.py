"""The bundled TOML data files, parsed once per version rather than once per run.

``tomllib`` is pure Python: the catalog's files (about 700 KB) took 60 ms of the 0.6 s of CPU that
``suanli plan`` spent, and a third of ``suanli mem``. A parsed file is kept in the user's cache
directory (:func:`suanli.paths.cache_dir`, ``data/<name>.msgpack``) beside the very text it came
from; a run whose text differs (an upgrade, an edited checkout) parses it again and replaces the
copy. Comparing the texts costs microseconds and cannot collide, where a digest would import
``hashlib`` (OpenSSL: milliseconds).

MessagePack keeps exactly what TOML gives here (strings, integers, floats, booleans, arrays and
tables); a document holding anything else (a TOML date) is not kept, nor one that does not come
back equal and of the same types. The cache is only ever a shortcut: a missing, unreadable,
corrupt or unwritable copy means parsing the text, as before, and the tables are validated after
either way.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import msgspec

from suanli.paths import cache_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: Bumped when what is stored changes shape; part of every entry, so an old entry is a miss.
CACHE_FORMAT = 1
#: The largest cached copy read back (the largest bundled file and its tables: about 300 KB).
MAX_CACHED_BYTES = 16 << 20

_ENCODER = msgspec.msgpack.Encoder()
#: What else a kept copy must match: the format of the entry and the parser (Python's version).
_STAMP = f"{CACHE_FORMAT}:{sys.version_info[0]}.{sys.version_info[1]}"


def cache_path(name: str) -> Path:
    """Where the parsed copy of the bundled file ``name`` (``"catalog/attention.toml"``) is kept."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
    return cache_dir() / "data" / f"{safe}.msgpack"


def _read_cached(path: Path, text: str) -> dict[str, Any] | None:
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_CACHED_BYTES + 1)
        if len(raw) > MAX_CACHED_BYTES:
            return None
        entry = msgspec.msgpack.decode(raw)
    except (OSError, msgspec.DecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("stamp") != _STAMP or entry.get("text") != text:
        return None
    doc = entry.get("doc")
    return doc if isinstance(doc, dict) else None


def _write_cached(path: Path, text: str, doc: dict[str, Any]) -> None:
    """Keep ``doc`` when it comes back from MessagePack equal and of the same types; never
    fails (a read-only or full disk only means parsing next time too)."""
    import tempfile  # only when a file is parsed afresh

    try:
        encoded = _ENCODER.encode({"stamp": _STAMP, "text": text, "doc": doc})
        if not _same(msgspec.msgpack.decode(encoded)["doc"], doc):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # A whole file or none: written beside, then renamed over (atomic on POSIX and Windows).
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(encoded)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, TypeError, ValueError, msgspec.EncodeError, msgspec.DecodeError):
        return


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout (``1 == 1.0 == True`` in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def parse_bundled_toml(text: str, name: str) -> dict[str, Any]:
    """``tomllib.loads(text)`` of the bundled file ``name``, from the cached copy when it was
    parsed from the same text; raises ``tomllib.TOMLDecodeError`` as ``tomllib`` does.

    For the package's own files only (a user's catalog is parsed where it is read)."""
    path = cache_path(name)
    doc = _read_cached(path, text)
    if doc is None:
        doc = tomllib.loads(text)
        _write_cached(path, text, doc)
    return doc
