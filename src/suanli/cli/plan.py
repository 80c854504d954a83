"""``suanli plan`` (ranked GPUs and layouts) and ``suanli fit`` (the OOM remedy chain)."""

from __future__ import annotations

from typing import Any

import click

from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.gpu import FORM_FACTORS, VENDORS
from suanli.catalog.query import filter_gpus
from suanli.cli.options import shape_options, work_from_options, workload_options
from suanli.cli.render import print_json, print_table
from suanli.estimate.workload import InferWork, TrainWork
from suanli.models.resolve import load_model
from suanli.plan.scenarios import SCENARIOS
from suanli.units import GiB

DEMO_MODEL = "llama-3.1-8b"


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


def _candidates(
    gpus: list[GPU],
    names: tuple[str, ...],
    vendors: tuple[str, ...],
    forms: tuple[str, ...],
    min_memory: float | None,
) -> list[GPU]:
    if names:
        return [find_gpu(n, gpus) for n in names]
    return filter_gpus(
        gpus,
        vendors=vendors,
        form_factors=forms,
        min_memory_bytes=int(min_memory * GiB) if min_memory else None,
    )


def _stack(gpu: GPU) -> str:
    note = str(gpu.get("software_note") or "")
    return gpu.software_stack + (f": {note}" if note else "")


def _train_plan(
    spec: Any,
    work: TrainWork,
    gpus: list[GPU],
    max_gpus: int,
    exact: int | None,
    global_batch: int | None,
    tokens: float,
    objective: str,
    budget: float | None,
) -> list[dict[str, Any]]:
    from suanli.plan.search import SearchSpace, rank, search_train

    space = SearchSpace(max_gpus=max_gpus, global_batch=global_batch, exact_gpus=exact)
    results = [search_train(spec, work, gpu, space, objective) for gpu in gpus]
    rows = rank(results, objective, tokens, budget)
    by_id = {g.id: g for g in gpus}
    for row in rows:
        row["software_stack"] = _stack(by_id[row["gpu"]])
    return rows


def _serve_plan(
    spec: Any,
    work: InferWork,
    gpus: list[GPU],
    max_gpus: int,
    rps: float | None,
    output: int,
    objective: str,
    max_tpot_ms: float | None,
    fixed_format: bool,
) -> list[dict[str, Any]]:
    from suanli.plan.search import SERVE_FORMATS, search_serve

    formats = (work.weight_format,) if fixed_format else SERVE_FORMATS
    rows = []
    for gpu in gpus:
        best, evaluated, reason = search_serve(
            spec,
            gpu,
            context=work.context,
            output=output,
            max_gpus=max_gpus,
            rps=rps,
            objective=objective,
            max_tpot_s=max_tpot_ms / 1e3 if max_tpot_ms else None,
            formats=formats,
        )
        row: dict[str, Any] = {"gpu": gpu.id, "evaluated": evaluated, "software_stack": _stack(gpu)}
        if best is None:
            row.update({"fits": False, "reason": reason})
        else:
            per_m = (
                best.usd_per_hour / 3600 / best.tokens_per_s * 1e6 if best.usd_per_hour else None
            )
            row.update(
                {
                    "fits": True,
                    "reason": "",
                    "gpus": best.gpus,
                    "tp": best.tp,
                    "replicas": best.replicas,
                    "weight_format": best.weight_format,
                    "kv_dtype": best.kv_dtype,
                    "batch": best.batch,
                    "memory_bytes": best.memory_bytes,
                    "ttft_s": best.ttft_s,
                    "tpot_s": best.tpot_s,
                    "tokens_per_s": best.tokens_per_s,
                    "requests_per_s": best.requests_per_s,
                    "usd_per_hour": best.usd_per_hour,
                    "usd_per_million_tokens": per_m,
                    "options": best.options(),
                }
            )
        rows.append(row)

    def key(row: dict[str, Any]) -> tuple[int, float]:
        if not row["fits"]:
            return (2, 0.0)
        if objective == "time":
            return (0, row["tpot_s"] * row["gpus"])
        value = row["usd_per_million_tokens"]
        return (0, value) if value is not None else (1, row["gpus"])

    rows.sort(key=key)
    fitting = [r for r in rows if r["fits"] and r.get("usd_per_million_tokens")]
    for row in fitting[1:]:
        ratio = row["usd_per_million_tokens"] / fitting[0]["usd_per_million_tokens"]
        row["reason"] = f"{ratio:.1f}x cost/token"
    for row in rows:
        if row["fits"] and row.get("usd_per_million_tokens") is None:
            row["reason"] = "no price known"
    return rows


