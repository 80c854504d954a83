"""``suanli mem MODEL --task T ...``: the memory breakdown per GPU; with ``--gpu``, the fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.cli.image import image_options, run_image_task
from suanli.cli.options import work_request, workload_options
from suanli.cli.render import print_json, print_line, print_table
from suanli.i18n import N_, _, sentence
from suanli.units import GiB

if TYPE_CHECKING:
    from suanli.answers.memory import MemoryAnswer, ToFit


#: The breakdown's buckets (estimate.breakdown.BREAKDOWN_KEYS), shown translated.
BUCKET_WORDS = (
    N_("weights"),
    N_("master_weights"),
    N_("gradients"),
    N_("optimizer"),
    N_("activations"),
    N_("logits"),
    N_("kv_cache"),
    N_("overhead"),
    N_("overlap"),
)


def _gib(n: float) -> str:
    return f"{n / GiB:,.2f}"


def _short(source: str, limit: int = 70) -> str:
    """The first clause of a source (the full text is in --json)."""
    head = source.split(";")[0].split(" (")[0] if len(source) > limit else source
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _to_fit_rows(to_fit: ToFit) -> list[list[str]]:
    """The fit table's rows that say what to change (suanli fit walks the chain step by step)."""
    changes = _("; ").join(sentence(change) for change in to_fit.changes) or _("none")
    if not to_fit.fits:
        return [[_("to fit"), _("no change on this many GPUs fits; try suanli plan")]]
    return [
        [_("to fit"), changes],
        [
            _("then"),
            _("{gib} GiB, {speed:,.0f} tokens/s").format(
                gib=_gib(to_fit.memory_bytes), speed=to_fit.tokens_per_s
            ),
        ],
        [_("options"), to_fit.options],
    ]


def _render(result: MemoryAnswer, title: str, explain: bool) -> None:
    total = result.total_bytes
    rows = [[_(k), _gib(v), f"{100 * v / total:.1f}%"] for k, v in result.breakdown.items() if v]
    rows.append([_("total"), _gib(total), "100%"])
    caption = (
        _("GiB per GPU; {cpu} GiB in CPU memory").format(cpu=f"{result.cpu_bytes / GiB:,.2f}")
        if result.cpu_bytes
        else _("GiB per GPU")
    )
    print_table(
        title,
        [_("component"), _("GiB"), _("share")],
        rows,
        right_align=[_("GiB"), _("share")],
        caption=caption,
    )
    if not explain:
        return
    lines = [
        [
            _(ln.key),
            sentence(ln.label),
            _gib(ln.bytes),
            sentence(ln.formula),
            _short(sentence(ln.source)),
        ]
        for ln in result.lines
    ]
    print_table(
        _("how each line is computed"),
        [_("bucket"), _("line"), _("GiB"), _("formula"), _("source")],
        lines,
        right_align=[_("GiB")],
    )
    if result.per_layer:
        terms = [
            [
                sentence(t.name),
                f"{t.bytes_per_token:,.1f}",
                sentence(t.formula),
                sentence(t.shardable),
            ]
            for t in result.per_layer
        ]
        print_table(
            _("activations saved by one layer (bytes per token)"),
            [_("tensor"), _("bytes/token"), _("formula"), _("splits with")],
            terms,
            right_align=[_("bytes/token")],
        )
    for note in result.assumptions:
        click.echo(_("assumption: {note}").format(note=sentence(note)))


@click.command(
    "mem",
    help=N_(
        "Memory per GPU for MODEL: weights, gradients, optimizer, activations, KV cache, "
        "overhead.\n\nExamples: suanli mem llama-3.1-8b --task qlora --gpu 4090; suanli mem "
        "qwen2.5-72b --task infer --quant awq-4bit-g128 --batch 16 --context 8192."
    ),
)
@click.argument("model")
@workload_options
@image_options
@click.option("--gpu", "gpu_name", default=None, help=N_("Check the fit on this GPU."))
@click.option(
    "--card",
    "cards",
    multiple=True,
    help=N_("Also check the fit on this GPU (repeatable); one row each in a fit table."),
)
@click.option(
    "--catalog",
    "catalog_file",
    type=click.Path(dir_okay=False),
    default=None,
    help=N_("Extra or overriding GPU entries (TOML)."),
)
@click.option(
    "--explain", is_flag=True, help=N_("Every line's formula and source, per-layer terms.")
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document (bytes)."))
def mem_cmd(
    model: str,
    gpu_name: str | None,
    cards: tuple[str, ...],
    catalog_file: str | None,
    explain: bool,
    as_json: bool,
    **opts: Any,
) -> None:
    """``suanli mem``: its help is the ``help=`` above (translated with --lang zh)."""
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
    title = _("{model}: {task} memory per GPU").format(model=model, task=opts["task"])
    _render(answer, title, explain)
    if not explain:  # --explain lists it among the assumptions
        for note in answer.settled:
            print_line(_("assumption: {note}").format(note=sentence(note)))
    fit = answer.fit
    if fit is not None:
        verdict = (
            _("fits on {gpu} ({gib} GiB)") if fit.fits else _("does NOT fit on {gpu} ({gib} GiB)")
        ).format(gpu=fit.gpu, gib=_gib(fit.gpu_memory_bytes))
        rows = [
            [_("verdict"), verdict],
            [_("headroom"), f"{_gib(fit.headroom_bytes)} GiB"],
            [_("largest batch"), str(fit.max_batch) if fit.max_batch else _("none fits")],
            [
                _("longest context") if answer.inference else _("longest sequence"),
                f"{fit.max_seq:,}" if fit.max_seq else _("none fits"),
            ],
        ]
        if fit.best_format is not None or answer.inference:
            rows.append([_("best weight format that fits"), fit.best_format or _("none")])
        if answer.to_fit is not None:
            rows += _to_fit_rows(answer.to_fit)
        print_table(_("fit"), ["", ""], rows)
        for note in fit.notes:
            click.echo(_("note: {note}").format(note=sentence(note)))
    if len(answer.fits) > (1 if fit is not None else 0):
        right = [_("GiB"), _("headroom GiB"), _("largest batch")]
        print_table(
            _("fit on each card"),
            [
                _("gpu"),
                _("GiB"),
                _("fits"),
                _("headroom GiB"),
                _("largest batch"),
                _("best format"),
            ],
            [
                [
                    f.gpu,
                    _gib(f.gpu_memory_bytes),
                    _("yes") if f.fits else _("no"),
                    _gib(f.headroom_bytes),
                    str(f.max_batch or "-"),
                    f.best_format or "-",
                ]
                for f in answer.fits
            ],
            right_align=right,
        )
