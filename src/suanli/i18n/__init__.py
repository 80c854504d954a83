"""The language suanli speaks to people: English or Chinese (``--lang``, ``SUANLI_LANG``, the
locale), through gettext message catalogs.

Human-facing strings are marked ``_("...")`` where they are written; ``suanli/i18n/locale/zh/
LC_MESSAGES/suanli.po`` holds their Chinese (edited by hand, terms as the practitioners' guides
use them: 显存, 算力, 带宽, 微调, 推理...), compiled to ``suanli.mo`` by ``python scripts/i18n.py``
(Babel, a development tool); at run time only the standard library's ``gettext`` reads the
``.mo``. The library's sentences keep their message ids and values (:mod:`suanli.i18n.sentences`):
a view writes them in its language with :func:`sentence`. JSON keys never go through here; a
JSON document is English unless the web page asks for its language (``?lang=``).
"""

from __future__ import annotations

import gettext
import os
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

from suanli.i18n.sentences import (
    Msg,
    Sentence,
    concat,
    from_data,
    is_sentence,
    join,
    message_of,
    render,
    to_data,
)

__all__ = [
    "C_",
    "LANGS",
    "N_",
    "Msg",
    "Sentence",
    "_",
    "concat",
    "current",
    "from_data",
    "is_sentence",
    "join",
    "lang_from_environment",
    "message_of",
    "normalize",
    "sentence",
    "set_lang",
    "to_data",
    "translate_to",
]

#: The languages suanli speaks: English, the language of the message ids, and one catalog
#: (``locale/<code>/LC_MESSAGES/suanli.mo``) per other code. Adding a language is a catalog and
#: its code here.
LANGS = ("en", "zh")
#: Other names people give the languages (the C and POSIX locales are English).
ALIASES = {"cn": "zh", "chinese": "zh", "中文": "zh", "english": "en", "c": "en", "posix": "en"}
#: Where the compiled catalogs live (``<lang>/LC_MESSAGES/suanli.mo``).
LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "suanli"

_chosen: str | None = None


def lang_from_environment(environ: dict[str, str] | None = None) -> str:
    """``SUANLI_LANG`` when set, else the locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``):
    ``zh_CN.UTF-8`` and the like give ``zh`` (a code of :data:`LANGS`), anything else ``en``."""
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
            found = [code for code in LANGS if value.lower().startswith(code)]
            return found[0] if found else "en"
    return "en"


_warned: set[str] = set()


def _warn_unknown_lang(value: str) -> None:
    """Say once on stderr that ``SUANLI_LANG`` holds a language suanli does not speak."""
    if value not in _warned:
        _warned.add(value)
        shown = value.encode("ascii", "backslashreplace").decode()[:40]
        known = " or ".join(LANGS)
        print(f"suanli: SUANLI_LANG={shown!r} is not {known}; speaking English", file=sys.stderr)


def normalize(lang: str) -> str:
    """A code of :data:`LANGS`: ``zh``, ``zh-CN``, ``zh_TW.UTF-8``, ``中文`` -> ``zh``;
    ``en...`` -> ``en``; ValueError otherwise (one sentence)."""
    value = lang.strip().lower()
    if value in ALIASES:
        return ALIASES[value]
    for code in LANGS:
        if value.startswith(code):
            return code
    raise ValueError(
        N_("unknown language {lang!r}; use one of {langs}").format(
            lang=lang, langs=", ".join(LANGS)
        )
    )


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
    answer's JSON) that a view translates when it shows it. It is a :class:`Msg`: its
    ``.format(...)`` is a :class:`Sentence` that keeps the message id and the values (typed
    ``str``, which both are, so code that holds them needs no annotation of its own)."""
    return Msg(message)


def translate_to(lang: str, message: str) -> str:
    """``message`` in ``lang``, whatever the current language (for tests and the web page)."""
    return _translations(normalize(lang)).gettext(message)


# -- sentences the library wrote ---------------------------------------------------------------
#: Plain text (no message id) that reached :func:`sentence`, by text: each one is a sentence
#: that lost its identity on the way to the view, or text from outside the library.
FALLBACKS: Counter[str] = Counter()
#: The most distinct texts :data:`FALLBACKS` keeps.
MAX_FALLBACKS = 4096


def sentence(text: str, lang: str | None = None) -> str:
    """A sentence from an answer or an error, in ``lang`` (default: the current one).

    A :class:`Sentence` or :class:`Msg` (what the library writes with ``N_``) is written from
    its message id and values. Plain text has no values to fill in: it is counted in
    :data:`FALLBACKS` and looked up whole as a message id (a word, a data file's note), else
    shown as it is. Finished text is never parsed back into a template."""
    lang = normalize(lang) if lang else current()
    if isinstance(text, (Msg, Sentence)):
        return str(text) if lang == "en" else render(text, _translations(lang).gettext)
    if not text:
        return text
    if text in FALLBACKS or len(FALLBACKS) < MAX_FALLBACKS:  # bounded in a long-lived server
        FALLBACKS[text] += 1
    return text if lang == "en" else _translations(lang).gettext(text)
