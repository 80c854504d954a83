"""``suanli explain``: what a CUDA / NCCL / driver / PyTorch error means and how to fix it."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator

import click

from suanli.cli.render import print_json, print_table
from suanli.live.errors import Match, explain_lines

NO_MATCH = (
    "no known error matched; pass the whole traceback or log (--log FILE, '-' for stdin), "
    "or add the message to the catalog (see docs/explain.md)"
)


def _log_lines(path: str) -> Iterator[str]:
    """Lines of the log at ``path`` ('-' is stdin); unreadable files raise ValueError."""
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            yield from sys.stdin
        else:
            for raw in buffer:
                yield raw.decode("utf-8", errors="replace")
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            yield from handle
    except OSError as exc:
        raise ValueError(f"cannot read log file {path!r}: {exc.strerror or exc}") from None


def _render(matches: list[Match]) -> None:
    plural = "" if len(matches) == 1 else "s"
    print_table(
        f"{len(matches)} known error{plural} found",
        ["id", "error", "cause", "fix"],
        [[m.id, m.title, m.cause, m.fix] for m in matches],
        no_wrap=["id"],
    )
    print_table(
        "first matching line and source",
        ["id", "line", "source"],
        [[m.id, m.matched_line, m.source] for m in matches],
        no_wrap=["id"],
    )


@click.command("explain")
@click.argument("text", nargs=-1)
@click.option(
    "--log",
    "log_file",
    metavar="FILE",
    default=None,
    help="Scan a whole log file line by line ('-' reads stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def explain_cmd(text: tuple[str, ...], log_file: str | None, as_json: bool) -> None:
    """Explain a GPU error: what it means, why it happens, how to fix it, and the source.

    Give the error message as TEXT (quote it) or a whole log with --log FILE. Every line is
    matched against a catalog of known CUDA, NCCL, driver, PyTorch, cuDNN, ROCm, bitsandbytes
    and vLLM errors; each known error is reported once, in order of first appearance.
    """
    message = " ".join(text)
    if not message.strip() and log_file is None:
        raise ValueError(
            "nothing to explain; give the error text as an argument or a log with --log FILE "
            "('-' reads stdin)"
        )
    lines: Iterable[str] = message.splitlines()
    if log_file is not None:
        lines = itertools.chain(lines, _log_lines(log_file))
    matches = explain_lines(lines)
    if as_json:
        print_json({"matches": [m.as_dict() for m in matches]})
    elif matches:
        _render(matches)
    else:
        click.echo(NO_MATCH)
