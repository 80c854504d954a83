"""``suanli capacity MODEL --rate R ...``: simulate serving, or size a deployment for SLOs.

With ``--gpu``: simulate ``--replicas`` replicas of ``--tp`` GPUs serving the arrivals and print
throughput, latency percentiles, utilisation, KV usage, queue length over time and cost.
Without ``--gpu``: for every catalog GPU, the fewest GPUs (replicas x TP within a node) that hold
``--rate`` within ``--slo-ttft`` and ``--slo-tpot`` (p95), ranked by cost per hour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import click

from suanli.answers.options import WORK_OPTIONS
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.cli.options import DeclaredOption, declared_option, given_options, revision_option
from suanli.cli.prices import priced as price_with_source
from suanli.cli.render import count_column, print_json, print_line, print_table
from suanli.cli.types import FloatRange, IntRange
from suanli.i18n import N_, _, sentence
from suanli.limits import MAX_SIMULATED_REQUESTS

if TYPE_CHECKING:
    from suanli.answers.capacity_result import (
        CapacityPlan,
        CapacitySimulation,
        CapacityWorkload,
        ServingStats,
    )

#: From this many simulated requests on, a progress bar is drawn (on a terminal).
PROGRESS_FROM = 200_000
SPARK = "▁▂▃▄▅▆▇█"


def _ms(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _money(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"${value:,.{digits}f}"


def sparkline(values: list[float], width: int = 60) -> str:
    """Values as a one-line bar chart (at most ``width`` characters, maxima kept)."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [
            max(values[int(i * step) : max(int((i + 1) * step), int(i * step) + 1)])
            for i in range(width)
        ]
    top = max(values)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(
        SPARK[min(int(v / top * (len(SPARK) - 1) + 0.5), len(SPARK) - 1)] for v in values
    )


@contextmanager
def _progress(show: bool, least: int = 0) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on stderr (transient, only on a terminal), as a callback; drawn from
    the first update whose total reaches ``least``."""
    if not show:
        yield None
        return
    with ExitStack() as stack:
        drawn: list[Any] = []

        def update(description: str, done: int, total: int) -> None:
            if total < least:
                return
            if not drawn:
                from rich.console import Console
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

                console = Console(stderr=True)
                bar = Progress(
                    TextColumn("{task.description}", style="progress.description", markup=False),
                    BarColumn(),
                    # not TextColumn("{task.total:,}"): a task without a total (None) made
                    # the bar raise TypeError when drawn, which only happens on a terminal
                    count_column(),
                    TimeElapsedColumn(),
                    console=console,
                    transient=True,
                    disable=not console.is_terminal,
                )
                stack.enter_context(bar)
                drawn.extend([bar, bar.add_task(description, total=total, completed=done)])
            drawn[0].update(drawn[1], description=description, completed=done, total=total)

        yield update


def serving_engines() -> dict[str, str]:
    """The catalog's serving engines, for the ``--framework`` help (read when it is shown)."""
    from suanli.catalog.frameworks import frameworks

    return {"engines": ", ".join(f.id for f in frameworks() if f.kind == "serve")}


