"""Shared rendering: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from suanli.printable import printable

#: The helps written from a template, by the English text click keeps (click cleans a help
#: into a plain ``str``, losing the message id and values that ``--lang zh`` needs).
FORMATTED_HELPS: dict[str, str] = {}


def formatted_help(help_sentence: str) -> str:
    """``help_sentence`` (``N_("... {x}").format(x=...)``) as an option's help, remembered so
    that its translation is written from its message id and values, not matched."""
    FORMATTED_HELPS[str(help_sentence)] = help_sentence
    return help_sentence


def print_json(obj: Any) -> None:
    """Exactly one JSON document on stdout (numbers in base units)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")


def write_json_file(path: str, obj: Any) -> None:
    """One JSON document to ``path``, written to a temporary file beside it and renamed, so
    that a reader never sees half of it."""
    import os
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".suanli-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(obj, indent=2, sort_keys=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


#: A cell that reads as one figure ("$0.097", "4,912", "97.5 ms", "46%", "1.8x", "-"): a column
#: of them is never wrapped, so a number is never split from itself or from its unit.
_FIGURE = re.compile(
    r"[-+~<>≈≤≥]?\s?[$¥€]?\d[\d,.]*"  # a number, maybe signed or priced
    r"(\s?[A-Za-z%µ]{0,7}(/[A-Za-z]{1,7})?)?"  # its unit: ms, %, x, k, GiB/s, tokens/s
    r"|[-–—?]"  # or no figure
)

#: More lines than this in one row (beyond its own line breaks) and the records go vertical.
MAX_WRAPPED_LINES = 6

#: Characters a rich table spends per column on borders and padding (one more per table).
_BORDER_PER_COLUMN = 3


def _longest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.split()), default=0)


