"""``suanli capacity MODEL --rate R ...``: simulate serving, or size a deployment for SLOs.

With ``--gpu``: simulate ``--replicas`` replicas of ``--tp`` GPUs serving the arrivals and print
throughput, latency percentiles, utilisation, KV usage, queue length over time and cost.
Without ``--gpu``: for every catalog GPU, the fewest GPUs (replicas x TP within a node) that hold
``--rate`` within ``--slo-ttft`` and ``--slo-tpot`` (p95), ranked by cost per hour.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from suanli.cli.render import print_json, print_table
from suanli.estimate.workload import KV_DTYPES

#: Requests simulated when neither --requests nor --duration is given.
DEFAULT_REQUESTS = {"simulate": 2000, "plan": 1000}
#: From this many simulated requests on, a progress bar is drawn (on a terminal).
PROGRESS_FROM = 200_000
SPARK = "▁▂▃▄▅▆▇█"


def _ms(seconds: float | None) -> str:
    if seconds is None or seconds != seconds:
        return "-"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _finite(obj: Any) -> Any:
    """Non-finite floats (an infinite rate, a TPOT with no multi-token request) as null: the
    document stays strict JSON."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


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
def _progress(label: str, show: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on stderr (transient, only on a terminal), as a callback."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(description: str, done: int, total: int) -> None:
            bar.update(task, description=description, completed=done, total=total)

        yield update


@click.command("capacity")
@click.argument("model")
@click.option(
    "--rate",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Requests per second arriving (inf: all at once, an offline benchmark).",
)
@click.option(
    "--arrivals",
    type=click.Choice(["poisson", "bursty", "trace"]),
    default="poisson",
    show_default=True,
    help="Poisson, bursty (two-state modulated Poisson) or a --trace file.",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="CSV with arrival_s, prompt_tokens, output_tokens (header row).",
)
@click.option(
    "--burst-ratio",
    type=click.FloatRange(min=1),
    default=4.0,
    show_default=True,
    help="Bursty: high-state rate over low-state rate (mean stays --rate).",
)
@click.option(
    "--burst-period",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Bursty: mean time in each state.",
)
@click.option(
    "--prompt",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="Prompt tokens (the mean with --prompt-dist).",
)
@click.option(
    "--output",
    "output_tokens",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Output tokens (the mean with --output-dist).",
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
    type=click.FloatRange(0, 3),
    default=0.5,
    show_default=True,
    help="uniform: relative half-width; lognormal: sigma of the log.",
)
@click.option(
    "--policy",
    type=click.Choice(["static", "continuous", "chunked"]),
    default="continuous",
    show_default=True,
    help="Batching: static, continuous (iteration-level) or chunked prefill.",
)
@click.option(
    "--max-batch",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Sequences in flight per replica (vLLM max_num_seqs; the static batch).",
)
@click.option(
    "--max-batched-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Token budget per iteration (default 8192 continuous, 2048 chunked).",
)
@click.option(
    "--batch-timeout",
    type=click.FloatRange(min=0),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="Static: longest wait for a full batch.",
)
@click.option(
    "--kv-policy",
    type=click.Choice(["preempt", "reserve"]),
    default="preempt",
    show_default=True,
    help="preempt (vLLM: allocate on demand, recompute when full) or reserve (no eviction).",
)
@click.option(
    "--gpu-memory-utilization",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.9,
    show_default=True,
    help="The engine's share of GPU memory.",
)
@click.option(
    "--step-overhead-ms",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Fixed time per iteration (scheduler, sampling); 0 is the pure roofline.",
)
@click.option("--gpu", "gpu_name", default=None, help="Simulate on this GPU; omit to plan.")
@click.option("--tp", type=click.Choice(["1", "2", "4", "8"]), default="1", show_default=True)
@click.option("--replicas", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--dispatch",
    type=click.Choice(["round-robin", "least-loaded"]),
    default="round-robin",
    show_default=True,
)
@click.option(
    "--slo-ttft",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Target p95 time to first token.",
)
@click.option(
    "--slo-tpot",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Target p95 time per output token.",
)
@click.option(
    "--max-gpus",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Plan: most GPUs per deployment.",
)
@click.option("--requests", "n_requests", type=click.IntRange(min=1), default=None)
@click.option(
    "--duration", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS"
)
@click.option(
    "--price",
    type=click.FloatRange(min=0),
    default=None,
    help="USD per GPU-hour (default: the catalog's cloud snapshot).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--quant",
    default="bf16",
    show_default=True,
    help="Weight format: bf16, fp8, int8, awq-4bit-g128, ... (catalog/data/quant.toml).",
)
@click.option("--kv-dtype", type=click.Choice(KV_DTYPES), default="bf16", show_default=True)
@click.option("--top", type=click.IntRange(min=1), default=12, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def capacity_cmd(
    model: str,
    rate: float | None,
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
    as_json: bool,
) -> None:
    """How many GPUs of which kind serve --rate requests/s within the SLOs, and at what cost.

    Examples: suanli capacity llama-3.1-8b --rate 20 --slo-ttft 1 --slo-tpot 0.05;
    suanli capacity llama-3.1-8b --gpu h100 --rate 20 --policy static;
    suanli capacity llama-3.1-70b --gpu h100 --tp 4 --rate 5 --arrivals bursty --json.
    """
    from suanli.catalog import find_gpu, load_catalog
    from suanli.estimate import serving
    from suanli.models.resolve import load_model

    if n_requests is not None and duration is not None:
        raise ValueError("give --requests or --duration, not both")
    if arrivals != "trace" and rate is None:
        raise ValueError("give --rate (requests per second), or --arrivals trace --trace FILE")
    if trace_file is not None and arrivals != "trace":
        raise ValueError("--trace needs --arrivals trace")
    mode = "simulate" if gpu_name else "plan"
    if mode == "plan" and slo_ttft is None and slo_tpot is None:
        raise ValueError(
            "give --gpu to simulate one GPU, or --slo-ttft/--slo-tpot to plan over the catalog"
        )
    if n_requests is None and duration is None:
        n_requests = DEFAULT_REQUESTS[mode]
    trace = None
    if trace_file is not None:
        try:
            text = Path(trace_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read trace {trace_file!r} ({exc.strerror})") from None
        trace = serving.parse_trace(text, trace_file)
    config = serving.EngineConfig(
        policy=policy,
        max_batch=max_batch,
        max_batched_tokens=max_batched_tokens,
        batch_timeout_s=batch_timeout,
        kv_policy=kv_policy,
        gpu_memory_utilization=gpu_memory_utilization,
        step_overhead_s=step_overhead_ms / 1e3,
    )
    reqs = serving.make_requests(
        rate=rate if rate is not None else 1.0,
        prompt=serving.Lengths(prompt, prompt_dist, spread),
        output=serving.Lengths(output_tokens, output_dist, spread),
        requests=n_requests,
        duration_s=duration,
        arrivals=arrivals,
        seed=seed,
        trace=trace,
        burst_ratio=burst_ratio,
        burst_period_s=burst_period,
    )
    spec = load_model(model).spec
    clipped = 0
    if trace is None and (prompt_dist != "fixed" or output_dist != "fixed"):
        reqs, clipped = _clip_to_context(reqs, spec.max_position_embeddings)
    catalog = load_catalog(catalog_file)
    workload: dict[str, Any] = {
        "model": model,
        "rate_requests_per_s": rate if arrivals != "trace" else None,
        "all_at_once": rate is not None and math.isinf(rate) and arrivals != "trace",
        "arrivals": arrivals,
        "requests": len(reqs),
        "prompt_tokens_mean": float(reqs.prompt.mean()),
        "output_tokens_mean": float(reqs.output.mean()),
        "policy": policy,
        "kv_policy": kv_policy,
        "weight_format": quant,
        "kv_dtype": kv_dtype,
        "seed": seed,
        "clipped_requests": clipped,
        "slo_ttft_s": slo_ttft,
        "slo_tpot_s": slo_tpot,
    }
    if mode == "simulate":
        assert gpu_name is not None
        gpu = find_gpu(gpu_name, catalog)
        _simulate(spec, gpu, reqs, config, int(tp), replicas, dispatch, price, workload, as_json)
    else:
        _plan(spec, catalog, reqs, config, max_gpus, price, workload, top, as_json)


def _clip_to_context(reqs: Any, context: int) -> tuple[Any, int]:
    """Sampled lengths cut to the model's context (a heavy tail can pass it); how many were."""
    import numpy as np

    from suanli.estimate.serving import Requests

    prompt = np.minimum(reqs.prompt, context - 1)
    output = np.minimum(reqs.output, context - prompt)
    clipped = int(((prompt != reqs.prompt) | (output != reqs.output)).sum())
    return Requests(reqs.arrival_s, prompt, output), clipped


def _simulate(
    spec: Any,
    gpu: Any,
    reqs: Any,
    config: Any,
    tp: int,
    replicas: int,
    dispatch: str,
    price: float | None,
    workload: dict[str, Any],
    as_json: bool,
) -> None:
    from suanli.estimate import serving
    from suanli.hardware import device_for

    device = device_for(gpu, serving._device_dtype(workload["weight_format"]))
    ref = int(reqs.prompt.mean() + reqs.output.mean() / 2)
    cost = serving.replica_cost(
        spec,
        device,
        tp=tp,
        weight_format=workload["weight_format"],
        kv_dtype=workload["kv_dtype"],
        memory_bytes=gpu.memory_bytes,
        config=config,
        reference_context=ref,
    )
    usd = price if price is not None else gpu.get("cloud_usd_per_hour")
    with _progress("simulating", len(reqs) >= PROGRESS_FROM and not as_json) as bar:
        tick = (lambda done, total: bar("simulating", done, total)) if bar else None
        result = serving.simulate(
            cost,
            reqs,
            config,
            replicas=replicas,
            dispatch=dispatch,
            usd_per_gpu_hour=float(usd) if usd is not None else None,
            progress=tick,
        )
    slo_ttft, slo_tpot = workload["slo_ttft_s"], workload["slo_tpot_s"]
    meets = (
        result.meets(slo_ttft, slo_tpot) if (slo_ttft is not None or slo_tpot is not None) else None
    )
    doc: dict[str, Any] = {
        **workload,
        "gpu": gpu.id,
        "dispatch": dispatch,
        "kv_tokens_per_replica": cost.kv_blocks * cost.block_size,
        "meets_slo": meets,
        **result.as_dict(),
        "assumptions": _assumptions(device, config),
    }
    if as_json:
        print_json(_finite(doc))
        return
    title = (
        f"{workload['model']} on {result.replicas} x tp{tp} {gpu.id} "
        f"({result.gpus} GPU{'s' if result.gpus > 1 else ''}), "
        f"{workload['policy']} batching, {_rate_text(workload)}"
    )
    rows = [
        [
            "throughput",
            f"{result.requests_per_s:,.2f} requests/s, {result.tokens_per_s:,.0f} output tokens/s",
        ],
        ["TTFT p50 / p95 / p99", " / ".join(_ms(result.ttft_s[k]) for k in ("p50", "p95", "p99"))],
        ["TPOT p50 / p95 / p99", " / ".join(_ms(result.tpot_s[k]) for k in ("p50", "p95", "p99"))],
        ["E2E p50 / p95 / p99", " / ".join(_ms(result.e2e_s[k]) for k in ("p50", "p95", "p99"))],
        ["queue wait (mean)", _ms(result.queue_wait_mean_s)],
        ["GPU busy", f"{result.gpu_utilization:.0%}"],
        [
            "KV cache",
            f"mean {result.kv_usage_mean:.0%}, max {result.kv_usage_max:.0%} of "
            f"{cost.kv_blocks * cost.block_size:,} tokens per replica",
        ],
        ["running per replica (max)", f"{result.max_running:,}"],
        ["preemptions", f"{result.preemptions:,}"],
        ["cost", _cost_text(result)],
    ]
    if meets is not None:
        rows.append(["SLO (p95)", "met" if meets else "missed"])
    print_table(title, ["metric", "value"], rows, no_wrap=["metric"])
    series = result.queue_series.get("waiting", [])
    if series and max(series) > 0:
        click.echo(f"queue over time (max {max(series):,.0f} waiting): {sparkline(series)}")
    else:
        click.echo("queue over time: empty at every sample")


def _rate_text(workload: dict[str, Any]) -> str:
    rate = workload["rate_requests_per_s"]
    if rate is None:
        return f"trace of {workload['requests']:,} requests"
    if math.isinf(rate):
        return f"{workload['requests']:,} requests at once"
    return f"{rate:g} requests/s ({workload['arrivals']})"


def _cost_text(result: Any) -> str:
    if result.usd_per_hour is None:
        return "no price known (--price USD per GPU-hour)"
    return (
        f"{_money(result.usd_per_hour)} per hour, "
        f"{_money(result.usd_per_million_tokens, 3)} per million output tokens"
    )


def _assumptions(device: Any, config: Any) -> list[str]:
    return [
        f"matmul at {device.matmul_efficiency:.0%} of peak ({device.efficiency_source}), "
        f"memory at {device.memory_efficiency:.0%} of peak bandwidth",
        "iteration time per op class (GEMMs, attention, fused non-matmul ops) from the "
        "roofline, classes added, plus tensor-parallel all-reduces",
        f"KV cache in {config.block_size}-token blocks: {config.gpu_memory_utilization:g} of GPU "
        f"memory minus weights, prefill peak and runtime overhead; kv policy {config.kv_policy}",
        f"step overhead {config.step_overhead_s * 1e3:g} ms per iteration",
    ]


def _plan(
    spec: Any,
    catalog: Any,
    reqs: Any,
    config: Any,
    max_gpus: int,
    price: float | None,
    workload: dict[str, Any],
    top: int,
    as_json: bool,
) -> None:
    from suanli.estimate import serving

    with _progress("planning", not as_json) as bar:
        rows = serving.plan_capacity(
            spec,
            list(catalog),
            reqs,
            slo_ttft_s=workload["slo_ttft_s"],
            slo_tpot_s=workload["slo_tpot_s"],
            config=config,
            weight_format=workload["weight_format"],
            kv_dtype=workload["kv_dtype"],
            max_gpus=max_gpus,
            price=price,
            progress=bar,
        )
    doc = {**workload, "max_gpus": max_gpus, "rows": [r.as_dict() for r in rows]}
    if as_json:
        print_json(_finite(doc))
        return
    slo = ", ".join(
        f"{name} p95 <= {_ms(value)}"
        for name, value in (("TTFT", workload["slo_ttft_s"]), ("TPOT", workload["slo_tpot_s"]))
        if value is not None
    )
    title = (
        f"{workload['model']}: fewest GPUs for {_rate_text(workload)} with {slo}, "
        f"{workload['policy']} batching, ranked by cost"
    )
    fitting = [r for r in rows if r.fits and r.result is not None]
    lowest = next(
        (r.result.usd_per_hour for r in fitting if r.result and r.result.usd_per_hour), None
    )
    table = []
    for r in rows[:top]:
        res = r.result
        if res is None:
            table.append([r.gpu_id, "-", "-", "-", "-", "-", "-", r.reason[:70]])
            continue
        if res.usd_per_hour is None:
            why = "no price"
        elif lowest and res.usd_per_hour > lowest:
            why = f"{res.usd_per_hour / lowest:.1f}x cost"
        else:
            why = "cheapest"
        table.append(
            [
                r.gpu_id,
                f"{r.gpus} = {r.replicas}x{r.tp}",
                _ms(res.ttft_s["p95"]),
                _ms(res.tpot_s["p95"]),
                f"{res.tokens_per_s:,.0f}",
                _money(res.usd_per_hour),
                _money(res.usd_per_million_tokens, 3),
                why,
            ]
        )
    columns = ["gpu", "GPUs = repl x tp", "TTFT p95", "TPOT p95", "tok/s", "$/h", "$/M tok", "why"]
    print_table(title, columns, table, right_align=columns[2:7], no_wrap=columns[:7])
    priced = [r for r in fitting if r.result is not None and r.result.usd_per_hour is not None]
    if priced:
        best = priced[0]
        assert best.result is not None
        rate = workload["rate_requests_per_s"]
        click.echo(
            f"cheapest: {best.replicas} x {best.gpu_id} (tp {best.tp}, {best.gpus} GPUs) at "
            f"{_money(best.result.usd_per_hour)}/hour -> suanli capacity {workload['model']} "
            f"--gpu {best.gpu_id} --tp {best.tp} --replicas {best.replicas}"
            + (f" --rate {rate:g}" if rate is not None else "")
        )
    lost = [r for r in rows if not r.fits]
    if lost:
        click.echo(
            f"{len(lost)} GPUs without an answer: "
            + "; ".join(f"{r.gpu_id} ({r.reason})" for r in lost[:3])
            + ("; ..." if len(lost) > 3 else "")
        )