@click.command(
    "capacity",
    help=N_(
        "How many GPUs of which kind serve --rate requests/s within the SLOs, and at what cost.\n"
        "\n"
        "Examples: suanli capacity llama-3.1-8b --rate 20 --slo-ttft 1 --slo-tpot 0.05; "
        "suanli capacity llama-3.1-8b --gpu h100 --rate 20 --policy static; "
        "suanli capacity llama-3.1-8b --gpu h100 --concurrency 64 --requests 640; "
        "suanli capacity llama-3.1-70b --gpu h100 --tp 4 --rate 5 --arrivals bursty --json."
    ),
)
@click.argument("model")
@revision_option
@click.option(
    "--rate",
    type=FloatRange(min=0, min_open=True, allow_inf=True),
    default=None,
    help=N_("Requests per second arriving (inf: all at once, an offline benchmark)."),
)
@click.option(
    "--concurrency",
    type=IntRange(min=1, max=MAX_SIMULATED_REQUESTS),
    default=None,
    metavar="CLIENTS",
    help=N_(
        "Closed loop instead of --rate: this many clients start together and each sends its "
        "next request when its last one ends (vLLM benchmark_serving --max-concurrency, "
        "genai-perf --concurrency); needs --gpu."
    ),
)
@click.option(
    "--arrivals",
    type=click.Choice(["poisson", "bursty", "even", "trace"]),
    default="poisson",
    show_default=True,
    help=N_(
        "Poisson, bursty (two-state modulated Poisson), even (one every 1/--rate seconds) or "
        "a --trace file."
    ),
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False),
    default=None,
    help=N_("CSV with arrival_s, prompt_tokens, output_tokens (header row)."),
)
@click.option(
    "--burst-ratio",
    type=FloatRange(min=1),
    default=4.0,
    show_default=True,
    help=N_("Bursty: high-state rate over low-state rate (mean stays --rate)."),
)
@click.option(
    "--burst-period",
    type=FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help=N_("Bursty: mean time in each state."),
)
@click.option(
    "--prompt",
    type=IntRange(min=1),
    default=PROMPT_TOKENS,
    show_default=True,
    help=N_("Prompt tokens (the mean with --prompt-dist)."),
)
@click.option(
    "--output",
    "output_tokens",
    type=IntRange(min=1),
    default=OUTPUT_TOKENS,
    show_default=True,
    help=N_("Output tokens (the mean with --output-dist)."),
)
@click.option(
    "--prompt-dist",
    type=click.Choice(["fixed", "uniform", "lognormal"]),
    default="fixed",
    show_default=True,
)
@click.option(
    "--output-dist",
    type=click.Choice(["fixed", "uniform", "lognormal"]),
    default="fixed",
    show_default=True,
)
@click.option(
    "--spread",
    type=FloatRange(0, 3),
    default=0.5,
    show_default=True,
    help=N_("uniform: relative half-width; lognormal: sigma of the log."),
)
@click.option(
    "--policy",
    type=click.Choice(["static", "continuous", "chunked", "prefill-first"]),
    default="continuous",
    show_default=True,
    help=N_(
        "Batching: static, continuous (iteration-level), chunked prefill, or prefill-first "
        "(vLLM v0: prefill-only iterations pause the decodes)."
    ),
)
@click.option(
    "--max-batch",
    type=IntRange(min=1),
    default=256,
    show_default=True,
    help=N_("Sequences in flight per replica (vLLM max_num_seqs; the static batch)."),
)
@click.option(
    "--max-batched-tokens",
    type=IntRange(min=1),
    default=None,
    help=N_(
        "Token budget per iteration (default 8192 continuous and prefill-first, 2048 chunked)."
    ),
)
@click.option(
    "--batch-timeout",
    type=FloatRange(min=0),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help=N_("Static: longest wait for a full batch."),
)
@click.option(
    "--kv-policy",
    type=click.Choice(["preempt", "reserve"]),
    default="preempt",
    show_default=True,
    help=N_("preempt (vLLM: allocate on demand, recompute when full) or reserve (no eviction)."),
)
@declared_option(WORK_OPTIONS["kernels"])
@click.option(
    "--gpu-memory-utilization",
    type=FloatRange(0, 1, min_open=True),
    default=0.9,
    show_default=True,
    help=N_("The engine's share of GPU memory."),
)
@click.option(
    "--step-overhead-ms",
    type=FloatRange(min=0),
    default=0.0,
    show_default=True,
    help=N_("Fixed time per iteration (scheduler, sampling); 0 is the pure roofline."),
)
@click.option("--gpu", "gpu_name", default=None, help=N_("Simulate on this GPU; omit to plan."))
@click.option("--tp", type=click.Choice(["1", "2", "4", "8"]), default="1", show_default=True)
@click.option("--replicas", type=IntRange(min=1), default=1, show_default=True)
@click.option(
    "--dispatch",
    type=click.Choice(["round-robin", "least-loaded"]),
    default="round-robin",
    show_default=True,
)
@click.option(
    "--slo-ttft",
    type=FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help=N_("Target p95 time to first token."),
)
@click.option(
    "--slo-tpot",
    type=FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help=N_("Target p95 time per output token."),
)
@click.option(
    "--max-gpus",
    type=IntRange(min=1),
    default=64,
    show_default=True,
    help=N_("Plan: most GPUs per deployment."),
)
@click.option("--requests", "n_requests", type=IntRange(min=1), default=None)
@click.option("--duration", type=FloatRange(min=0, min_open=True), default=None, metavar="SECONDS")
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
@click.option("--seed", type=IntRange(), default=0, show_default=True)
@declared_option(WORK_OPTIONS["quant"])
@declared_option(WORK_OPTIONS["kv_dtype"])
@click.option("--top", type=IntRange(min=1), default=12, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option(
    "--framework",
    cls=DeclaredOption,
    default=None,
    help_values=serving_engines,
    help=N_(
        "Serving engine whose scheduler and memory defaults fill the options you do not set: "
        "{engines} (suanli frameworks NAME lists them)."
    ),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def capacity_cmd(
    model: str,
    rate: float | None,
    concurrency: int | None,
    arrivals: str,
    trace_file: str | None,
    burst_ratio: float,
    burst_period: float,
    prompt: int,
    output_tokens: int,
    prompt_dist: str,
    output_dist: str,
    spread: float,
    policy: str,
    max_batch: int,
    max_batched_tokens: int | None,
    batch_timeout: float,
    kv_policy: str,
    kernels: str,
    gpu_memory_utilization: float,
    step_overhead_ms: float,
    gpu_name: str | None,
    tp: str,
    replicas: int,
    dispatch: str,
    slo_ttft: float | None,
    slo_tpot: float | None,
    max_gpus: int,
    n_requests: int | None,
    duration: float | None,
    price: float | None,
    seed: int,
    quant: str,
    kv_dtype: str,
    top: int,
    catalog_file: str | None,
    framework: str | None,
    as_json: bool,
) -> None:
    """``suanli capacity``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.capacity import CapacityRequest, capacity
    from suanli.answers.capacity_result import CapacitySimulation

    given = given_options(locals())
    explicit = None if given is None else tuple(_FIELD_OF.get(n, n) for n in given)
    req = CapacityRequest(
        framework=framework,
        explicit=explicit,
        model=model,
        rate=rate,
        concurrency=concurrency,
        arrivals=arrivals,
        trace_file=trace_file,
        burst_ratio=burst_ratio,
        burst_period=burst_period,
        prompt=prompt,
        output=output_tokens,
        prompt_dist=prompt_dist,
        output_dist=output_dist,
        spread=spread,
        policy=policy,
        max_batch=max_batch,
        max_batched_tokens=max_batched_tokens,
        batch_timeout=batch_timeout,
        kv_policy=kv_policy,
        kernels=kernels,
        gpu_memory_utilization=gpu_memory_utilization,
        step_overhead_ms=step_overhead_ms,
        gpu=gpu_name,
        tp=int(tp),
        replicas=replicas,
        dispatch=dispatch,
        slo_ttft=slo_ttft,
        slo_tpot=slo_tpot,
        max_gpus=max_gpus,
        requests=n_requests,
        duration=duration,
        price=price,
        seed=seed,
        quant=quant,
        kv_dtype=kv_dtype,
        catalog_file=catalog_file,
    )
    # Simulations draw a bar only when long; the catalog search always (on a terminal).
    least = PROGRESS_FROM if req.mode == "simulate" else 0
    with _progress(not as_json, least) as bar:
        answer = capacity(req, progress=bar)
    if as_json:
        print_json(answer.to_json())
    elif isinstance(answer, CapacitySimulation):
        _render_simulation(answer)
    else:
        _render_plan(answer, top)


#: Command-line parameter names that differ from the request's fields.
_FIELD_OF = {"gpu_name": "gpu", "output_tokens": "output", "n_requests": "requests"}


def _rate_text(w: CapacityWorkload) -> str:
    if w.concurrency is not None:
        return _("{clients} clients in a closed loop, {requests} requests").format(
            clients=f"{w.concurrency:,}", requests=f"{w.requests:,}"
        )
    if w.arrivals == "trace":
        return _("trace of {requests} requests").format(requests=f"{w.requests:,}")
    if w.all_at_once:
        return _("{requests} requests at once").format(requests=f"{w.requests:,}")
    return _("{rate} requests/s ({arrivals})").format(
        rate=f"{w.rate_requests_per_s:g}", arrivals=w.arrivals
    )


def _cost_text(s: ServingStats) -> str:
    if s.usd_per_hour is None:
        return _("no price known (--rent USD per GPU-hour)")
    return _("{per_hour} per hour, {per_million} per million output tokens").format(
        per_hour=_money(s.usd_per_hour), per_million=_money(s.usd_per_million_tokens, 3)
    )


def _render_simulation(a: CapacitySimulation) -> None:
    w, s = a.workload, a.stats
    title = (
        _("{model} on {replicas} x tp{tp} {gpu} ({gpus} GPUs), {policy} batching, {rate}")
        if a.gpus > 1
        else _("{model} on {replicas} x tp{tp} {gpu} ({gpus} GPU), {policy} batching, {rate}")
    ).format(
        model=w.model,
        replicas=a.replicas,
        tp=a.tp,
        gpu=a.gpu,
        gpus=a.gpus,
        policy=w.policy,
        rate=_rate_text(w),
    )
    ttft = (s.ttft_p50_s, s.ttft_p95_s, s.ttft_p99_s)
    tpot = (s.tpot_p50_s, s.tpot_p95_s, s.tpot_p99_s)
    e2e = (s.e2e_p50_s, s.e2e_p95_s, s.e2e_p99_s)
    rows = [
        [
            _("throughput"),
            _("{requests} requests/s, {tokens} output tokens/s").format(
                requests=f"{s.requests_per_s:,.2f}", tokens=f"{s.tokens_per_s:,.0f}"
            ),
        ],
        [_("TTFT p50 / p95 / p99"), " / ".join(_ms(v) for v in ttft)],
        [_("TPOT p50 / p95 / p99"), " / ".join(_ms(v) for v in tpot)],
        [_("E2E p50 / p95 / p99"), " / ".join(_ms(v) for v in e2e)],
        [_("queue wait (mean)"), _ms(s.queue_wait_mean_s)],
        [_("GPU busy"), f"{s.gpu_utilization:.0%}"],
        [
            _("KV cache"),
            _("mean {mean}, max {max} of {tokens} tokens per replica").format(
                mean=f"{s.kv_usage_mean:.0%}",
                max=f"{s.kv_usage_max:.0%}",
                tokens=f"{a.kv_tokens_per_replica:,}",
            ),
        ],
        [_("running per replica (max)"), f"{s.max_running_per_replica:,}"],
        [_("preemptions"), f"{s.preemptions:,}"],
        [_("cost"), _cost_text(s)],
        [_("rent"), price_with_source(a.rent)],
    ]
    if a.meets_slo is not None:
        rows.append([_("SLO (p95)"), _("met") if a.meets_slo else _("missed")])
    metric = _("metric")
    print_table(title, [metric, _("value")], rows, no_wrap=[metric])
    if a.overload is not None:
        print_line(sentence(a.overload), fg="red")
    series = list(a.queue_series.waiting)
    if series and max(series) > 0:
        click.echo(
            _("queue over time (max {waiting} waiting): {sparkline}").format(
                waiting=f"{max(series):,.0f}",
                # on a line of its own: caption and 60 bars do not fit 80 columns together
                sparkline="\n  " + sparkline(series),
            )
        )
    else:
        click.echo(_("queue over time: empty at every sample"))
    for note in a.assumptions:
        print_line(_("assumption: {note}").format(note=sentence(note)))


def _render_plan(a: CapacityPlan, top: int) -> None:
    w, rows = a.workload, a.rows
    slo = ", ".join(
        f"{name} p95 <= {_ms(value)}"
        for name, value in (("TTFT", w.slo_ttft_s), ("TPOT", w.slo_tpot_s))
        if value is not None
    )
    title = _(
        "{model}: fewest GPUs for {rate} with {slo}, {policy} batching, ranked by cost"
    ).format(model=w.model, rate=_rate_text(w), slo=slo, policy=w.policy)
    fitting = [r for r in rows if r.fits and r.result is not None]
    lowest = next(
        (r.result.stats.usd_per_hour for r in fitting if r.result and r.result.stats.usd_per_hour),
        None,
    )
    table = []
    for r in rows[:top]:
        if r.result is None:
            table.append([r.gpu, "-", "-", "-", "-", "-", "-", sentence(r.reason)])
            continue
        s = r.result.stats
        if s.usd_per_hour is None:
            why = _("no price")
        elif lowest and s.usd_per_hour > lowest:
            why = _("{ratio}x cost").format(ratio=f"{s.usd_per_hour / lowest:.1f}")
        else:
            why = _("cheapest")
        table.append(
            [
                r.gpu,
                f"{r.gpus} = {r.replicas}x{r.tp}",
                _ms(s.ttft_p95_s),
                _ms(s.tpot_p95_s),
                f"{s.tokens_per_s:,.0f}",
                _money(s.usd_per_hour),
                _money(s.usd_per_million_tokens, 3),
                why,
            ]
        )
    columns = [
        _("gpu"),
        _("GPUs = repl x tp"),
        _("TTFT p95"),
        _("TPOT p95"),
        _("tok/s"),
        "$/h",
        _("$/M tok"),
        _("why"),
    ]
    print_table(title, columns, table, right_align=columns[2:7], no_wrap=columns[:7])
    rents = [
        f"{r.gpu} {price_with_source(r.rent)}"
        for r in rows[:top]
        if r.result is not None and r.rent
    ]
    if rents:
        print_line(_("rent per GPU-hour: {rents}").format(rents=_("; ").join(rents)))
    priced = [
        r for r in fitting if r.result is not None and r.result.stats.usd_per_hour is not None
    ]
    if priced:
        best = priced[0]
        assert best.result is not None
        if w.all_at_once:
            rate = " --rate inf"
        elif w.rate_requests_per_s is not None:
            rate = f" --rate {w.rate_requests_per_s:g}"
        else:
            rate = ""
        command = (
            f"suanli capacity {w.model} --gpu {best.gpu} --tp {best.tp} "
            f"--replicas {best.replicas}{rate}"
        )
        click.echo(
            _(
                "cheapest: {replicas} x {gpu} (tp {tp}, {gpus} GPUs) at {price}/hour -> {command}"
            ).format(
                replicas=best.replicas,
                gpu=best.gpu,
                tp=best.tp,
                gpus=best.gpus,
                price=_money(best.result.stats.usd_per_hour),
                command=command,
            )
        )
    lost = [r for r in rows if not r.fits]
    if lost:
        listed = [f"{r.gpu} ({sentence(r.reason)})" for r in lost[:3]]
        if len(lost) > 3:
            listed.append("...")
        click.echo(
            _("{count} GPUs without an answer: {gpus}").format(
                count=len(lost), gpus=_("; ").join(listed)
            )
        )
