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
        return normalize(explicit)
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def normalize(lang: str) -> str:
    """``zh``, ``zh-CN``, ``zh_TW.UTF-8``, ``中文`` -> ``zh``; ``en...`` -> ``en``; ValueError
    otherwise (one sentence)."""
    value = lang.strip().lower()
    if value.startswith("zh") or value in ("cn", "chinese", "中文"):
        return "zh"
    if value.startswith("en") or value in ("english", "c", "posix"):
        return "en"
    raise ValueError(f"unknown language {lang!r}; use zh or en")


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


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it here: an English value (in an
    answer's JSON) that a view translates when it shows it."""
    return message


def translate_to(lang: str, message: str) -> str:
    """``message`` in ``lang``, whatever the current language (for tests and the web page)."""
    return _translations(normalize(lang)).gettext(message)
