"""Shared rendering: JSON for scripts, rich tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


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


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right_align: Sequence[str] = (),
    no_wrap: Sequence[str] = (),
    caption: str | None = None,
) -> None:
    """A rich table on stdout; rich is imported only when a table is drawn."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for col in columns:
        table.add_column(
            col, justify="right" if col in right_align else "left", no_wrap=col in no_wrap
        )
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def print_line(text: str, *, err: bool = False, fg: str | None = None) -> None:
    """One line of prose, wrapped at word boundaries to the terminal's width (80 when piped),
    continuation lines indented by two spaces."""
    import shutil
    import textwrap

    import click

    width = shutil.get_terminal_size((80, 24)).columns
    wrapped = textwrap.fill(
        text, width=max(width, 40), subsequent_indent="  ", break_on_hyphens=False
    )
    click.secho(wrapped, err=err, fg=fg)
