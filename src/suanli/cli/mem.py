"""``suanli mem MODEL --task T ...``: the memory breakdown per GPU; with ``--gpu``, the fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.cli.image import image_options, run_image_task
from suanli.cli.options import work_request, workload_options
from suanli.cli.render import print_json, print_table
from suanli.units import GiB

if TYPE_CHECKING:
    from suanli.answers.memory import MemoryAnswer


def _gib(n: float) -> str:
    return f"{n / GiB:,.2f}"


def _short(source: str, limit: int = 70) -> str:
    """The first clause of a source (the full text is in --json)."""
    head = source.split(";")[0].split(" (")[0] if len(source) > limit else source
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _render(result: MemoryAnswer, title: str, explain: bool) -> None:
    total = result.total_bytes
    rows = [[k, _gib(v), f"{100 * v / total:.1f}%"] for k, v in result.breakdown.items() if v]
    rows.append(["total", _gib(total), "100%"])
    caption = (
        f"GiB per GPU; {result.cpu_bytes / GiB:,.2f} GiB in CPU memory"
        if result.cpu_bytes
        else "GiB per GPU"
    )
    print_table(
        title, ["component", "GiB", "share"], rows, right_align=["GiB", "share"], caption=caption
    )
    if not explain:
        return
    lines = [
        [ln.key, ln.label, _gib(ln.bytes), ln.formula, _short(ln.source)] for ln in result.lines
    ]
    print_table(
        "how each line is computed",
        ["bucket", "line", "GiB", "formula", "source"],
        lines,
        right_align=["GiB"],
    )
    if result.per_layer:
        terms = [
            [t.name, f"{t.bytes_per_token:,.1f}", t.formula, t.shardable] for t in result.per_layer
        ]
        print_table(
            "activations saved by one layer (bytes per token)",
            ["tensor", "bytes/token", "formula", "splits with"],
            terms,
            right_align=["bytes/token"],
        )
    for note in result.assumptions:
        click.echo(f"assumption: {note}")


@click.command("mem")
@click.argument("model")
@workload_options
@image_options
@click.option("--gpu", "gpu_name", default=None, help="Check the fit on this GPU.")
@click.option(
    "--card",
    "cards",
    multiple=True,
    help="Also check the fit on this GPU (repeatable); one row each in a fit table.",
)
@click.option(
    "--catalog",
    "catalog_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Extra or overriding GPU entries (TOML).",
)
@click.option("--explain", is_flag=True, help="Every line's formula and source, per-layer terms.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (bytes).")
def mem_cmd(
    model: str,
    gpu_name: str | None,
    cards: tuple[str, ...],
    catalog_file: str | None,
    explain: bool,
    as_json: bool,
    **opts: Any,
) -> None:
    """Memory per GPU for MODEL: weights, gradients, optimizer, activations, KV cache, overhead.

    Examples: suanli mem llama-3.1-8b --task qlora --gpu 4090;
    suanli mem qwen2.5-72b --task infer --quant awq-4bit-g128 --batch 16 --context 8192.
    """
    from suanli.answers.memory import MemoryRequest, memory

    if opts["task"] == "generate-image":
        run_image_task(
            model,
            gpu_name,
            opts,
            catalog_file=catalog_file,
            ignore_fit=True,
            as_json=as_json,
            explain=explain,
            memory_only=True,
        )
        return

    answer = memory(
        MemoryRequest(
            model=model,
            work=work_request(opts),
            gpu=gpu_name,
            cards=cards,
            catalog_file=catalog_file,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    _render(answer, f"{model}: {opts['task']} memory per GPU", explain)
    fit = answer.fit
    if fit is not None:
        verdict = "fits" if fit.fits else "does NOT fit"
        rows = [
            ["verdict", f"{verdict} on {fit.gpu} ({_gib(fit.gpu_memory_bytes)} GiB)"],
            ["headroom", f"{_gib(fit.headroom_bytes)} GiB"],
            ["largest batch", str(fit.max_batch) if fit.max_batch else "none fits"],
            [
                "longest " + ("context" if answer.inference else "sequence"),
                f"{fit.max_seq:,}" if fit.max_seq else "none fits",
            ],
        ]
        if fit.best_format is not None or answer.inference:
            rows.append(["best weight format that fits", fit.best_format or "none"])
        print_table("fit", ["", ""], rows)
        for note in fit.notes:
            click.echo(f"note: {note}")
    if len(answer.fits) > (1 if fit is not None else 0):
        print_table(
            "fit on each card",
            ["gpu", "GiB", "fits", "headroom GiB", "largest batch", "best format"],
            [
                [
                    f.gpu,
                    _gib(f.gpu_memory_bytes),
                    "yes" if f.fits else "no",
                    _gib(f.headroom_bytes),
                    str(f.max_batch or "-"),
                    f.best_format or "-",
                ]
                for f in answer.fits
            ],
            right_align=["GiB", "headroom GiB", "largest batch"],
        )
