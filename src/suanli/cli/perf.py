"""``suanli perf MODEL --task T --gpu G ...``: step time, throughput, MFU and the bound."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.answers.options import PUE
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.cli.band_view import band_rows, basis_text
from suanli.cli.band_view import fmt_s as _fmt_s
from suanli.cli.image import image_options, run_image_task
from suanli.cli.options import declared_option, work_request, workload_options
from suanli.cli.render import print_json, print_line, print_table
from suanli.cli.types import FloatRange, IntRange
from suanli.i18n import N_, _, sentence
from suanli.limits import MAX_NICS_PER_NODE

if TYPE_CHECKING:
    from suanli.answers.perf import InferPerfAnswer, TrainPerfAnswer


#: The bounds and the step-time parts of an answer (English in the JSON), shown translated.
BOUND_WORDS = (N_("compute"), N_("memory"), N_("communication"), N_("bubble"), N_("host"))


@click.command(
    "perf",
    help=N_(
        "How fast, and bound by what: step time, tokens/s, MFU; TTFT and TPOT for inference."
        "\n\nExamples: suanli perf llama-3.1-8b --task full --gpu h100 --gpus 8 --zero 1 "
        "--tokens 1e9; suanli perf llama-3.1-8b --task infer --gpu 4090 --quant awq-4bit-g128 "
        "--batch 8; suanli perf sdxl --task generate-image --steps 30 --size 1024x1024 "
        "--gpu 4090."
    ),
)
@click.argument("model")
@workload_options
@image_options
@click.option("--gpu", "gpu_name", required=True, help=N_("The GPU (catalog name)."))
@click.option(
    "--gpus-per-node",
    type=IntRange(min=1),
    default=None,
    help=N_("GPUs per node (default by form factor: 8 for SXM/PCIe servers)."),
)
@click.option(
    "--inter-node",
    default=None,
    help=N_("Link between nodes: ib-ndr, ib-hdr, roce-200g, eth-100g, ..."),
)
@click.option(
    "--nics-per-node",
    type=IntRange(min=1, max=MAX_NICS_PER_NODE),
    default=None,
    help=N_(
        "Scale-out NICs (ports of the --inter-node link) per node (default: the usual node of "
        "the card: 8 on DGX/HGX, 4 on DGX-1); many clusters have 1 or 2."
    ),
)
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    default=None,
    help=N_("Measured ceilings (TOML from suanli bench) replacing the defaults."),
)
@click.option(
    "--tokens",
    type=FloatRange(min=1),
    default=None,
    help=N_("Training tokens: prints time to train, GPU-hours, energy and cost."),
)
@click.option(
    "--prompt",
    type=IntRange(min=1),
    default=PROMPT_TOKENS,
    show_default=True,
    help=N_("Inference: prompt tokens."),
)
@click.option(
    "--output",
    "output_tokens",
    type=IntRange(min=1),
    default=OUTPUT_TOKENS,
    show_default=True,
    help=N_("Inference: generated tokens."),
)
@declared_option(PUE)
@click.option(
    "--rent",
    "--price",
    "price",
    type=FloatRange(min=0),
    default=None,
    metavar="USD",
    help=N_(
        "Rent per GPU-hour in USD (default: the cheapest on-demand price in costs.toml, else "
        "the catalog's)."
    ),
)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option(
    "--explain", is_flag=True, help=N_("Every time term: its efficiency, source and formula.")
)
@click.option(
    "--ignore-fit",
    is_flag=True,
    help=N_(
        "Give the speed of a job that does not fit or that the card cannot compute, "
        "marked as such, instead of refusing it."
    ),
)
@click.option(
    "--host-cpu",
    default=None,
    metavar="CPU",
    help=N_(
        "With --gpu-layers: the CPU that runs the other layers (a catalog CPU, e.g. "
        "i9-14900k-cpu; default ryzen-9-7950x-cpu, dual-channel DDR5)."
    ),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def perf_cmd(
    model: str,
    gpu_name: str,
    gpus_per_node: int | None,
    inter_node: str | None,
    nics_per_node: int | None,
    calibration: str | None,
    tokens: float | None,
    prompt: int,
    output_tokens: int,
    pue: float,
    price: float | None,
    catalog_file: str | None,
    explain: bool,
    ignore_fit: bool,
    host_cpu: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """``suanli perf``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.perf import InferPerfAnswer, PerfRequest, perf

    if opts["task"] == "generate-image":
        run_image_task(
            model,
            gpu_name,
            opts,
            catalog_file=catalog_file,
            ignore_fit=ignore_fit,
            as_json=as_json,
            explain=explain,
            memory_only=False,
        )
        return

    answer = perf(
        PerfRequest(
            model=model,
            work=work_request(opts),
            gpu=gpu_name,
            gpus_per_node=gpus_per_node,
            inter_node=inter_node,
            nics_per_node=nics_per_node,
            calibration=calibration,
            tokens=tokens,
            prompt=prompt,
            output=output_tokens,
            pue=pue,
            price=price,
            catalog_file=catalog_file,
            ignore_fit=ignore_fit,
            host_cpu=host_cpu,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    if isinstance(answer, InferPerfAnswer):
        _render_infer(answer)
    else:
        _render_train(answer)
    if explain:
        _render_terms(answer)
    for warning in answer.warnings:
        print_line(
            _("cannot run as given: {warning}").format(warning=sentence(warning)),
            fg="red",
            err=True,
        )


def _short(text: str, limit: int = 60) -> str:
    """The first clause of a source (the whole of it is in --json)."""
    head = text.split(";")[0].split(" (")[0]
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _render_terms(doc: InferPerfAnswer | TrainPerfAnswer) -> None:
    print_table(
        _("how each term is computed"),
        [_("term"), _("time"), _("efficiency"), _("from")],
        [
            [
                sentence(t.term),
                _fmt_s(t.seconds),
                f"{t.efficiency:.0%}" if t.efficiency is not None else "-",
                _short(sentence(t.source)),
            ]
            for t in doc.terms
        ],
        right_align=[_("time"), _("efficiency")],
    )
    for t in doc.terms:
        print_line(
            _("{term}: {formula}").format(term=sentence(t.term), formula=sentence(t.formula))
        )
    if "batch_tokens_per_s" in doc.explain:  # inference answers only
        print_line(
            _("{term}: {formula}").format(
                term=_("static batch, prefill included"),
                formula=sentence(doc.explain["batch_tokens_per_s"]),
            )
        )


def _runnable_rows(doc: InferPerfAnswer | TrainPerfAnswer) -> list[list[str]]:
    """The red verdict rows of a hypothetical speed (--ignore-fit); none for a runnable job."""
    rows = []
    if not doc.fits:
        verdict = _("does NOT fit: {used} of {total} GiB").format(
            used=_gib(doc.memory_bytes), total=_gib(doc.gpu_memory_bytes)
        )
        rows.append([f"[bold red]{_('memory')}[/]", f"[bold red]{verdict}[/]"])
    if not doc.supported:
        rows.append(
            [f"[bold red]{_('precision')}[/]", f"[bold red]{_('NOT supported by this card')}[/]"]
        )
    return rows


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f}"


def _static_batch(doc: InferPerfAnswer) -> str:
    rate = f"{doc.batch_tokens_per_s:,.0f} tokens/s"
    if doc.batch_waves <= 1:
        return rate
    return _("{rate}, in {waves} waves of at most {held} (the KV cache holds no more)").format(
        rate=rate, waves=doc.batch_waves, held=f"{doc.largest_batch:,}"
    )


def _render_infer(doc: InferPerfAnswer) -> None:
    rows = [
        *_runnable_rows(doc),
        [_("TTFT (prefill)"), _fmt_s(doc.ttft_s)],
        [_("TPOT (per output token)"), _fmt_s(doc.tpot_s)],
        [_("throughput (decode)"), f"{doc.tokens_per_s:,.0f} tokens/s"],
        *band_rows(doc.band),
        [_("request (prefill + decode)"), _fmt_s(doc.request_s)],
        [_("static batch, prefill included"), _static_batch(doc)],
        [_("decode is bound by"), _(doc.bound)],
        [
            _("decode turns compute-bound at batch"),
            str(doc.compute_bound_batch) if doc.compute_bound_batch else _("never"),
        ],
    ]
    title = _("{model} on {gpu} x{tp}: batch {batch}, {prompt}+{output} tokens").format(
        model=doc.model,
        gpu=doc.gpu,
        tp=doc.tp,
        batch=doc.batch,
        prompt=doc.prompt,
        output=doc.output,
    )
    print_table(title, ["", ""], rows)
    if doc.band_basis:
        print_line(basis_text(doc.band_basis))
    sweep = [
        [str(r.batch), _fmt_s(r.tpot_s), f"{r.tokens_per_s:,.0f}", _(r.bound)]
        for r in doc.batch_sweep
    ]
    print_table(
        _("throughput against batch"),
        [_("batch"), _("TPOT"), _("tokens/s"), _("bound")],
        sweep,
        right_align=[_("batch"), _("TPOT"), _("tokens/s")],
    )
    for note in doc.assumptions:
        print_line(_("assumption: {note}").format(note=sentence(note)))


def _speedup_text(doc: TrainPerfAnswer) -> str:
    """The speed-up cell: the figure, or why there is none (one GPU cannot hold the job)."""
    speedup, efficiency = doc.scaling.get("speedup"), doc.scaling.get("efficiency")
    if not isinstance(speedup, float) or not isinstance(efficiency, float):
        reason = doc.scaling.get("reason")
        return sentence(reason) if isinstance(reason, str) else ""
    return _("{speedup}x on {gpus} GPUs ({efficiency} efficiency)").format(
        speedup=f"{speedup:.2f}", gpus=doc.gpus, efficiency=f"{efficiency:.0%}"
    )


def _render_train(doc: TrainPerfAnswer) -> None:
    rows = [
        *_runnable_rows(doc),
        [_("step time"), _fmt_s(doc.step_time_s)],
        [_("throughput"), f"{doc.tokens_per_s:,.0f} tokens/s"],
        ["MFU", f"{doc.mfu:.1%}"],
        *band_rows(doc.band),
        [_("bound"), _(doc.bound)],
        [_("speed-up over 1 GPU"), _speedup_text(doc)],
    ]
    for key, seconds in doc.breakdown_s.items():
        rows.append([f"  {_(key)}", _fmt_s(seconds)])
    cost = doc.time_to_train
    if cost is not None:
        rows += [
            [_("time to train"), _fmt_s(cost.time_to_train_s)],
            [_("GPU-hours"), f"{cost.gpu_hours:,.0f}"],
            [_("energy"), f"{cost.energy_kwh:,.0f} kWh (PUE {doc.pue})"],
            [_("cost"), f"${cost.cost_usd:,.0f}" if cost.cost_usd else _("no price known")],
        ]
    title = _("{model} {task} on {gpus} x {gpu}").format(
        model=doc.model, task=doc.task, gpus=doc.gpus, gpu=doc.gpu
    )
    print_table(title, ["", ""], rows)
    if doc.band_basis:
        print_line(basis_text(doc.band_basis))
    for tip in doc.advice:
        print_line(
            _("fix: {issue}: {fix} -> {after} tokens/s ({speedup}x)").format(
                issue=sentence(tip.issue),
                fix=sentence(tip.fix),
                after=f"{tip.tokens_per_s_after:,.0f}",
                speedup=f"{tip.speedup:.2f}",
            )
        )
    for note in doc.assumptions:
        print_line(_("assumption: {note}").format(note=sentence(note)))
