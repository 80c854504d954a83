"""``suanli compare MODEL --devices local-cpu,"RTX 4090","H100 SXM"``: the same work on several
devices side by side, with the ratio and the one-line reason."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.cli.band_view import row_band_lines
from suanli.cli.options import work_request, workload_options
from suanli.cli.render import print_json, print_line, print_table
from suanli.cli.types import IntRange
from suanli.i18n import N_, _, sentence

if TYPE_CHECKING:
    pass


def _split(text: str) -> tuple[str, ...]:
    return tuple(n.strip().strip('"') for n in text.split(",") if n.strip())


def _device_cell(row: Any) -> str:
    """The device, marked in red when the work cannot run on it as given."""
    if row.fits and row.supported:
        return str(row.device)
    return f"{row.device} [bold red]{_('(cannot run)')}[/]"


@click.command(
    "compare",
    help=N_(
        "Why did my request go from 10 s to 300 ms? The same roofline — FLOP/s and memory "
        "bandwidth — for a CPU and GPUs, side by side, in plain words."
    ),
)
@click.argument("model")
@workload_options
@click.option(
    "--devices",
    required=True,
    help=N_(
        "Comma-separated devices: local-cpu (this machine, measured) and catalog "
        'names, e.g. local-cpu,"RTX 4090","H100 SXM".'
    ),
)
@click.option("--prompt", type=IntRange(min=1), default=PROMPT_TOKENS, show_default=True)
@click.option(
    "--output", "output_tokens", type=IntRange(min=1), default=OUTPUT_TOKENS, show_default=True
)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def compare_cmd(
    model: str,
    devices: str,
    prompt: int,
    output_tokens: int,
    catalog_file: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    from suanli.answers.compare import CompareRequest, compare

    answer = compare(
        CompareRequest(
            model=model,
            work=work_request(opts),
            devices=_split(devices),
            prompt=prompt,
            output=output_tokens,
            catalog_file=catalog_file,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    rows = answer.rows
    if answer.inference:
        table = [
            [
                _device_cell(r),
                f"{(r.ttft_s or 0.0) * 1e3:,.1f} ms",
                f"{(r.tpot_s or 0.0) * 1e3:,.2f} ms",
                f"{r.request_s or 0.0:,.2f} s",
                f"{r.tokens_per_s:,.1f}",
                f"{r.speedup_vs_slowest:,.0f}x",
            ]
            for r in rows
        ]
        print_table(
            _("{model}: {prompt} prompt + {output} output tokens, batch {batch}").format(
                model=model, prompt=prompt, output=output_tokens, batch=answer.batch
            ),
            [_("device"), _("TTFT"), _("per token"), _("request"), _("tokens/s"), _("speed")],
            table,
        )
    else:
        table = [
            [
                _device_cell(r),
                f"{r.step_time_s or 0.0:,.3f} s",
                f"{r.tokens_per_s:,.0f}",
                f"{r.speedup_vs_slowest:,.0f}x",
            ]
            for r in rows
        ]
        print_table(
            _("{model} {task} step").format(model=model, task=answer.task),
            [_("device"), _("step"), _("tokens/s"), _("speed")],
            table,
        )
    for line in row_band_lines(rows, ("tokens_per_s", "step_time_s", "ttft_s", "tpot_s")):
        print_line(line)
    for r in rows:
        if r.reason:
            print_line(
                _("{device} is {ratio}x faster than {slowest}: {reason}").format(
                    device=r.device,
                    ratio=f"{r.speedup_vs_slowest:,.0f}",
                    slowest=rows[answer.slowest].device,
                    reason=sentence(r.reason),
                )
            )
    for r in rows:
        for warning in r.warnings:
            print_line(
                _("{device} cannot run it as given: {warning}").format(
                    device=r.device, warning=sentence(warning)
                ),
                fg="red",
                err=True,
            )
