"""Known GPU error messages (``data/errors.toml``) and the matcher behind ``suanli explain``.

Each ``[[error]]`` entry has regular expressions that survive the variable parts of real messages
(sizes, device ids, paths, versions), a cause, a concrete fix and the source it was checked
against. :func:`explain_text` scans text line by line, so a whole log works; every entry is
reported once, in the order of the line that first matched it. Pure: no torch, no NVML; the only
I/O is reading an errors file.
"""

from __future__ import annotations

import bisect
import importlib
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from suanli.catalog.dates import date_problem
from suanli.catalog.loader import CatalogError
from suanli.i18n import N_, concat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# The regex parser, to read each pattern's mandatory literal (a speed-up only, see _keyword).
_sre_parse: Any = importlib.import_module(
    "re._parser" if sys.version_info >= (3, 11) else "sre_parse"
)

#: The bundled data file, in ``suanli/live/data``.
ERRORS_FILE = "errors.toml"

_REQUIRED_KEYS = ("id", "title", "patterns", "samples", "cause", "fix", "source", "date")
#: The Chinese of the words people read (``suanli --lang zh explain``), next to the English.
_CHINESE_KEYS = ("title_zh", "cause_zh", "fix_zh")
_ALLOWED_KEYS = frozenset((*_REQUIRED_KEYS, "notes", *_CHINESE_KEYS))
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")

#: Matched lines longer than this are cut (a minified JSON log line can be megabytes).
MAX_LINE_CHARS = 400

#: Lines scanned together; bounds memory for logs of any length.
CHUNK_LINES = 20_000


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
    title_zh: str = ""
    cause_zh: str = ""
    fix_zh: str = ""

    def matches(self, line: str) -> bool:
        """Whether any of this entry's patterns occurs in ``line``."""
        return any(p.search(line) for p in self.patterns)

    def text(self, field: str, lang: str = "en") -> str:
        """``title``, ``cause`` or ``fix`` in ``lang`` (``zh``: the ``*_zh`` key of the entry,
        the English when it has none)."""
        if field not in ("title", "cause", "fix"):
            raise KeyError(field)
        english: str = getattr(self, field)
        if lang == "zh":
            return getattr(self, f"{field}_zh") or english
        return english


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
    return (
        N_("{origin}, error {id!r}").format(origin=origin, id=eid)
        if eid
        else N_("{origin}, an [[error]] entry without an id").format(origin=origin)
    )


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(
            N_("{where}: {key!r} must be a non-empty string").format(where=where, key=key)
        )
    return value.strip()


def _strings(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        raise CatalogError(
            N_("{where}: {key!r} must be a non-empty list of non-empty strings").format(
                where=where, key=key
            )
        )
    return tuple(value)


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CatalogError(
            N_("{where}: pattern {pattern!r} does not compile ({error})").format(
                where=where, pattern=pattern, error=exc
            )
        ) from None


def _parse_entry(raw: Any, origin: str, index: int) -> ErrorEntry:
    if not isinstance(raw, dict):
        raise CatalogError(
            N_("{origin}: [[error]] number {index} is not a table").format(
                origin=origin, index=index
            )
        )
    eid = raw.get("id")
    eid = eid if isinstance(eid, str) else ""
    where = _where(origin, eid)
    for key in raw:
        if key not in _ALLOWED_KEYS:
            raise CatalogError(
                N_("{where}: unknown key {key!r}; allowed keys are {allowed}").format(
                    where=where, key=key, allowed=", ".join(sorted(_ALLOWED_KEYS))
                )
            )
    for key in _REQUIRED_KEYS:
        if key not in raw:
            raise CatalogError(N_("{where}: missing {key!r}").format(where=where, key=key))
    if not _ID_RE.match(eid):
        raise CatalogError(
            N_("{where}: id must be lowercase letters, digits and dashes").format(where=where)
        )
    date = _text(raw, "date", where)
    problem = date_problem(date, "date")
    if problem:
        raise CatalogError(concat(where, N_(": "), problem))
    notes = raw.get("notes", "")
    if not isinstance(notes, str):
        raise CatalogError(N_("{where}: 'notes' must be a string").format(where=where))
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
        **{key: _text(raw, key, where) for key in _CHINESE_KEYS if key in raw},
    )
    for number, sample in enumerate(samples, start=1):
        if not any(entry.matches(line) for line in sample.splitlines()):
            raise CatalogError(
                N_("{where}: sample {number} matches none of the entry's patterns").format(
                    where=where, number=number
                )
            )
    return entry


