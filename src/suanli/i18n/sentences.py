"""Sentences as data: a message id and its values, translated by the view that shows them.

The library writes a sentence as ``N_("needs {size:.1f} GiB on {gpu}").format(size=..., gpu=...)``.
``N_`` returns a :class:`Msg` (the English message id, a ``str``), and its ``format`` returns a
:class:`Sentence`: a ``str`` holding the English text, so answers, their JSON, ``==`` and the
Python API see English as before, that also keeps its message id and its values. A view shows it
in another language with :func:`render`: the catalog's translation of the message id, filled with
the values formatted as the English formatted them (its ``!r``, ``:.1f``, ``:,``), values that are
sentences themselves rendered in the same language first. Nothing parses finished English text.

A sentence made of others (``"; ".join(reasons)``, ``a + " " + b``) is a *composite*: a
:class:`Sentence` with no message id whose values are its pieces, made by :func:`join` and
:func:`concat`; each piece is rendered on its own and a separator that is a :class:`Msg`
(``N_("; ")``) is translated too. An exception raised with a sentence keeps it as ``args[0]``;
:func:`message_of` gives it back to the view.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

#: The catalog lookup of one language: message id -> its translation (itself when unknown).
Lookup = Callable[[str], str]


class Msg(str):
    """A message id: English text marked for the catalog (what ``N_("...")`` returns). It is the
    English ``str`` itself; a view translates it by looking it up."""

    __slots__ = ()

    def format(self, *args: Any, **kwargs: Any) -> Sentence:
        """The English sentence this template writes with these values, keeping them."""
        return Sentence(str.format(self, *args, **kwargs), str(self), args, kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Msg, (str(self),))


class Sentence(str):
    """An English sentence (the ``str`` itself) with the message id and the values it was
    written from; ``msgid`` is None for a composite, whose ``args`` are its pieces in order."""

    msgid: str | None
    args: tuple[Any, ...]
    values: Mapping[str, Any]

    def __new__(
        cls,
        text: str,
        msgid: str | None,
        args: tuple[Any, ...] = (),
        values: Mapping[str, Any] | None = None,
    ) -> Sentence:
        made = super().__new__(cls, text)
        made.msgid = msgid
        made.args = tuple(args)
        made.values = dict(values or {})
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        # Plain str state: a web worker process sends answers back pickled.
        return (Sentence, (str(self), self.msgid, self.args, dict(self.values)))

    def __deepcopy__(self, memo: dict[int, Any]) -> Sentence:
        return self  # immutable, like str

    def __copy__(self) -> Sentence:
        return self


def concat(*pieces: str) -> Sentence:
    """``pieces`` written one after the other (``a + " " + b``) as one composite sentence: each
    :class:`Sentence` or :class:`Msg` piece is translated on its own, plain text stays."""
    flat: list[str] = []
    for piece in pieces:
        if isinstance(piece, Sentence) and piece.msgid is None:
            flat.extend(piece.args)  # a composite inside a composite: its pieces
        elif piece:
            flat.append(piece)
    return Sentence("".join(flat), None, tuple(flat))


def join(parts: Iterable[str], separator: str) -> Sentence:
    """``separator.join(parts)`` as a composite sentence (mark the separator with ``N_`` when it
    has a translation: ``join(reasons, N_("; "))``)."""
    pieces: list[str] = []
    for index, part in enumerate(parts):
        if index:
            pieces.append(separator)
        pieces.append(part)
    return concat(*pieces)


def message_of(exc: BaseException) -> str:
    """The sentence an exception was raised with (its only argument, a :class:`Sentence` or
    :class:`Msg`, kept with its message id), else its ``str()``."""
    if len(exc.args) == 1 and isinstance(exc.args[0], (Msg, Sentence)):
        return exc.args[0]
    return str(exc)


def is_sentence(text: object) -> bool:
    """Whether ``text`` carries its message id (a :class:`Msg` or a :class:`Sentence`)."""
    return isinstance(text, (Msg, Sentence))


#: The key that marks a sentence written as JSON data by :func:`to_data`.
DATA_KEY = "__sentence__"


def to_data(obj: Any) -> Any:
    """``obj`` (JSON-ready: dicts, lists, numbers, strings) with each :class:`Sentence` and
    :class:`Msg` written as a JSON object that keeps its message id and values, for a channel
    between suanli's own processes (a JSON answer for people writes the English instead)."""
    if isinstance(obj, Sentence):
        return {
            DATA_KEY: str(obj),
            "msgid": obj.msgid,
            "args": [to_data(v) for v in obj.args],
            "values": {k: to_data(v) for k, v in obj.values.items()},
        }
    if isinstance(obj, Msg):
        return {DATA_KEY: str(obj), "msgid": str(obj)}
    if isinstance(obj, dict):
        return {k: to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    return obj


def from_data(obj: Any) -> Any:
    """:func:`to_data` undone: its sentences are :class:`Sentence` and :class:`Msg` again."""
    if isinstance(obj, dict):
        if DATA_KEY in obj and isinstance(obj[DATA_KEY], str):
            text, msgid = obj[DATA_KEY], obj.get("msgid")
            if "args" not in obj:
                return Msg(text)
            args = tuple(from_data(v) for v in obj.get("args") or ())
            values = {str(k): from_data(v) for k, v in (obj.get("values") or {}).items()}
            return Sentence(text, msgid if isinstance(msgid, str) else None, args, values)
        return {k: from_data(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_data(v) for v in obj]
    return obj


_FORMATTER = string.Formatter()


@lru_cache(maxsize=8192)
def _fields(template: str) -> tuple[tuple[str, str | None, str, str | None], ...]:
    """``template`` parsed once: (literal text, field name, format spec, conversion) per
    field; an automatically numbered field (``{}``) gets its number as its name."""
    parsed = []
    auto = 0
    for literal, name, spec, conversion in _FORMATTER.parse(template):
        if name == "":
            name = str(auto)
            auto += 1
        parsed.append((literal, name, spec or "", conversion))
    return tuple(parsed)


def render(text: str, lookup: Lookup) -> str:
    """``text`` in the language of ``lookup``: a :class:`Sentence`'s translated template filled
    with its values (each formatted with the English template's conversion and spec, sentences
    among them rendered first), a :class:`Msg`'s translation, plain text as it is."""
    if isinstance(text, Sentence):
        if text.msgid is None:
            return "".join(render(piece, lookup) for piece in text.args)
        return _fill(text, text.msgid, lookup)
    if isinstance(text, Msg):
        return lookup(text) if text else str(text)
    return text


def _fill(sentence: Sentence, msgid: str, lookup: Lookup) -> str:
    translation = lookup(msgid)
    try:
        return _filled(sentence, msgid, translation, lookup)
    except (ValueError, KeyError, IndexError, AttributeError, TypeError):
        # A translation whose holes do not fit its message (the catalog test catches these):
        # the English is shown rather than nothing.
        return str(sentence) if translation == msgid else _filled(sentence, msgid, msgid, lookup)


def _filled(sentence: Sentence, msgid: str, translation: str, lookup: Lookup) -> str:
    """``translation`` filled with the values of ``sentence`` as ``msgid`` formats them."""
    shown: dict[str, str] = {}
    for _literal, name, spec, conversion in _fields(msgid):
        if name is not None and name not in shown:
            shown[name] = _value(sentence, name, spec, conversion, lookup)
    out: list[str] = []
    for literal, name, spec, conversion in _fields(translation):
        out.append(literal)
        if name is not None:
            # The value as the English wrote it; a hole only the translation has uses its own.
            value = shown.get(name)
            out.append(
                value if value is not None else _value(sentence, name, spec, conversion, lookup)
            )
    return "".join(out)


def _value(sentence: Sentence, name: str, spec: str, conversion: str | None, lookup: Lookup) -> str:
    """One field of ``sentence`` rendered: its value translated, converted, formatted."""
    value, _ = _FORMATTER.get_field(name, sentence.args, sentence.values)
    value = render(value, lookup) if isinstance(value, (Msg, Sentence)) else value
    value = _FORMATTER.convert_field(value, conversion)
    if "{" in spec:  # a nested field in the spec ({x:>{width}})
        spec = _FORMATTER.vformat(spec, sentence.args, sentence.values)
    return format(value, spec)
