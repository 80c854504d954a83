"""The old way back from finished English text to its template, kept only for text that comes
from outside the library's sentences (see :func:`suanli.i18n.sentence`).

Matching is linear in the sentence's length, whatever it holds: a template is its literal pieces
between holes, found left to right with ``str.find`` (each hole takes the shortest text that lets
the next piece follow, as a lazy ``.+?`` would, but never backtracks), so no crafted text can make
it slow (docs/security.md). Sentences longer than MAX_SENTENCE_CHARS are not matched.
"""

from __future__ import annotations

import gettext
import re
from dataclasses import dataclass
from functools import lru_cache

_TOKEN = re.compile(r"\{\{|\}\}|\{(\w*)(?:![rsa])?(?::[^{}]*)?\}")
_MAX_DEPTH = 2
#: Longer text is shown as written: no answer sentence is this long, and it bounds the work.
MAX_SENTENCE_CHARS = 4000


def _hole_name(written: str, index: int) -> str:
    """A name for a hole: its name, ``_0`` for ``{0}``, ``_N`` for the N-th ``{}``."""
    if not written:
        return f"_{index}"
    return f"_{written}" if written[0].isdigit() else written


@dataclass(frozen=True)
class _Template:
    """A catalog message with holes: its literal pieces (one more than its holes), the hole
    names (a repeated name must repeat its value) and its translation."""

    pieces: tuple[str, ...]
    names: tuple[str, ...]
    translation: str

    def match(self, text: str) -> dict[str, str] | None:
        """The values ``template.format(...)`` must have been given to write ``text``, or None.

        The first piece must start the text and the last end it; each piece between is the
        first occurrence after its hole's (non-empty) value. One pass, no backtracking."""
        first, last = self.pieces[0], self.pieces[-1]
        if not text.startswith(first) or not text.endswith(last):
            return None
        position, end = len(first), len(text) - len(last)
        values: dict[str, str] = {}
        for index, name in enumerate(self.names):
            if index == len(self.names) - 1:
                value, position = text[position:end], end
            else:
                piece = self.pieces[index + 1]
                found = text.find(piece, position + 1, end)
                if found < 0:
                    return None
                value, position = text[position:found], found + len(piece)
            if not value or values.setdefault(name, value) != value:
                return None
        return values


def _template(message: str, translation: str) -> tuple[_Template, int] | None:
    """``message`` as a :class:`_Template` and how many letters its literal text has (more
    literal text = a more specific template); None when it has nothing to recognise it by."""
    pieces: list[str] = []
    names: list[str] = []
    chunk, position, index = "", 0, 0
    for token in _TOKEN.finditer(message):
        chunk += message[position : token.start()]
        position = token.end()
        if token.group(0) in ("{{", "}}"):
            chunk += token.group(0)[0]
            continue
        pieces.append(chunk)
        chunk = ""
        names.append(_hole_name(token.group(1), index))
        index += 1
    pieces.append(chunk + message[position:])
    literal = sum(c.isalpha() for piece in pieces for c in piece)
    if not names or literal < 3:
        return None
    return _Template(tuple(pieces), tuple(names), translation), literal


@lru_cache(maxsize=4)
def templates(translations: gettext.NullTranslations) -> list[_Template]:
    """The catalog's messages with placeholders, most specific first."""
    catalog = getattr(translations, "_catalog", {})
    found = []
    for message, translation in catalog.items():
        if isinstance(message, str) and "{" in message and translation:
            made = _template(message, translation)
            if made:
                found.append(made)
    found.sort(key=lambda item: -item[1])
    return [template for template, _ in found]


def _fill(translation: str, values: dict[str, str]) -> str:
    """``translation`` with each hole replaced by the value written in the English sentence."""
    index = 0

    def value(token: re.Match[str]) -> str:
        nonlocal index
        if token.group(0) in ("{{", "}}"):
            return token.group(0)[0]
        name = _hole_name(token.group(1), index)
        index += 1
        return values.get(name, token.group(0))

    return _TOKEN.sub(value, translation)


def match_text(text: str, translations: gettext.NullTranslations, _depth: int = 0) -> str:
    """A finished English sentence in the language of ``translations``, found by matching.

    Exact catalog messages are translated directly; a sentence written from a marked template
    is recognised by its template and written again from the template's translation with the
    same values (values that are sentences themselves are translated too). ``"A; B"`` and
    ``"where: what"`` are taken apart when the whole is not known. Anything unknown stays as it
    is; text over MAX_SENTENCE_CHARS is not looked at."""
    if not text or len(text) > MAX_SENTENCE_CHARS:
        return text
    exact = translations.gettext(text)
    if exact != text or _depth > _MAX_DEPTH:
        return exact
    for template in templates(translations):
        match = template.match(text)
        if match is not None:
            if "; " in text and any("; " in v for v in match.values()):
                # A hole swallowed a "; " join ("3.1x slower; 1.2x cost/token" read as one
                # "{ratio}x cost/token"): sentences joined are translated one by one if each is
                # known.
                parts = text.split("; ")
                each = [match_text(part, translations, _depth + 1) for part in parts]
                if all(t != p for t, p in zip(each, parts, strict=True)):
                    return "；".join(each)
            values = {
                name: (
                    match_text(v, translations, _depth + 1)
                    if " " in v and any(c.isalpha() for c in v)
                    else v
                )
                for name, v in match.items()
            }
            return _fill(template.translation, values)
    head, found, rest = text.partition(": ")
    if found and rest and " " not in head:
        # "where: what" (a path, a file or an id before the colon): the "where" stays.
        return head + "：" + match_text(rest, translations, _depth + 1)
    for joint in ("; ", ": "):
        head, found, rest = text.partition(joint)
        if found and rest:
            # "; " joins sentences: both are translated; "where: what" keeps its "where".
            first = match_text(head, translations, _depth + 1) if joint == "; " else head
            joined = "；" if joint == "; " else "："
            return first + joined + match_text(rest, translations, _depth + 1)
    return text
