"""Known GPU error messages (``data/errors.toml``) and the matcher behind ``suanli explain``.

Each ``[[error]]`` entry has regular expressions that survive the variable parts of real messages
(sizes, device ids, paths, versions), a cause, a concrete fix and the source it was checked
against. :func:`explain_text` scans text line by line, so a whole log works; every entry is
reported once, in the order of the line that first matched it. Pure: no torch, no NVML, no I/O
beyond reading the bundled data file.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from suanli.catalog.loader import CatalogError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The bundled data file, in ``suanli/live/data``.
ERRORS_FILE = "errors.toml"

_REQUIRED_KEYS = ("id", "title", "patterns", "samples", "cause", "fix", "source", "date")
_ALLOWED_KEYS = frozenset((*_REQUIRED_KEYS, "notes"))
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_LEADING_FLAGS_RE = re.compile(r"^\(\?([imsx]+)\)")

#: Matched lines longer than this are cut (a minified JSON log line can be megabytes).
MAX_LINE_CHARS = 400


@dataclass(frozen=True)
class ErrorEntry:
    """One known error: how to recognise it, why it happens, how to fix it, and the source."""

    id: str
    title: str
    patterns: tuple[re.Pattern[str], ...]
    samples: tuple[str, ...]
    cause: str
    fix: str
    source: str
    date: str
    notes: str = ""

    def matches(self, line: str) -> bool:
        """Whether any of this entry's patterns occurs in ``line``."""
        return any(p.search(line) for p in self.patterns)


@dataclass(frozen=True)
class Match:
    """A known error found in the text, with the first line that matched it."""

    id: str
    title: str
    cause: str
    fix: str
    source: str
    matched_line: str

    def as_dict(self) -> dict[str, str]:
        """The JSON shape of ``suanli explain --json``."""
        return {
            "id": self.id,
            "error": self.title,
            "cause": self.cause,
            "fix": self.fix,
            "source": self.source,
            "line": self.matched_line,
        }


def _where(origin: str, eid: str) -> str:
    return f"{origin}, error {eid!r}" if eid else f"{origin}, an [[error]] entry without an id"


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where}: {key!r} must be a non-empty string")
    return value.strip()


def _strings(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise CatalogError(f"{where}: {key!r} must be a non-empty list of non-empty strings")
    return tuple(value)


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CatalogError(f"{where}: pattern {pattern!r} does not compile ({exc})") from None


def _parse_entry(raw: Any, origin: str, index: int) -> ErrorEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{origin}: [[error]] number {index} is not a table")
    eid = raw.get("id")
    eid = eid if isinstance(eid, str) else ""
    where = _where(origin, eid)
    for key in raw:
        if key not in _ALLOWED_KEYS:
            raise CatalogError(
                f"{where}: unknown key {key!r}; allowed keys are {', '.join(sorted(_ALLOWED_KEYS))}"
            )
    for key in _REQUIRED_KEYS:
        if key not in raw:
            raise CatalogError(f"{where}: missing {key!r}")
    if not _ID_RE.match(eid):
        raise CatalogError(f"{where}: id must be lowercase letters, digits and dashes")
    date = _text(raw, "date", where)
    if not _DATE_RE.match(date):
        raise CatalogError(f"{where}: date {date!r} must look like 2026-11 or 2026-11-30")
    notes = raw.get("notes", "")
    if not isinstance(notes, str):
        raise CatalogError(f"{where}: 'notes' must be a string")
    patterns = tuple(_compile(p, where) for p in _strings(raw, "patterns", where))
    samples = _strings(raw, "samples", where)
    entry = ErrorEntry(
        id=eid,
        title=_text(raw, "title", where),
        patterns=patterns,
        samples=samples,
        cause=_text(raw, "cause", where),
        fix=_text(raw, "fix", where),
        source=_text(raw, "source", where),
        date=date,
        notes=notes.strip(),
    )
    for number, sample in enumerate(samples, start=1):
        if not any(entry.matches(line) for line in sample.splitlines()):
            raise CatalogError(f"{where}: sample {number} matches none of the entry's patterns")
    return entry


def parse_errors(text: str, origin: str = ERRORS_FILE) -> tuple[ErrorEntry, ...]:
    """Validate the TOML ``text`` of an errors file; ``origin`` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{origin}: not valid TOML ({exc})") from None
    for key in data:
        if key != "error":
            raise CatalogError(f"{origin}: unknown top-level key {key!r}; use [[error]] tables")
    raw_entries = data.get("error", [])
    if not isinstance(raw_entries, list) or not raw_entries:
        raise CatalogError(f"{origin}: no [[error]] entries")
    entries: list[ErrorEntry] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_entries, start=1):
        entry = _parse_entry(raw, origin, index)
        if entry.id in seen:
            raise CatalogError(f"{origin}: duplicate error id {entry.id!r}")
        seen.add(entry.id)
        entries.append(entry)
    _prefilter(tuple(entries))  # every pattern must also combine into the one-pass prefilter
    return tuple(entries)


def load_errors(path: str | Path | None = None) -> tuple[ErrorEntry, ...]:
    """The bundled catalog (``path=None``, cached) or a validated errors file at ``path``."""
    if path is None:
        return bundled_errors()
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except OSError as exc:
        raise CatalogError(
            f"cannot read errors file {str(file)!r}: {exc.strerror or exc}"
        ) from None
    return parse_errors(text, str(file))


@lru_cache(maxsize=1)
def bundled_errors() -> tuple[ErrorEntry, ...]:
    """All bundled known errors, validated, in file order."""
    text = (resources.files("suanli.live") / "data" / ERRORS_FILE).read_text("utf-8")
    return parse_errors(text, ERRORS_FILE)


def _scoped(pattern: str) -> str:
    """``pattern`` as one alternative of a combined regex (leading ``(?i)`` becomes ``(?i:...)``)."""
    flags = _LEADING_FLAGS_RE.match(pattern)
    if flags:
        return f"(?{flags.group(1)}:{pattern[flags.end() :]})"
    return f"(?:{pattern})"


@lru_cache(maxsize=8)
def _prefilter(entries: tuple[ErrorEntry, ...]) -> re.Pattern[str]:
    """One regex matching any pattern of any entry: most log lines are rejected in one search."""
    combined = "|".join(_scoped(p.pattern) for e in entries for p in e.patterns)
    try:
        return re.compile(combined)
    except re.error as exc:
        raise CatalogError(
            f"the patterns do not combine into one regex ({exc}); use scoped flags like "
            "(?i:...) instead of inline flags in the middle, and no backreferences"
        ) from None


def _clip(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def explain_lines(
    lines: Iterable[str], entries: tuple[ErrorEntry, ...] | None = None
) -> list[Match]:
    """Known errors in ``lines`` (any iterable, e.g. an open file), once each, first seen first."""
    catalog = bundled_errors() if entries is None else entries
    prefilter = _prefilter(catalog)
    found: dict[str, Match] = {}
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not prefilter.search(line):
            continue
        for entry in catalog:
            if entry.id not in found and entry.matches(line):
                found[entry.id] = Match(
                    id=entry.id,
                    title=entry.title,
                    cause=entry.cause,
                    fix=entry.fix,
                    source=entry.source,
                    matched_line=_clip(line),
                )
        if len(found) == len(catalog):
            break
    return list(found.values())


def explain_text(text: str, entries: tuple[ErrorEntry, ...] | None = None) -> list[Match]:
    """Known errors in ``text`` (one message or a whole log), once each, first seen first."""
    return explain_lines(text.splitlines(), entries)
