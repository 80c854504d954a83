"""What does this GPU error mean? Every known CUDA, NCCL, driver, PyTorch, cuDNN, ROCm,
bitsandbytes and vLLM error in a message or a whole log: what it means, why it happens, how to
fix it, and the source (``suanli explain``)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from suanli.answers.base import Answer
from suanli.i18n import N_, message_of
from suanli.live.errors import Match, explain_lines
from suanli.safe_files import UnsafeFileError, open_regular_text

#: The largest training log ``explain --log`` reads (a FIFO or a device is refused, not read).
MAX_LOG_BYTES = 1 << 30


@dataclass(frozen=True)
class ExplainRequest:
    """The error text, and a log to scan line by line."""

    text: str = ""
    """The error message (one or more lines)."""
    log_file: str | None = None
    """A log file scanned after ``text`` (``-`` reads stdin)."""


@dataclass(frozen=True, kw_only=True)
class ErrorMatch:
    """One known error, with the first line that matched it."""

    id: str
    error: str
    """The error's title."""
    cause: str
    fix: str
    source: str
    """Where the explanation comes from (documentation, issue thread)."""
    line: str
    """The first line of the input that matched."""


@dataclass(frozen=True, kw_only=True)
class ExplainAnswer(Answer):
    """The known errors found, once each, in order of first appearance (empty: none known)."""

    schema_name = "explain"

    matches: tuple[ErrorMatch, ...]


def error_match(m: Match) -> ErrorMatch:
    """The answer's view of a catalog :class:`Match`."""
    return ErrorMatch(
        id=m.id, error=m.title, cause=m.cause, fix=m.fix, source=m.source, line=m.matched_line
    )


def log_lines(path: str) -> Iterator[str]:
    """Lines of the log at ``path`` (``-`` is stdin), read lazily; an unreadable file raises
    ValueError."""
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            yield from sys.stdin
        else:
            for raw in buffer:
                yield raw.decode("utf-8", errors="replace")
        return
    try:
        with open_regular_text(path, MAX_LOG_BYTES) as handle:
            yield from handle
    except UnsafeFileError as exc:
        raise ValueError(message_of(exc)) from None
    except OSError as exc:
        raise ValueError(
            N_("cannot read log file {path!r}: {error}").format(
                path=path, error=exc.strerror or exc
            )
        ) from None


def explain(req: ExplainRequest) -> ExplainAnswer:
    """The known errors in ``req.text`` and then ``req.log_file``; ValueError when both are
    empty or the log cannot be read."""
    if not req.text.strip() and req.log_file is None:
        raise ValueError(
            N_(
                "nothing to explain; give the error text as an argument or a log with --log FILE "
                "('-' reads stdin)"
            )
        )
    lines: Iterable[str] = req.text.splitlines()
    if req.log_file is not None:
        lines = itertools.chain(lines, log_lines(req.log_file))
    return ExplainAnswer(matches=tuple(error_match(m) for m in explain_lines(lines)))
