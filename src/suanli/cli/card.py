"""``suanli card [GPU] [--gpus N]``: what this card can do — the largest model each common job
fits, what it runs at, and which popular models fit (no GPU named: the local one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from suanli.answers.options import WORK_OPTIONS
from suanli.cli.prices import price_option, priced, rent_option
from suanli.cli.render import print_json, print_line, print_table
from suanli.cli.types import IntRange
from suanli.i18n import N_, _, sentence

if TYPE_CHECKING:
    from suanli.answers.card import CardAnswer, Job


def task_label(task: str) -> str:
    """``full fine-tune``, ``LoRA``, ``QLoRA`` in the current language."""
    return {"full": _("full fine-tune"), "lora": "LoRA", "qlora": "QLoRA"}[task]


def job_label(job: Job) -> str:
    """``train LoRA, seq 2,048``, ``infer 4-bit, 32k context``."""
    if job.task == "infer":
        return _("infer {weights}, {k}k context").format(weights=job.weights, k=job.tokens // 1024)
    return _("train {task}, seq {seq}").format(task=task_label(job.task), seq=f"{job.tokens:,}")


def params_text(params: float | None) -> str:
    """``7.6B``, ``0.49B``; ``-`` for none."""
    if params is None:
        return "-"
    billions = params / 1e9
    return f"{billions:.2f}B" if billions < 1 else f"{billions:.1f}B"


def speed_text(tokens_per_s: float | None) -> str:
    """``2.7k tok/s``, ``48 tok/s``."""
    if tokens_per_s is None:
        return "-"
    if tokens_per_s >= 10_000:
        return f"{tokens_per_s / 1e3:.0f}k tok/s"
    if tokens_per_s >= 1_000:
        return f"{tokens_per_s / 1e3:.1f}k tok/s"
    return f"{tokens_per_s:.0f} tok/s"


def _short_speed(tokens_per_s: float | None) -> str:
    text = speed_text(tokens_per_s)
    return text.removesuffix(" tok/s")


@click.command(
    "card",
    help=N_(
        "What can this card run? The largest model for full, LoRA and QLoRA training and for "
        "inference in bf16, int8 and 4-bit, what it runs at, and which popular models fit. "
        "With no GPU named, the local one."
    ),
)
@click.argument("gpu", required=False)
@click.option(
    "--gpus",
    type=IntRange(min=1, max=1024),
    default=None,
    help=N_("Cards in the machine (default 1; with no GPU named, the local count)."),
)
@click.option(
    "--seq",
    type=IntRange(min=128),
    default=WORK_OPTIONS["seq"].default,
    show_default=True,
    help=N_("Training sequence length in tokens."),
)
@click.option(
    "--context",
    "contexts",
    type=IntRange(min=256),
    multiple=True,
    help=N_("Inference context length in tokens (repeatable; default 4096 and 32768)."),
)
@click.option(
    "--model",
    "models",
    multiple=True,
    help=N_("Show this model's fit instead of the popular ones (repeatable)."),
)
@rent_option
@price_option
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def card_cmd(
    gpu: str | None,
    gpus: int | None,
    seq: int,
    contexts: tuple[int, ...],
    models: tuple[str, ...],
    rent: float | None,
    price: float | None,
    catalog_file: str | None,
    as_json: bool,
) -> None:
    """``suanli card``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.card import POPULAR, CardRequest, card, local_card

    if gpu is None:
        gpu, local_count = local_card()
        gpus = gpus or local_count
    req = CardRequest(
        gpu=gpu,
        gpus=gpus or 1,
        seq=seq,
        contexts=contexts or (4096, 32768),
        presets=models or POPULAR,
        catalog_file=catalog_file,
        rent=rent,
        price=price,
    )
    answer = card(req)
    if as_json:
        print_json(answer.to_json())
        return
    _print(answer)


def _print(answer: CardAnswer) -> None:
    count = f"{answer.gpus} x " if answer.gpus > 1 else ""
    title = _("What {count}{name} ({gib} GiB) can run").format(
        count=count, name=answer.name, gib=f"{answer.memory_bytes / 2**30:,.0f}"
    )
    rows = []
    for cap in answer.capabilities:
        if cap.largest_model is None:
            rows.append([job_label(cap.job), _("nothing (not even 0.5B)"), "-", "-"])
            continue
        about = f"~{params_text(cap.about_params)}" if cap.about_params else _("more")
        rows.append(
            [
                job_label(cap.job),
                f"{cap.largest_model} ({params_text(cap.largest_params)})",
                about,
                speed_text(cap.tokens_per_s),
            ]
        )
    print_table(
        title,
        [_("job"), _("largest model that fits"), _("size limit"), _("speed")],
        rows,
        right_align=[_("size limit"), _("speed")],
    )
    _print_models(answer)
    print_line(_("rent {rent}; buy {buy}").format(rent=priced(answer.rent), buy=priced(answer.buy)))
    for line in answer.assumptions:
        print_line(_("  assumes {line}").format(line=sentence(line)))


def _print_models(answer: CardAnswer) -> None:
    """Popular models: tokens/s per job where they fit, grouped by training and context."""
    groups: list[tuple[str, list[int]]] = [
        (_("train tok/s"), [i for i, j in enumerate(answer.jobs) if j.task != "infer"])
    ]
    for context in dict.fromkeys(j.tokens for j in answer.jobs if j.task == "infer"):
        idx = [i for i, j in enumerate(answer.jobs) if j.task == "infer" and j.tokens == context]
        groups.append((_("infer {k}k tok/s").format(k=context // 1024), idx))
    rows = []
    for fit in answer.models:
        cells = [fit.model, params_text(fit.params)]
        for _title, idx in groups:
            parts = [
                f"{_job_short(answer.jobs[i])} {_short_speed(fit.tokens_per_s[i])}"
                for i in idx
                if fit.fits[i]
            ]
            cells.append(", ".join(parts) if parts else _("does not fit"))
        rows.append(cells)
    titles = [title for title, _idx in groups]
    print_table(_("Popular models on it"), [_("model"), _("size"), *titles], rows)


def _job_short(job: Job) -> str:
    return job.weights if job.task == "infer" else task_label(job.task).split()[0]