def _longest_line(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def _is_figure_column(cells: Sequence[str]) -> bool:
    filled = [c.strip() for c in cells if c.strip()]
    return bool(filled) and all(_FIGURE.fullmatch(c) for c in filled)


def table_layout(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    unbreakable: Sequence[str] = (),
) -> list[int] | None:
    """The width of each column (padding and borders excluded) that fits ``rows`` in ``width``
    characters without cutting a cell, or None when no such widths exist (or when they would
    wrap a row into a column of fragments): the caller then prints records vertically.

    ``rows`` are plain text. Columns in ``unbreakable`` and columns of figures are never wrapped;
    the others wrap at spaces only, never inside a word, so no width is below a cell's longest word.
    """
    n = len(columns)
    cells = [[row[i] if i < len(row) else "" for row in rows] for i in range(n)]
    rigid = [columns[i] in unbreakable or _is_figure_column(cells[i]) for i in range(n)]
    low, high = [], []
    for i in range(n):
        header = _longest_word(columns[i])
        if rigid[i]:
            least = max([header, *(_longest_line(c) for c in cells[i])])
        else:
            least = max([header, *(_longest_word(c) for c in cells[i])])
        most = max([_longest_line(columns[i]), least, *(_longest_line(c) for c in cells[i])])
        low.append(max(least, 1))
        high.append(max(most, 1))
    room = width - _BORDER_PER_COLUMN * n - 1
    if sum(low) > room:
        return None
    widths = list(high)
    excess = sum(widths) - room
    while excess > 0:
        # narrow the widest column that can still give, one character at a time
        i = max((j for j in range(n) if widths[j] > low[j]), key=lambda j: widths[j])
        widths[i] -= 1
        excess -= 1
    for i in range(n):
        if widths[i] == high[i]:
            continue
        for c in cells[i]:
            natural = max(len(c.splitlines()), 1)
            if _wrapped_height(c, widths[i]) - natural > MAX_WRAPPED_LINES:
                return None
    return widths


#: A token a line may break before: a run of non-space Latin text, or one CJK character (Chinese
#: has no spaces between words; a line breaks between any two of its characters), each keeping
#: the closing punctuation after it and the opening punctuation before it (a line never starts
#: with "，" or "。" and never ends with "（").
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_CLOSING = "，。；：、！？）」』】》”’"
_OPENING = "（「『【《“‘"
_TOKEN = re.compile(rf"\s*[{_OPENING}]*(?:[{_CJK}]|[^\s{_CJK}]+)[{_CLOSING}]*\s*")


def _breaks(line: str, width: int) -> list[int]:
    """Where to break one line to keep it within ``width`` cells: at spaces, or between CJK
    characters, so a Latin word longer than ``width`` stays whole on a line of its own."""
    from rich.cells import cell_len

    offsets: list[int] = []
    used = 0
    for match in _TOKEN.finditer(line):
        word = match.group(0)
        if used and used + cell_len(word.rstrip()) > width:
            offsets.append(match.start())
            used = cell_len(word)
        else:
            used += cell_len(word)
    return offsets


def wrap_cells(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal cells (a CJK character takes two), broken
    at spaces or between CJK characters (:func:`_breaks`); each paragraph's own line breaks and
    runs of spaces fold into one space, as click's help does. Always at least one line."""
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        flat = " ".join(paragraph.split())
        start = 0
        for end in [*_breaks(flat, max(width, 1)), len(flat)]:
            lines.append(flat[start:end].strip())
            start = end
    return lines or [""]


def _wrapped_height(text: str, width: int) -> int:
    return sum(len(_breaks(line, width)) + 1 for line in text.splitlines() or [""])


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right_align: Sequence[str] = (),
    no_wrap: Sequence[str] = (),
    caption: str | None = None,
) -> None:
    """A rich table on stdout (cells are rich markup); rich is imported only when one is drawn.

    No cell is ever cut: columns in ``no_wrap`` or ``right_align`` and columns of figures are
    kept whole on one line, the others wrap at spaces (never inside a word). When the columns
    cannot fit the terminal that way, or wrapping would stack a cell many lines high, each row
    is printed as a block of ``column: value`` lines instead (long words run past the edge
    rather than being broken).
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    header_cells = [Text(printable(c)) for c in columns]
    body = [[Text.from_markup(printable(str(cell))) for cell in row] for row in rows]
    plain = [[t.plain for t in row] for row in body]
    unbreakable = [*no_wrap, *right_align]
    widths = table_layout(columns, plain, console.width, unbreakable=unbreakable)
    if widths is None:
        _print_records(console, title, columns, body, caption)
        return
    _print_wrapped(console, Text(printable(title), style="table.title"), console.width)
    table = Table(show_edge=True)
    for col, header, width in zip(columns, header_cells, widths, strict=True):
        header.no_wrap = False
        table.add_column(
            header,
            justify="right" if col in right_align else "left",
            no_wrap=False,
            overflow="fold",
            width=width,
        )
    for row in body:
        table.add_row(*row)
    console.print(table)
    if caption:
        _print_wrapped(console, Text(printable(caption), style="table.caption"), console.width)


def _wrap_text(text: Any, width: int) -> list[Any]:
    """``text`` (a rich Text) in lines of at most ``width`` cells, broken at spaces only: a word
    longer than a line keeps a line of its own, whole."""
    lines: list[Any] = []
    for line in text.split(allow_blank=True):
        for part in line.divide(_breaks(line.plain, max(width, 1))):
            part.rstrip()
            lines.append(part)
    return lines


def _print_wrapped(console: Any, text: Any, width: int, indent: str = "") -> None:
    """``text`` wrapped at spaces to ``width``; a word longer than that runs past the edge
    whole (the terminal shows it on two lines, a copy takes it in one piece)."""
    from rich.text import Text

    for i, line in enumerate(_wrap_text(text, width)):
        if i and indent:
            line = Text(indent) + line
        console.print(line, soft_wrap=True)


def _print_records(
    console: Any,
    title: str,
    columns: Sequence[str],
    body: Sequence[Sequence[Any]],
    caption: str | None,
) -> None:
    """One block per row, one ``column: value`` line per cell, for a terminal too narrow for
    the table."""
    from rich.cells import cell_len
    from rich.text import Text

    width = console.width
    _print_wrapped(console, Text(printable(title), style="table.title"), width)
    key_width = max((cell_len(c) for c in columns if c), default=0) + 2
    hanging = key_width <= width // 3
    for row in body:
        console.print()
        for col, cell in zip(columns, row, strict=False):
            if not cell.plain.strip():
                continue
            key = Text(f"{col}: " if col else "", style="bold")
            if hanging and col:
                # padded in cells, not characters: a Chinese heading is two cells a character
                key = Text(f"{col}:" + " " * (key_width - cell_len(f"{col}:")), style="bold")
                lines = _wrap_text(cell, width - key_width)
                for i, line in enumerate(lines):
                    lead = key if i == 0 else Text(" " * key_width)
                    console.print(lead + line, soft_wrap=True)
            else:
                _print_wrapped(console, key + cell, width, indent="  ")
    console.print()
    if caption:
        _print_wrapped(console, Text(printable(caption), style="table.caption"), width)


def count_column() -> Any:
    """A rich progress column "done/total" with thousands separators, "done/?" while the total
    is unknown (rich keeps ``task.total`` None until it is given, and a format string such as
    ``"{task.total:,}"`` then raises TypeError as soon as the bar is drawn on a terminal)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class CountColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            total = "?" if task.total is None else f"{int(task.total):,}"
            return Text(f"{int(task.completed):,}/{total}", style="progress.download")

    return CountColumn()


def print_line(text: str, *, err: bool = False, fg: str | None = None) -> None:
    """One line of prose, wrapped to the terminal's width (80 when piped) by display cells, at
    spaces or between CJK characters (the tables' rule, :func:`_breaks`), continuation lines
    indented by two spaces."""
    import click

    # As textwrap did: runs of whitespace are one space; room for the indent.
    pieces = wrap_cells(" ".join(printable(text).split()), _terminal_width() - 2)
    click.secho("\n  ".join(p for p in pieces if p), err=err, fg=fg)


def _terminal_width() -> int:
    """The terminal's columns (80 when piped), never under 40."""
    import shutil

    return max(shutil.get_terminal_size((80, 24)).columns, 40)


def print_command(label: str, command: str) -> None:
    """``label`` and a command to paste: on one line when both fit the terminal's width (80
    when piped), else the label (wrapped as :func:`print_line`) and the command on a line of its
    own, indented and whole, so that it copies as one line."""
    import click
    from rich.cells import cell_len

    if cell_len(label) + 1 + len(command) <= _terminal_width():
        click.echo(f"{label} {command}")
        return
    print_line(label)
    click.echo(f"  {command}")
