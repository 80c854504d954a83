"""``suanli explain``: what a CUDA / NCCL / driver / PyTorch error means and how to fix it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from suanli.cli.render import print_json, print_table
from suanli.i18n import N_, _, current

if TYPE_CHECKING:
    from suanli.answers.explain import ErrorMatch

NO_MATCH = N_(
    "no known error matched; pass the whole traceback or log (--log FILE, '-' for stdin), "
    "or add the message to the catalog (see docs/explain.md)"
)


def _words(match: ErrorMatch) -> tuple[str, str, str]:
    """The error, cause and fix of ``match`` in the current language: the catalog entry's
    ``*_zh`` keys under ``--lang zh`` (the answer itself stays English)."""
    from suanli.live.errors import bundled_entry

    lang = current()
    entry = bundled_entry(match.id) if lang != "en" else None
    if entry is None:
        return match.error, match.cause, match.fix
    return entry.text("title", lang), entry.text("cause", lang), entry.text("fix", lang)


def _render(matches: tuple[ErrorMatch, ...]) -> None:
    from rich.markup import escape

    # cells are rich markup: a log line's "[rank0]:[E1030 ...]" or a fix's "pip install x[y]"
    # would lose its brackets unless escaped
    title = (
        _("1 known error found")
        if len(matches) == 1
        else _("{count} known errors found").format(count=len(matches))
    )
    print_table(
        title,
        [_("id"), _("error"), _("cause"), _("fix")],
        [[escape(v) for v in (m.id, *_words(m))] for m in matches],
        no_wrap=[_("id")],
    )
    print_table(
        _("first matching line and source"),
        [_("id"), _("log line"), _("source")],
        [[escape(v) for v in (m.id, m.line, m.source)] for m in matches],
        no_wrap=[_("id")],
    )


@click.command(
    "explain",
    help=N_(
        "Explain a GPU error: what it means, why it happens, how to fix it, and the source.\n\n"
        "Give the error message as TEXT (quote it) or a whole log with --log FILE. Every line is "
        "matched against a catalog of known CUDA, NCCL, driver, PyTorch, cuDNN, ROCm, "
        "bitsandbytes and vLLM errors; each known error is reported once, in order of first "
        "appearance."
    ),
)
@click.argument("text", nargs=-1)
@click.option(
    "--log",
    "log_file",
    metavar="FILE",
    default=None,
    help=N_("Scan a whole log file line by line ('-' reads stdin)."),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def explain_cmd(text: tuple[str, ...], log_file: str | None, as_json: bool) -> None:
    from suanli.answers.explain import ExplainRequest, explain

    answer = explain(ExplainRequest(text=" ".join(text), log_file=log_file))
    if as_json:
        print_json(answer.to_json())
    elif answer.matches:
        _render(answer.matches)
    else:
        click.echo(_(NO_MATCH))