def parse_errors(text: str, origin: str = ERRORS_FILE) -> tuple[ErrorEntry, ...]:
    """Validate the TOML ``text`` of an errors file; ``origin`` names it in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{origin}: not valid TOML ({error})").format(origin=origin, error=exc)
        ) from None
    for key in data:
        if key != "error":
            raise CatalogError(
                N_("{origin}: unknown top-level key {key!r}; use [[error]] tables").format(
                    origin=origin, key=key
                )
            )
    raw_entries = data.get("error", [])
    if not isinstance(raw_entries, list) or not raw_entries:
        raise CatalogError(N_("{origin}: no [[error]] entries").format(origin=origin))
    entries: list[ErrorEntry] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_entries, start=1):
        entry = _parse_entry(raw, origin, index)
        if entry.id in seen:
            raise CatalogError(
                N_("{origin}: duplicate error id {id!r}").format(origin=origin, id=entry.id)
            )
        seen.add(entry.id)
        entries.append(entry)
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
            N_("cannot read errors file {path!r}: {error}").format(
                path=str(file), error=exc.strerror or exc
            )
        ) from None
    return parse_errors(text, str(file))


@lru_cache(maxsize=1)
def bundled_errors() -> tuple[ErrorEntry, ...]:
    """All bundled known errors, validated, in file order."""
    text = (resources.files("suanli.live") / "data" / ERRORS_FILE).read_text("utf-8")
    return parse_errors(text, ERRORS_FILE)


def bundled_entry(eid: str) -> ErrorEntry | None:
    """The bundled entry with id ``eid`` (for a view that shows its words in another
    language), or None."""
    return next((e for e in bundled_errors() if e.id == eid), None)


def _clip(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _keyword(pattern: re.Pattern[str]) -> str | None:
    """The longest literal every match of ``pattern`` must contain (lowercased under ``(?i)``).

    Read from the parsed pattern: consecutive top-level literals are mandatory and contiguous.
    None when there is none of 3+ characters or the private parser is unavailable; such a
    pattern is simply searched in every line (slower, same result).
    """
    try:
        tree = _sre_parse.parse(pattern.pattern, pattern.flags)
        literal = _sre_parse.LITERAL
        best = current = ""
        for op, av in tree.data:
            if op is literal:
                current += chr(av)
            else:
                best, current = max(best, current, key=len), ""
        best = max(best, current, key=len)
    except Exception:  # pragma: no cover - only if the private parser changes
        return None
    if len(best) < 3 or "\n" in best:
        return None
    return best.lower() if pattern.flags & re.IGNORECASE else best


@dataclass(frozen=True)
class _Probe:
    """One pattern of one entry, with the literal used to find candidate lines fast."""

    entry: int
    pattern: re.Pattern[str]
    keyword: str | None
    ignorecase: bool


@lru_cache(maxsize=8)
def _probes(entries: tuple[ErrorEntry, ...]) -> tuple[_Probe, ...]:
    return tuple(
        _Probe(i, p, _keyword(p), bool(p.flags & re.IGNORECASE))
        for i, entry in enumerate(entries)
        for p in entry.patterns
    )


class _Haystack:
    """A chunk of lines joined by newlines, with the offset where each line starts."""

    def __init__(self, lines: list[str]) -> None:
        self.text = "\n".join(lines)
        self.starts = [0]
        for line in lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def end_of(self, line: int) -> int:
        """Offset just past ``line`` (exclusive bound for searches before the next line)."""
        return self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)


def _first_line(probe: _Probe, lines: list[str], hay: _Haystack | None, limit: int) -> int | None:
    """The first line index below ``limit`` where ``probe`` matches, or None."""
    if probe.keyword is None or hay is None:
        return next((i for i in range(limit) if probe.pattern.search(lines[i])), None)
    end = hay.starts[limit] if limit < len(hay.starts) else len(hay.text)
    pos = hay.text.find(probe.keyword, 0, end)
    while pos != -1:
        index = hay.line_of(pos)
        if probe.pattern.search(lines[index]):
            return index
        pos = hay.text.find(probe.keyword, hay.end_of(index), end)
    return None


def _scan_chunk(lines: list[str], probes: tuple[_Probe, ...], done: set[int]) -> dict[int, int]:
    """Entry index -> first line index in ``lines``, for entries not in ``done``."""
    plain = _Haystack(lines)
    lowered: _Haystack | None = None
    first: dict[int, int] = {}
    for probe in probes:
        if probe.entry in done:
            continue
        if probe.ignorecase and probe.keyword is not None and lowered is None:
            lowered = _Haystack([line.lower() for line in lines])
        hay = lowered if probe.ignorecase else plain
        index = _first_line(probe, lines, hay, first.get(probe.entry, len(lines)))
        if index is not None:
            first[probe.entry] = index
    return first


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for raw in lines:
        chunk.append(raw.rstrip("\r\n"))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def explain_lines(
    lines: Iterable[str], entries: tuple[ErrorEntry, ...] | None = None
) -> list[Match]:
    """Known errors in ``lines`` (any iterable, e.g. an open file), once each, first seen first.

    Lines are read in chunks; within a chunk each pattern's literal keyword is located with one
    substring search and only the lines containing it are tried with the full regex.
    """
    catalog = bundled_errors() if entries is None else entries
    probes = _probes(catalog)
    found: dict[int, tuple[int, str]] = {}
    base = 0
    for chunk in _chunks(lines, CHUNK_LINES):
        for entry, index in _scan_chunk(chunk, probes, set(found)).items():
            found[entry] = (base + index, chunk[index])
        base += len(chunk)
        if len(found) == len(catalog):
            break
    order = sorted(found, key=lambda entry: (found[entry][0], entry))
    return [
        Match(
            id=catalog[e].id,
            title=catalog[e].title,
            cause=catalog[e].cause,
            fix=catalog[e].fix,
            source=catalog[e].source,
            matched_line=_clip(found[e][1]),
        )
        for e in order
    ]


def explain_text(text: str, entries: tuple[ErrorEntry, ...] | None = None) -> list[Match]:
    """Known errors in ``text`` (one message or a whole log), once each, first seen first."""
    return explain_lines(text.splitlines(), entries)
