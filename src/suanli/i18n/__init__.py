"""The language suanli speaks to people: English or Chinese (``--lang``, ``SUANLI_LANG``, the
locale), through gettext message catalogs.

Human-facing strings are marked ``_("...")`` where they are written; ``suanli/i18n/locale/zh/
LC_MESSAGES/suanli.po`` holds their Chinese (edited by hand, terms as the practitioners' guides
use them: 显存, 算力, 带宽, 微调, 推理...), compiled to ``suanli.mo`` by ``python scripts/i18n.py``
(Babel, a development tool); at run time only the standard library's ``gettext`` reads the
``.mo``. JSON keys and values never go through here: they stay English.
"""

from __future__ import annotations

import gettext
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The languages suanli speaks.
LANGS = ("en", "zh")
#: Where the compiled catalogs live (``<lang>/LC_MESSAGES/suanli.mo``).
LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "suanli"

_chosen: str | None = None


def lang_from_environment(environ: dict[str, str] | None = None) -> str:
    """``SUANLI_LANG`` when set, else the locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``):
    ``zh_CN.UTF-8`` and the like give ``zh``, anything else ``en``."""
    env = os.environ if environ is None else environ
    explicit = env.get("SUANLI_LANG", "").strip().lower()
    if explicit:
        try:
            return normalize(explicit)
        except ValueError:
            _warn_unknown_lang(explicit)
            return "en"
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


_warned: set[str] = set()


def _warn_unknown_lang(value: str) -> None:
    """Say once on stderr that ``SUANLI_LANG`` holds a language suanli does not speak."""
    if value not in _warned:
        _warned.add(value)
        shown = value.encode("ascii", "backslashreplace").decode()[:40]
        print(f"suanli: SUANLI_LANG={shown!r} is not zh or en; speaking English", file=sys.stderr)


def normalize(lang: str) -> str:
    """``zh``, ``zh-CN``, ``zh_TW.UTF-8``, ``中文`` -> ``zh``; ``en...`` -> ``en``; ValueError
    otherwise (one sentence)."""
    value = lang.strip().lower()
    if value.startswith("zh") or value in ("cn", "chinese", "中文"):
        return "zh"
    if value.startswith("en") or value in ("english", "c", "posix"):
        return "en"
    raise ValueError(N_("unknown language {lang!r}; use zh or en").format(lang=lang))


def set_lang(lang: str | None) -> None:
    """Speak ``lang`` from now on (``None``: back to the environment's choice)."""
    global _chosen
    _chosen = None if lang is None else normalize(lang)


def current() -> str:
    """The language in use."""
    return _chosen or lang_from_environment()


@lru_cache(maxsize=4)
def _translations(lang: str) -> gettext.NullTranslations:
    if lang == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[lang], fallback=True)


def _(message: str) -> str:
    """``message`` in the current language (itself in English, or when no translation exists)."""
    if not message:
        return message
    return _translations(current()).gettext(message)


def C_(context: str, message: str) -> str:
    """``message`` in the current language as it is meant in ``context`` (one English word with
    two Chinese ones: "error" is 错误 for a failure and 误差 for a measurement)."""
    return _translations(current()).pgettext(context, message)


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it here: an English value (in an
    answer's JSON) that a view translates when it shows it."""
    return message


def translate_to(lang: str, message: str) -> str:
    """``message`` in ``lang``, whatever the current language (for tests and the web page)."""
    return _translations(normalize(lang)).gettext(message)


# -- sentences the library wrote in English ---------------------------------------------------
# The library writes its sentences (error bodies, assumptions, notes) in English with
# ``N_("... {name} ...").format(name=...)``, so answers and JSON stay English. A view shows such a
# sentence with :func:`sentence`: the template it came from is found in the catalog by matching,
# its values are kept as they were written, and the template's translation is filled with them.
#
# Matching is linear in the sentence's length, whatever it holds: a template is its literal pieces
# between holes, found left to right with ``str.find`` (each hole takes the shortest text that
# lets the next piece follow, as a lazy ``.+?`` would, but never backtracks), so no crafted text
# can make it slow (docs/security.md). Sentences longer than MAX_SENTENCE_CHARS are not matched.
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
def _templates(lang: str) -> list[_Template]:
    """The catalog's messages with placeholders, most specific first."""
    catalog = getattr(_translations(lang), "_catalog", {})
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


def sentence(text: str, lang: str | None = None, _depth: int = 0) -> str:
    """An English sentence from an answer or an error, in ``lang`` (default: the current one).

    Exact catalog messages are translated directly; a sentence written from a marked template
    (``N_("... {x} ...").format(x=...)``) is recognised by its template and written again from
    the template's translation with the same values (values that are sentences themselves are
    translated too). ``"A; B"`` and ``"where: what"`` are taken apart when the whole is not
    known. Anything unknown stays as it is."""
    lang = normalize(lang) if lang else current()
    if lang == "en" or not text or len(text) > MAX_SENTENCE_CHARS:
        return text
    translations = _translations(lang)
    exact = translations.gettext(text)
    if exact != text or _depth > _MAX_DEPTH:
        return exact
    for template in _templates(lang):
        match = template.match(text)
        if match is not None:
            if "; " in text and any("; " in v for v in match.values()):
                # A hole swallowed a "; " join ("3.1x slower; 1.2x cost/token" read as one
                # "{ratio}x cost/token"): sentences joined are translated one by one if each is
                # known.
                parts = text.split("; ")
                each = [sentence(part, lang, _depth + 1) for part in parts]
                if all(t != p for t, p in zip(each, parts, strict=True)):
                    return "；".join(each)
            values = {
                name: (
                    sentence(v, lang, _depth + 1) if " " in v and any(c.isalpha() for c in v) else v
                )
                for name, v in match.items()
            }
            return _fill(template.translation, values)
    head, found, rest = text.partition(": ")
    if found and rest and " " not in head:
        # "where: what" (a path, a file or an id before the colon): the "where" stays.
        return head + "：" + sentence(rest, lang, _depth + 1)
    for joint in ("; ", ": "):
        head, found, rest = text.partition(joint)
        if found and rest:
            # "; " joins sentences: both are translated; "where: what" keeps its "where".
            first = sentence(head, lang, _depth + 1) if joint == "; " else head
            return first + ("；" if joint == "; " else "：") + sentence(rest, lang, _depth + 1)
    return text