def _rendering_rows(gpus: list[GPU]) -> list[dict[str, Any]]:
    rows = []
    for gpu in sorted(gpus, key=lambda g: (-g.memory_bytes, -(g.get("nvenc_engines") or 0))):
        rows.append(
            {
                "gpu": gpu.id,
                "fits": True,
                "memory_bytes": gpu.memory_bytes,
                "nvenc_engines": gpu.get("nvenc_engines"),
                "nvdec_engines": gpu.get("nvdec_engines"),
                "tdp_watts": gpu.get("tdp_watts"),
                "price_usd": gpu.get("price_usd"),
                "software_stack": _stack(gpu),
                "reason": "",
            }
        )
    return rows


@click.command("plan")
@click.argument("model", required=False, default=DEMO_MODEL)
@shape_options
@click.option(
    "--scenario",
    type=click.Choice(sorted(SCENARIOS)),
    default=None,
    help="A documented weighting: sets task, objective and candidate GPUs.",
)
@click.option("--gpu", "gpu_names", multiple=True, help="Only these GPUs (repeatable).")
@click.option("--vendor", type=click.Choice(VENDORS), multiple=True)
@click.option("--form-factor", type=click.Choice(FORM_FACTORS), multiple=True)
@click.option("--min-memory", type=click.FloatRange(min=0), default=None, metavar="GIB")
@click.option(
    "--max-gpus",
    type=click.IntRange(min=1),
    default=None,
    help="Largest GPU count to consider (powers of two; default 1 for the demo, else 8).",
)
@click.option(
    "--gpus", "exact_gpus", type=click.IntRange(min=1), default=None, help="Exactly this many GPUs."
)
@click.option(
    "--global-batch",
    type=click.IntRange(min=1),
    default=None,
    help="Sequences per optimizer step (training).",
)
@click.option(
    "--tokens",
    type=click.FloatRange(min=1),
    default=1e8,
    show_default=True,
    help="Training tokens, for time and cost.",
)
@click.option(
    "--rps",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Inference: requests per second to serve.",
)
@click.option(
    "--output",
    "output_tokens",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Inference: output tokens per request.",
)
@click.option(
    "--max-tpot-ms",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Inference: latency target per output token.",
)
@click.option(
    "--objective",
    type=click.Choice(["time", "cost", "cost-per-token"]),
    default=None,
    help="Rank by time, total cost, or cost per token.",
)
@click.option("--budget", type=click.FloatRange(min=0), default=None, help="USD limit.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (all rows).")
@click.pass_context
def plan_cmd(
    ctx: click.Context,
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
    output_tokens: int,
    max_tpot_ms: float | None,
    objective: str | None,
    budget: float | None,
    top: int,
    catalog_file: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Which GPU, how many, how laid out, how long and how much: ranked, with why others lost.

    With no arguments: a LoRA fine-tune of Llama-3.1-8B on one GPU, 100M tokens, ranked by
    time, with the cheapest choice too. Examples:
    suanli plan llama-3.1-70b --task full --max-gpus 64 --tokens 1e10;
    suanli plan llama-3.1-8b --task infer --rps 50 --context 2048 --objective cost-per-token.
    """
    demo = (
        ctx.get_parameter_source("max_gpus") == click.core.ParameterSource.DEFAULT
        and ctx.get_parameter_source("task") == click.core.ParameterSource.DEFAULT
        and scenario is None
    )
    chosen = SCENARIOS.get(scenario) if scenario else None
    if chosen and ctx.get_parameter_source("task") == click.core.ParameterSource.DEFAULT:
        opts["task"] = chosen.task
    objective = objective or (
        chosen.objective if chosen else ("cost-per-token" if opts["task"] == "infer" else "time")
    )
    if max_gpus is None:
        max_gpus = chosen.max_gpus if chosen else (1 if demo else 8)
    forms = form_factor or (chosen.form_factors if chosen else ())
    catalog = load_catalog(catalog_file)
    gpus = _candidates(catalog, gpu_names, vendor, forms, min_memory)
    if not gpus:
        raise ValueError("no GPU matches the filters; loosen --vendor/--form-factor/--min-memory")
    if scenario == "rendering-video":
        rows = _rendering_rows(gpus)
        doc: dict[str, Any] = {
            "scenario": scenario,
            "reasoning": chosen.reasoning if chosen else "",
            "rows": rows,
        }
        if as_json:
            print_json(doc)
            return
        print_table(
            "rendering and video: memory and media engines",
            ["gpu", "GiB", "NVENC", "NVDEC", "TDP W", "software stack"],
            [
                [
                    r["gpu"],
                    f"{r['memory_bytes'] / GiB:,.0f}",
                    str(r["nvenc_engines"] or "-"),
                    str(r["nvdec_engines"] or "-"),
                    str(r["tdp_watts"] or "-"),
                    r["software_stack"][:50],
                ]
                for r in rows[:top]
            ],
            caption=doc["reasoning"],
        )
        return
    spec = load_model(model).spec
    opts.update(
        {
            "batch": None,
            "global_batch": None,
            "grad_accum": 1,
            "zero": 0,
            "tp": 1,
            "pp": 1,
            "vpp": 1,
            "dp": None,
            "ep": 1,
            "sp": False,
            "gpus": None,
            "offload_optimizer": False,
            "recompute": "none",
            "prefill_chunk": None,
            "gpu_memory_utilization": None,
        }
    )
    work = work_from_options(opts)
    if isinstance(work, InferWork):
        fixed = ctx.get_parameter_source("quant") != click.core.ParameterSource.DEFAULT
        rows = _serve_plan(
            spec, work, gpus, max_gpus, rps, output_tokens, objective, max_tpot_ms, fixed
        )
    else:
        rows = _train_plan(
            spec, work, gpus, max_gpus, exact_gpus, global_batch, tokens, objective, budget
        )
    doc = {
        "model": model,
        "task": opts["task"],
        "objective": objective,
        "max_gpus": max_gpus,
        "scenario": scenario,
        "reasoning": chosen.reasoning if chosen else "",
        "tokens": tokens if not isinstance(work, InferWork) else None,
        "rows": rows,
    }
    if as_json:
        print_json(doc)
        return
    _render_plan(doc, work, top)


def _render_plan(doc: dict[str, Any], work: TrainWork | InferWork, top: int) -> None:
    rows = doc["rows"]
    fitting = [r for r in rows if r["fits"] and not r["reason"]]
    title = (
        f"{doc['model']} {doc['task']}: best layout per GPU (up to {doc['max_gpus']} GPUs), "
        f"ranked by {doc['objective']}"
    )
    if isinstance(work, InferWork):
        table = [
            [
                r["gpu"],
                str(r.get("gpus", "-")),
                str(r.get("tp", "-")),
                r.get("weight_format", "-"),
                str(r.get("batch", "-")),
                f"{r['tpot_s'] * 1e3:,.1f} ms" if r["fits"] else "-",
                f"{r['tokens_per_s']:,.0f}" if r["fits"] else "-",
                f"${r['usd_per_million_tokens']:,.3f}" if r.get("usd_per_million_tokens") else "-",
                r["reason"] or "best",
            ]
            for r in rows[:top]
        ]
        print_table(
            title,
            ["gpu", "GPUs", "tp", "weights", "batch", "TPOT", "tokens/s", "$/M tokens", "why"],
            table,
            no_wrap=["gpu"],
        )
    else:
        table = [
            [
                r["gpu"],
                f"{r['gpus']} t{r['tp']}p{r['pp']}z{r['zero']}" if r["fits"] else "-",
                f"{r['recompute']}/b{r['batch']}" if r["fits"] else "-",
                _short(r["tokens_per_s"]) if r["fits"] else "-",
                f"{r['mfu']:.0%}" if r["fits"] else "-",
                _fmt_time(r.get("time_s")),
                _money(r.get("cost_usd")),
                (r["reason"] or "best").replace(" than ", " vs "),
            ]
            for r in rows[:top]
        ]
        print_table(
            title,
            ["gpu", "GPUs", "recompute", "tok/s", "MFU", "time", "cost", "why"],
            table,
            no_wrap=["gpu"],
        )
    if doc["reasoning"]:
        click.echo(f"scenario: {doc['reasoning']}")
    if fitting:
        best = fitting[0]
        label = "fastest" if doc["objective"] == "time" else "best"
        if isinstance(work, InferWork):
            command = f"suanli perf {doc['model']} {best['options']}"
        else:
            command = (
                f"suanli perf {doc['model']} --task {doc['task']} --seq {work.seq} "
                f"{best['options']}"
            )
        click.echo(f"{label}: {best['gpu']} -> {command}")
        priced = [r for r in fitting if r.get("usd_per_million_tokens")]
        if priced:
            cheapest = min(priced, key=lambda r: r["usd_per_million_tokens"])
            click.echo(
                f"cheapest per token: {cheapest['gpu']} "
                f"(${cheapest['usd_per_million_tokens']:,.3f} per million tokens)"
            )
    lost = [r for r in rows if not r["fits"]]
    if lost:
        click.echo(
            f"{len(lost)} GPUs cannot run it: "
            + "; ".join(f"{r['gpu']} ({r['reason']})" for r in lost[:4])
            + ("; ..." if len(lost) > 4 else "")
        )


@click.command("fit")
@click.argument("model")
@workload_options
@click.option("--gpu", "gpu_name", required=True, help="The GPU to fit on.")
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def fit_cmd(
    model: str, gpu_name: str, catalog_file: str | None, as_json: bool, **opts: Any
) -> None:
    """Walk the OOM remedy chain until MODEL fits on --gpu (and --gpus N of them).

    Order: micro-batch with accumulation, recomputation, precision (bf16, 8-bit optimizer,
    QLoRA), sharding (ZeRO/FSDP, tensor, pipeline), CPU offload. Each step shows memory saved and
    speed cost; the final configuration is printed as options to paste.
    """
    from suanli.hardware import device_for
    from suanli.plan.fit import fit_chain

    gpus = opts["gpus"] or 1
    opts["gpus"] = None  # the chain decides how to use them
    work = work_from_options(opts)
    if isinstance(work, InferWork):
        raise ValueError(
            "suanli fit walks the training chain; for inference use "
            "'suanli mem MODEL --task infer --gpu G' (it reports the best format)"
        )
    spec = load_model(model).spec
    gpu = find_gpu(gpu_name, load_catalog(catalog_file))
    plan = fit_chain(spec, work, gpu, device_for(gpu, work.dtype), gpus)
    doc = {
        "model": model,
        "gpu": gpu.id,
        "gpus": gpus,
        "start_bytes": plan.start_bytes,
        "gpu_memory_bytes": plan.gpu_memory_bytes,
        "fits": plan.fits,
        "steps": [
            {
                "stage": s.stage,
                "change": s.change,
                "memory_bytes": s.memory_bytes,
                "saved_bytes": s.saved_bytes,
                "tokens_per_s": s.tokens_per_s,
                "speed_ratio": s.speed_ratio,
                "fits": s.fits,
                "options": s.options,
            }
            for s in plan.steps
        ],
        "final_options": plan.final_options,
    }
    if as_json:
        print_json(doc)
        return
    click.echo(
        f"start: {plan.start_bytes / GiB:,.1f} GiB needed, {gpu.id} has "
        f"{plan.gpu_memory_bytes / GiB:,.0f} GiB"
    )
    if not plan.steps:
        click.echo("it already fits; nothing to change")
        return
    rows = [
        [
            str(i),
            s.stage,
            s.change,
            f"{s.memory_bytes / GiB:,.1f}",
            f"-{s.saved_bytes / GiB:,.1f}",
            f"{s.speed_ratio:.2f}x",
            "yes" if s.fits else "no",
        ]
        for i, s in enumerate(plan.steps, start=1)
    ]
    print_table(
        f"remedy chain for {model} on {gpus} x {gpu.id}",
        ["#", "stage", "change", "GiB", "saved", "speed", "fits"],
        rows,
        right_align=["GiB", "saved", "speed"],
    )
    if plan.fits:
        click.echo(f"fits with: suanli mem {model} --gpu {gpu.id} {plan.final_options}")
    else:
        click.echo(
            "does not fit even at the end of the chain: more GPUs (--gpus), a smaller "
            "model or a GPU with more memory"
        )
