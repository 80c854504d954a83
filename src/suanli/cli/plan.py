"""``suanli plan`` (ranked GPUs and layouts) and ``suanli fit`` (the OOM remedy chain)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.answers.options import WORK_OPTIONS
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.catalog.gpu import FORM_FACTORS, VENDORS
from suanli.cli.band_view import row_band_lines
from suanli.cli.options import declared_option, shape_options, work_request, workload_options
from suanli.cli.prices import priced, rent_option
from suanli.cli.render import formatted_help, print_command, print_json, print_line, print_table
from suanli.cli.types import FloatRange, IntRange
from suanli.i18n import N_, _, sentence
from suanli.models.presets import DEFAULT_MODEL
from suanli.plan.scenarios import SCENARIOS
from suanli.units import GiB

if TYPE_CHECKING:
    from suanli.answers.plan import PlanAnswer, RenderingPlanAnswer


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 60:,.1f} min"


def _short(value: float) -> str:
    """1234567 -> 1.23M, for narrow tables."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.0f}"


def _money(usd: float | None) -> str:
    return f"${usd:,.0f}" if usd is not None else "-"


@click.command(
    "plan",
    help=N_(
        "Which GPU, how many, how laid out, how long and how much: ranked, with why others "
        "lost.\n\nWith no arguments: a LoRA fine-tune of Llama-3.1-8B on one GPU, 100M tokens, "
        "ranked by time, with the cheapest choice too. Examples: suanli plan llama-3.1-70b "
        "--task full --max-gpus 64 --tokens 1e10; suanli plan llama-3.1-8b --task infer --rps "
        "50 --context 2048 --objective cost-per-token."
    ),
)
@click.argument("model", required=False, default=DEFAULT_MODEL)
@shape_options
@click.option(
    "--scenario",
    type=click.Choice(sorted(SCENARIOS)),
    default=None,
    metavar="NAME",
    # The choices go in the help, which wraps; in the option's name they ran past 80 columns.
    help=formatted_help(
        N_("A documented weighting: sets task, objective and candidate GPUs ({choices}).").format(
            choices=", ".join(sorted(SCENARIOS))
        )
    ),
)
@click.option("--gpu", "gpu_names", multiple=True, help=N_("Only these GPUs (repeatable)."))
@click.option(
    "--vendor",
    type=click.Choice(VENDORS),
    multiple=True,
    metavar="VENDOR",
    help=formatted_help(
        N_("Keep only these vendors (repeatable): {choices}.").format(choices=", ".join(VENDORS))
    ),
)
@click.option("--form-factor", type=click.Choice(FORM_FACTORS), multiple=True)
@click.option("--min-memory", type=FloatRange(min=0), default=None, metavar="GIB")
@click.option(
    "--max-gpus",
    type=IntRange(min=1),
    default=None,
    help=N_("Largest GPU count to consider (powers of two; default 1 for the demo, else 8)."),
)
@click.option(
    "--gpus", "exact_gpus", type=IntRange(min=1), default=None, help=N_("Exactly this many GPUs.")
)
@declared_option(WORK_OPTIONS["global_batch"])
@click.option(
    "--tokens",
    type=FloatRange(min=1),
    default=1e8,
    show_default=True,
    help=N_("Training tokens, for time and cost."),
)
@click.option(
    "--rps",
    type=FloatRange(min=0, min_open=True),
    default=None,
    help=N_("Inference: requests per second to serve."),
)
@click.option(
    "--prompt",
    type=IntRange(min=1),
    default=PROMPT_TOKENS,
    show_default=True,
    help=N_("Inference: prompt tokens per request."),
)
@click.option(
    "--output",
    "output_tokens",
    type=IntRange(min=1),
    default=OUTPUT_TOKENS,
    show_default=True,
    help=N_("Inference: output tokens per request."),
)
@click.option(
    "--max-tpot-ms",
    type=FloatRange(min=0, min_open=True),
    default=None,
    help=N_("Inference: latency target per output token."),
)
@click.option(
    "--objective",
    type=click.Choice(["time", "cost", "cost-per-token"]),
    default=None,
    help=N_("Rank by time, total cost, or cost per token."),
)
@click.option("--budget", type=FloatRange(min=0), default=None, help=N_("USD limit."))
@rent_option
@click.option(
    "--stack-ok",
    is_flag=True,
    help=N_(
        "Rank every software stack by speed alone (by default, for Hugging Face-family "
        "frameworks, non-CUDA GPUs rank after CUDA ones)."
    ),
)
@click.option("--top", type=IntRange(min=1), default=10, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document (all rows)."))
@click.option(
    "--emit",
    type=click.Choice(["slurm", "k8s", "kubeflow"]),
    default=None,
    help=N_(
        "Print the chosen layout as a job instead of the table: an sbatch script (slurm), a "
        "Kubernetes Indexed Job (k8s) or a Kubeflow PyTorchJob (kubeflow)."
    ),
)
@click.pass_context
def plan_cmd(
    ctx: click.Context,
    /,
    model: str,
    scenario: str | None,
    gpu_names: tuple[str, ...],
    vendor: tuple[str, ...],
    form_factor: tuple[str, ...],
    min_memory: float | None,
    max_gpus: int | None,
    exact_gpus: int | None,
    global_batch: int | None,
    tokens: float,
    rps: float | None,
    prompt: int,
    output_tokens: int,
    max_tpot_ms: float | None,
    objective: str | None,
    budget: float | None,
    rent: float | None,
    stack_ok: bool,
    top: int,
    catalog_file: str | None,
    as_json: bool,
    emit: str | None,
    **opts: Any,
) -> None:
    """``suanli plan``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.plan import PlanRequest, RenderingPlanAnswer, plan

    demo = (
        ctx.get_parameter_source("max_gpus") == click.core.ParameterSource.DEFAULT
        and ctx.get_parameter_source("task") == click.core.ParameterSource.DEFAULT
        and scenario is None
    )
    default = click.core.ParameterSource.DEFAULT
    if max_gpus is None and demo:
        max_gpus = 1
    answer = plan(
        PlanRequest(
            model=model,
            work=work_request(opts),
            task=opts["task"] if ctx.get_parameter_source("task") != default else None,
            quant=opts["quant"] if ctx.get_parameter_source("quant") != default else None,
            scenario=scenario,
            gpus=gpu_names,
            vendors=vendor,
            form_factors=form_factor,
            min_memory_gib=min_memory,
            max_gpus=max_gpus,
            exact_gpus=exact_gpus,
            global_batch=global_batch,
            tokens=tokens,
            rps=rps,
            prompt=prompt,
            output=output_tokens,
            max_tpot_ms=max_tpot_ms,
            objective=objective,
            budget=budget,
            rent=rent,
            stack_ok=stack_ok,
            catalog_file=catalog_file,
        )
    )
    if emit is not None:
        from suanli.views.emit import emit as emit_job

        if isinstance(answer, RenderingPlanAnswer):
            raise ValueError(N_("--emit needs a training plan; the rendering scenario has none"))
        click.echo(emit_job(answer, emit, opts["framework"]), nl=False)
        return
    if as_json:
        print_json(answer.to_json())
        return
    if isinstance(answer, RenderingPlanAnswer):
        _render_rendering(answer, top)
    else:
        _render_plan(answer, top)


def _render_rendering(doc: RenderingPlanAnswer, top: int) -> None:
    def engines(value: int | None) -> str:
        return "-" if value is None else str(value)

    ranked = [r for r in doc.rows if r.fits][:top]
    print_table(
        _("rendering and video: ray tracing, memory and media engines"),
        [
            _("gpu"),
            _("GiB"),
            _("RT units"),
            _("encoders"),
            _("decoders"),
            _("AV1"),
            _("stack"),
            _("lacks"),
        ],
        [
            [
                r.gpu,
                f"{r.memory_bytes / GiB:,.0f}",
                engines(r.rt_cores),
                engines(r.nvenc_engines),
                engines(r.nvdec_engines),
                {True: _("yes"), False: _("no"), None: "-"}[r.av1_encode],
                r.software_stack.split(":", 1)[0],
                reason_text(r.reason) or "-",
            ]
            for r in ranked
        ],
        caption=sentence(doc.reasoning),
    )
    cpus = [r.gpu for r in doc.rows if not r.fits]
    if cpus:
        click.echo(_("not ranked (CPUs, no GPU rendering): {cpus}").format(cpus=", ".join(cpus)))


#: The objectives' words, for the catalog (the answer's ``objective`` is shown translated).
OBJECTIVE_WORDS = (N_("time"), N_("cost"), N_("cost-per-token"))

#: Titles of the groups of a personal fine-tune's plan (answers.plan_policy.plan_groups).
GROUP_TITLES = {
    "buy-or-rent": N_("cards to buy or rent by the hour (consumer, workstation)"),
    "datacenter": N_("datacenter cards"),
}


def _row_cells(doc: PlanAnswer, r: Any) -> list[str]:
    lay = r.layout
    if doc.inference:
        return [
            r.gpu,
            str(lay.gpus) if lay else "-",
            str(lay.tp) if lay else "-",
            lay.weight_format if lay else "-",
            str(lay.batch) if lay else "-",
            f"{lay.tpot_s * 1e3:,.1f} ms" if lay else "-",
            f"{lay.tokens_per_s:,.0f}" if lay else "-",
            f"${lay.usd_per_million_tokens:,.3f}" if lay and lay.usd_per_million_tokens else "-",
            reason_text(r.reason) or _("best"),
        ]
    return [
        r.gpu,
        _layout_cell(lay) if lay else "-",
        _short(lay.tokens_per_s) if lay else "-",
        f"{lay.mfu:.0%}" if lay else "-",
        _fmt_time(lay.time_s if lay else None),
        _money(lay.cost_usd if lay else None),
        reason_text(r.reason).replace(" than ", " vs ") or _("best"),
    ]


#: The figures whose band is shown under the table (the table's columns): training, serving.
PLAN_FIGURES = {
    False: ("tokens_per_s", "time_to_train_s", "cost_usd"),
    True: ("tokens_per_s", "tpot_s", "usd_per_million_tokens"),
}

#: The answer's ranking reasons that a view translates (plan.search.rank writes them).
REASON_WORDS = (N_("no price known"), N_("ranked after CUDA"), N_("ranked by speed"))


def reason_text(reason: str) -> str:
    """A row's reason (English in the JSON) in the current language (the ranking reasons are
    catalog templates: ``{ratio}x slower``, ``ranked after CUDA``...)."""
    return sentence(reason)


def _layout_cell(lay: Any) -> str:
    """``1 GPU b2``, ``8 GPUs t2p1z1 b4 recompute:full`` (the options are in --json)."""
    gpus = (
        _("1 GPU")
        if lay.gpus == 1
        else _("{n} GPUs").format(n=lay.gpus) + f" t{lay.tp}p{lay.pp}z{lay.zero}"
    )
    recompute = "" if lay.recompute == "none" else f" recompute:{lay.recompute}"
    return f"{gpus} b{lay.batch}{recompute}"


def _render_plan(doc: PlanAnswer, top: int) -> None:
    columns = (
        [
            _("gpu"),
            _("GPUs"),
            "tp",
            _("weights"),
            _("batch"),
            "TPOT",
            _("tokens/s"),
            _("$/M tokens"),
            _("why"),
        ]
        if doc.inference
        else [_("gpu"), _("layout"), _("tok/s"), "MFU", _("time"), _("cost"), _("why")]
    )
    if doc.exact_gpus is not None:
        head = _("{model} {task}: best layout per GPU on exactly {n} GPUs").format(
            model=doc.model, task=doc.task, n=doc.exact_gpus
        )
    else:
        head = (
            _("{model} {task}: best layout per GPU (up to 1 GPU)")
            if doc.max_gpus == 1
            else _("{model} {task}: best layout per GPU (up to {n} GPUs)")
        ).format(model=doc.model, task=doc.task, n=doc.max_gpus)
    from suanli.answers.plan import TrainPlanRow

    # Only a training plan groups its rows (a personal fine-tune: buy or rent, then datacenter).
    train_rows = [r for r in doc.rows if isinstance(r, TrainPlanRow)]
    grouped = any(r.group for r in train_rows)
    shown: list[str] = []
    tops: list[Any] = []
    if grouped:
        # A personal fine-tune: what one can buy or rent first, datacenter cards after, each
        # table ranked within itself.
        for group, label in GROUP_TITLES.items():
            rows = [r for r in train_rows if r.group == group and r.fits][:top]
            if rows:
                title = _("{head}, {group}, ranked by {objective}").format(
                    head=head, group=_(label), objective=_(doc.objective)
                )
                print_table(title, columns, [_row_cells(doc, r) for r in rows])
                shown += [r.gpu for r in rows]
                tops += [r for r in rows if r.runnable][:1]
    else:
        ranked = doc.rows[:top]
        title = _("{head}, ranked by {objective}").format(head=head, objective=_(doc.objective))
        print_table(title, columns, [_row_cells(doc, r) for r in ranked], no_wrap=[_("gpu")])
        shown = [r.gpu for r in ranked]
        tops = [r for r in ranked if r.runnable][:1]
    # The ranking is by the estimate; the band says where published runs of the best row's
    # regime landed (every row's is in --json).
    for line in row_band_lines(tops, PLAN_FIGURES[doc.inference]):
        print_line(line)
    if doc.reasoning:
        print_line(_("scenario: {reasoning}").format(reasoning=sentence(doc.reasoning)))
    after: dict[str, list[str]] = {}
    for gpu, why in (doc.ranked_after_cuda or {}).items():
        if gpu in shown:
            after.setdefault(why, []).append(gpu)
    for why, gpus in after.items():
        print_line(
            _(
                "ranked after the CUDA cards: {gpus} ({why}; --stack-ok ranks by speed alone)"
            ).format(gpus=", ".join(gpus), why=sentence(why))
        )
    if doc.best_command is not None:
        fastest = doc.objective == "time"
        label = _("fastest") if fastest else _("best")
        winner = next(r for r in doc.rows if r.fits and not r.reason)
        if grouped and getattr(winner, "group", None) == "buy-or-rent":
            label = _("fastest to buy or rent") if fastest else _("best to buy or rent")
        print_command(_("{label}: {gpu} ->").format(label=label, gpu=winner.gpu), doc.best_command)
        if grouped:
            other = next(
                (r for r in train_rows if r.group == "datacenter" and r.fits and not r.reason), None
            )
            if other is not None and other.layout is not None:
                text = (
                    _("fastest datacenter card: {gpu} ({speed} tok/s, {time})")
                    if fastest
                    else _("best datacenter card: {gpu} ({speed} tok/s, {time})")
                )
                print_line(
                    text.format(
                        gpu=other.gpu,
                        speed=_short(other.layout.tokens_per_s),
                        time=_fmt_time(other.layout.time_s),
                    )
                )
        cheap = doc.cheapest
        if cheap is not None and cheap.layout is not None:
            print_line(
                _("cheapest per token: {gpu} (${usd} per million tokens)").format(
                    gpu=cheap.gpu, usd=f"{cheap.layout.usd_per_million_tokens:,.3f}"
                )
            )
    rents = [f"{r.gpu} {priced(r.rent)}" for r in doc.rows if r.gpu in shown and r.rent]
    if rents:
        print_line(_("rent per GPU-hour: {rents}").format(rents=_("; ").join(rents)))
    lost = [r for r in doc.rows if not r.fits]
    if lost:
        print_line(
            _("{n} GPUs cannot run it: ").format(n=len(lost))
            + _("; ").join(f"{r.gpu} ({sentence(r.reason)})" for r in lost[:4])
            + (_("; ") + "..." if len(lost) > 4 else "")
        )
    for note in doc.assumptions:
        print_line(_("assumption: {note}").format(note=sentence(note)))


#: The stages of the remedy chain (plan.fit writes them; English in the JSON).
STAGE_WORDS = (N_("batch"), N_("recompute"), N_("precision"), N_("sharding"), N_("offload"))


@click.command(
    "fit",
    help=N_(
        "Walk the OOM remedy chain until MODEL fits on --gpu (and --gpus N of them).\n\n"
        "Order: micro-batch with accumulation, recomputation, precision (bf16, 8-bit optimizer, "
        "QLoRA), sharding (ZeRO/FSDP, tensor, pipeline), CPU offload. Each step shows memory "
        "saved and speed cost; the final configuration is printed as options to paste."
    ),
)
@click.argument("model")
@workload_options
@click.option("--gpu", "gpu_name", required=True, help=N_("The GPU to fit on."))
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def fit_cmd(
    model: str, gpu_name: str, catalog_file: str | None, as_json: bool, **opts: Any
) -> None:
    """``suanli fit``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.fit import FitRequest, fit

    answer = fit(
        FitRequest(model=model, work=work_request(opts), gpu=gpu_name, catalog_file=catalog_file)
    )
    chain, gpus = answer, answer.gpus
    if as_json:
        print_json(answer.to_json())
        return
    click.echo(
        _("start: {need} GiB needed, {gpu} has {have} GiB").format(
            need=f"{chain.start_bytes / GiB:,.1f}",
            gpu=chain.gpu,
            have=f"{chain.gpu_memory_bytes / GiB:,.0f}",
        )
    )
    if not chain.steps:
        click.echo(_("it already fits; nothing to change"))
        return
    rows = [
        [
            str(i),
            _(s.stage),
            sentence(s.change),
            f"{s.memory_bytes / GiB:,.1f}",
            f"-{s.saved_bytes / GiB:,.1f}",
            f"{s.speed_ratio:.2f}x",
            _("yes") if s.fits else _("no"),
        ]
        for i, s in enumerate(chain.steps, start=1)
    ]
    print_table(
        _("remedy chain for {model} on {gpus} x {gpu}").format(
            model=model, gpus=gpus, gpu=chain.gpu
        ),
        ["#", _("stage"), _("change"), _("GiB"), _("saved"), _("speed"), _("fits")],
        rows,
        right_align=[_("GiB"), _("saved"), _("speed")],
    )
    if chain.fits:
        command = f"suanli mem {model} --gpu {chain.gpu} {chain.final_options}"
        click.echo(_("fits with: {command}").format(command=command))
        if chain.framework_settings:
            click.echo(_("in {framework}:").format(framework=chain.framework))
            for setting in chain.framework_settings:
                click.echo(f"  {setting}")
    else:
        click.echo(
            _(
                "does not fit even at the end of the chain: more GPUs (--gpus), a smaller "
                "model or a GPU with more memory"
            )
        )
