"""One friendly sentence for a catalog file the typed schema refused.

msgspec says *where* a document is wrong (``$.gpu[3].memory_bytes``) in its own words; this
module turns that place and the offending value into the catalog's sentence: the file, the entry,
what is wrong and what to write instead. The schema decides what is valid; this only explains.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from suanli.catalog.dates import date_problem
from suanli.catalog.gpu import ALL_FIELDS, BOOL_FIELDS, NUMERIC_FIELDS, REQUIRED_FIELDS
from suanli.catalog.schema import DATE_FIELDS, ENUM_FIELDS, INTEGER_FIELDS
from suanli.i18n import N_, concat

_AT_RE = re.compile(r"^(?P<what>.*) - at `(?P<path>\$[^`]*)`$", re.S)
_STEP_RE = re.compile(r"\.([A-Za-z0-9_$]+)|\[(\d+)\]")
_NAMED_RE = re.compile(r"field `([^`]+)`")


def split_error(message: str) -> tuple[str, list[str | int]]:
    """msgspec's message as (what it says, path steps): ``"... - at `$.gpu[0].id`"`` gives
    ``(..., ["gpu", 0, "id"])``."""
    match = _AT_RE.match(message)
    if match is None:
        return message, []
    steps: list[str | int] = [
        name if name else int(index) for name, index in _STEP_RE.findall(match["path"])
    ]
    return match["what"], steps


def entry_label(origin: str, entry: str, message: str) -> str:
    """``origin, entry 'id': message`` (or ``origin: message`` without an entry id)."""
    if entry:
        return N_("{origin}, entry {entry!r}: {message}").format(
            origin=origin, entry=entry, message=message
        )
    return concat(origin, N_(": "), message)


def _named(what: str) -> str:
    match = _NAMED_RE.search(what)
    return match.group(1) if match else ""


def _field_message(key: str, value: Any) -> str:
    """Why ``value`` is not allowed for ``key`` of a ``[[gpu]]`` table."""
    if key in NUMERIC_FIELDS:
        low, high = NUMERIC_FIELDS[key]
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not is_number:
            return N_("{key} must be a number, got {value!r}").format(key=key, value=value)
        if not math.isfinite(value):
            return N_("{key} must be a finite number, got {value!r}").format(key=key, value=value)
        if key in INTEGER_FIELDS and isinstance(value, float) and low <= value <= high:
            return N_("{key} must be a whole number, got {value!r}").format(key=key, value=value)
        return N_(
            "{key} = {value:g} is outside the plausible range [{low:g}, {high:g}]; "
            "check the unit (bytes, bytes/s, FLOP/s)"
        ).format(key=key, value=value, low=low, high=high)
    if key in BOOL_FIELDS:
        return N_("{key} must be true or false, got {value!r}").format(key=key, value=value)
    if key in ENUM_FIELDS:
        return N_("{key} = {value!r}; use one of {allowed}").format(
            key=key, value=value, allowed=", ".join(ENUM_FIELDS[key])
        )
    if key in DATE_FIELDS:
        return date_problem(value, key) or ""
    if key == "id":
        return N_("id must be lower-case letters, digits, '.' and '-'")
    if key == "aliases":
        return N_("aliases must be a list of strings")
    if key == "uncertain":
        return N_("uncertain must list fields that this entry has")
    if key == "sources":
        return N_("needs a non-empty [[gpu.sources]] list")
    return N_("{key} must be a non-empty string, got {value!r}").format(key=key, value=value)


def _source_message(what: str, raw: Any, steps: list[str | int]) -> str:
    """Why the ``[[gpu.sources]]`` table ``raw`` was refused at ``steps`` (below the table)."""
    if not isinstance(raw, Mapping):
        return N_("each source must be a table with fields, ref and date")
    if "unknown field" in what:
        unknown = sorted(set(raw) - {"fields", "ref", "date"})
        return N_("unknown source key(s) {keys}").format(keys=unknown)
    key = steps[0] if steps else _named(what)
    if key == "fields":
        names = raw.get("fields")
        if isinstance(names, list):
            for name in names:
                if isinstance(name, str) and name != "*" and name not in ALL_FIELDS:
                    return N_("source names unknown field {name!r}").format(name=name)
        return N_("source 'fields' must be a list of field names")
    if key == "date":
        return N_("source date {date!r} must be YYYY-MM or YYYY-MM-DD").format(date=raw.get("date"))
    if key == "ref":
        return N_("source 'ref' must name the document")
    return N_("each source must be a table with fields, ref and date")


def explain_gpu_error(message: str, doc: Mapping[str, Any], origin: str) -> str:
    """The catalog's sentence for msgspec's ``message`` about the parsed catalog file ``doc``."""
    what, steps = split_error(message)
    if not steps:  # the document itself
        unknown = sorted(set(doc) - {"gpu", "$schema"})
        if unknown:
            return N_("{origin}: unknown top-level key(s) {keys}; use [[gpu]]").format(
                origin=origin, keys=unknown
            )
    if steps[:1] == ["$schema"]:
        return N_("{origin}: $schema must be a string (a path or URL)").format(origin=origin)
    entries = doc.get("gpu")
    if len(steps) < 2 or not isinstance(entries, list):
        return N_("{origin}: 'gpu' must be an array of tables ([[gpu]])").format(origin=origin)
    raw = entries[int(steps[1])]
    if not isinstance(raw, Mapping):
        return N_("{origin}: 'gpu' must be an array of tables ([[gpu]])").format(origin=origin)
    gid = str(raw.get("id", ""))
    rest = steps[2:]
    if not rest:
        if "unknown field" in what:
            unknown = sorted(set(raw) - ALL_FIELDS)
            detail = N_("unknown key(s) {keys}; see docs/catalog.md").format(
                keys=", ".join(unknown)
            )
        else:
            missing = [k for k in (*REQUIRED_FIELDS, "sources") if k not in raw]
            key = missing[0] if missing else _named(what)
            detail = (
                N_("needs a non-empty [[gpu.sources]] list")
                if key == "sources"
                else N_("missing required field {key!r}").format(key=key)
            )
        return entry_label(origin, gid, detail)
    key = str(rest[0])
    if key == "sources" and len(rest) >= 2:
        sources = raw.get("sources")
        source = sources[int(rest[1])] if isinstance(sources, list) else None
        return entry_label(origin, gid, _source_message(what, source, rest[2:]))
    return entry_label(origin, gid, _field_message(key, raw.get(key)))
