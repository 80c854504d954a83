"""How many GPUs serve a request rate within the latency targets, and at what cost? A simulated
deployment, or the fewest GPUs of every catalog type (``suanli capacity``, :func:`capacity`).

With ``gpu``: simulate ``replicas`` replicas of ``tp`` GPUs serving the arrivals
(:class:`CapacitySimulation`: throughput, latency percentiles, utilisation, KV usage, the queue
over time, cost). Without: for every catalog GPU, the fewest GPUs (replicas x TP within a node)
that hold the rate within ``slo_ttft`` and ``slo_tpot`` (p95), ranked by cost per hour
(:class:`CapacityPlan`).

Numbers are in base units (seconds, tokens, USD). A number the run leaves undefined (a TPOT when
no request has more than one output token, the rate of arrivals all at once) is ``None`` in the
answer; ``to_json()`` also writes any other non-finite float (an infinite price) as ``null``, so
the document is always strict JSON, as ``suanli capacity --json`` always wrote it. The
estimator (:mod:`suanli.estimate.serving`, NumPy) is imported when a question is answered, not
with this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

from suanli.answers.capacity_result import (
    CapacityPlan,
    CapacitySimulation,
    CapacityWorkload,
    QueueSeries,
    finite_number,
    plan_row,
    serving_stats,
)
from suanli.answers.model_source import load_model
from suanli.answers.options import declared
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS, request_shape
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.prices import rent_price, rents_by_id
from suanli.i18n import N_, message_of
from suanli.limits import MAX_SIMULATED_REQUESTS
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec
from suanli.safe_files import UnsafeFileError, read_regular_text

#: The largest request trace read (about a million requests of JSON lines).
MAX_TRACE_BYTES = 256 << 20

if TYPE_CHECKING:
    from suanli.estimate.perf import Device
    from suanli.estimate.serving import EngineConfig, Requests

#: Lowest arrival rate simulated (one request every ~17 minutes), requests per second.
MIN_RATE = 1e-3
#: Shortest burst period the arrival generator accepts (finer bursts are a constant rate).
MIN_BURST_PERIOD_S = 1e-3

#: Requests simulated when neither ``requests`` nor ``duration`` is given, per mode.
DEFAULT_REQUESTS = {"simulate": 2000, "plan": 1000}

#: ``progress(description, done, total)``: called as the simulation (``total`` requests) or the
#: search (``total`` GPUs) goes on.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class CapacityRequest:
    """The serving question: a model, the arrivals, the engine, and one GPU or the SLOs to plan
    for (the CLI's options, same defaults)."""

    model: str
    """A preset name, a config.json path or folder, or a hub id (org/name)."""
    rate: float | None = None
    """Requests per second arriving (``math.inf``: all at once, an offline benchmark)."""
    concurrency: int | None = None
    """Closed loop instead of ``rate``: this many clients start together and each sends its
    next request when its last one ends (vLLM ``benchmark_serving --max-concurrency``,
    genai-perf ``--concurrency``)."""
    arrivals: str = "poisson"
    """poisson, bursty (two-state modulated Poisson), even (one every 1/rate seconds) or
    trace."""
    trace_file: str | None = None
    """CSV with arrival_s, prompt_tokens, output_tokens (header row); needs arrivals trace."""
    trace_text: str | None = None
    """The same CSV as text, for front-ends without files (instead of ``trace_file``)."""
    burst_ratio: float = 4.0
    """Bursty: high-state rate over low-state rate (the mean stays ``rate``)."""
    burst_period: float = 10.0
    """Bursty: mean time in each state, seconds."""
    prompt: int = PROMPT_TOKENS
    """Prompt tokens (the mean with ``prompt_dist``)."""
    output: int = OUTPUT_TOKENS
    """Output tokens (the mean with ``output_dist``)."""
    prompt_dist: str = "fixed"
    """fixed, uniform or lognormal."""
    output_dist: str = "fixed"
    spread: float = 0.5
    """uniform: relative half-width; lognormal: sigma of the log."""
    policy: str = "continuous"
    """Batching: static, continuous (iteration-level), chunked prefill or prefill-first (vLLM
    v0: prefill-only iterations pause the decodes)."""
    max_batch: int = 256
    """Sequences in flight per replica (vLLM max_num_seqs; the static batch)."""
    max_batched_tokens: int | None = None
    """Token budget per iteration (default 8192 continuous and prefill-first, 2048 chunked)."""
    batch_timeout: float = 0.5
    """Static: longest wait for a full batch, seconds."""
    kv_policy: str = "preempt"
    """preempt (vLLM: allocate on demand, recompute when full) or reserve (no eviction)."""
    gpu_memory_utilization: float = 0.9
    """The engine's share of GPU memory."""
    step_overhead_ms: float = 0.0
    """Fixed time per iteration (scheduler, sampling), milliseconds; 0 is the pure roofline."""
    gpu: str | None = None
    """Simulate on this GPU; ``None`` plans over the catalog."""
    tp: int = 1
    """Tensor-parallel GPUs per replica (1, 2, 4 or 8)."""
    replicas: int = 1
    dispatch: str = "round-robin"
    """round-robin or least-loaded."""
    slo_ttft: float | None = None
    """Target p95 time to first token, seconds."""
    slo_tpot: float | None = None
    """Target p95 time per output token, seconds."""
    max_gpus: int = 64
    """Plan: most GPUs per deployment."""
    requests: int | None = None
    """Requests to simulate (default 2000 simulating, 1000 planning); or give ``duration``."""
    duration: float | None = None
    """Seconds of arrivals to simulate (instead of ``requests``)."""
    price: float | None = None
    """Rent per GPU-hour in USD, shown as ``given`` (default: the one every view shows for the
    card, :func:`suanli.catalog.prices.rent_price`); ``suanli capacity --rent``."""
    seed: int = 0
    quant: str = declared("quant")
    """Weight format: bf16, fp8, int8, awq-4bit-g128, ... (catalog/data/quant.toml)."""
    kv_dtype: str = declared("kv_dtype")
    kernels: str = declared("kernels")
    """The engine's element-wise kernels: ``fused`` (vLLM, SGLang) or ``compiled`` run each
    residual add inside the next norm; ``eager`` runs them apart."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""
    framework: str | None = None
    """A serving engine (vllm, sglang, tensorrt-llm, llama.cpp, ollama) whose scheduler and
    memory defaults fill the options not set; None: suanli's own defaults."""
    explicit: tuple[str, ...] | None = None
    """The options the user set, which a framework never changes; None: every option whose
    value differs from its default here."""

    @property
    def mode(self) -> str:
        """``simulate`` with a GPU, ``plan`` without."""
        return "simulate" if self.gpu else "plan"


#: What :func:`capacity` answers: a simulation (a GPU was given) or a plan.
CapacityAnswer = CapacitySimulation | CapacityPlan


def clip_to_context(reqs: Requests, context: int) -> tuple[Requests, int]:
    """Sampled lengths cut to the model's context (a heavy tail can pass it); how many were."""
    import numpy as np

    from suanli.estimate.serving import Requests

    prompt = np.minimum(reqs.prompt, context - 1)
    output = np.minimum(reqs.output, context - prompt)
    clipped = int(((prompt != reqs.prompt) | (output != reqs.output)).sum())
    return Requests(arrival_s=reqs.arrival_s, prompt=prompt, output=output), clipped


def with_engine_defaults(req: CapacityRequest) -> CapacityRequest:
    """``req`` with its serving framework's scheduler defaults in every option the user did not
    set (``suanli frameworks NAME`` lists them); a training framework is a ValueError."""
    if req.framework is None:
        return req
    from suanli.catalog.frameworks import frameworks, get_framework

    fw = get_framework(req.framework)
    if fw.kind != "serve":
        raise ValueError(
            N_(
                "--framework {framework} trains models; capacity plans serving: use {engines}"
            ).format(
                framework=fw.id,
                engines=", ".join(f.id for f in frameworks() if f.kind == "serve"),
            )
        )
    if req.explicit is not None:
        given = set(req.explicit)
    else:
        given = {f.name for f in fields(req) if getattr(req, f.name) != f.default}
    changes = {d.option: d.value for d in fw.engine if d.option not in given}
    return replace(req, framework=fw.id, explicit=tuple(sorted(given | set(changes))), **changes)


def engine_config(req: CapacityRequest) -> EngineConfig:
    """The serving engine the request describes (raises ``ValueError`` on bad values)."""
    from suanli.estimate.serving import EngineConfig

    return EngineConfig(
        policy=req.policy,
        max_batch=req.max_batch,
        max_batched_tokens=req.max_batched_tokens,
        batch_timeout_s=req.batch_timeout,
        kv_policy=req.kv_policy,
        gpu_memory_utilization=req.gpu_memory_utilization,
        step_overhead_s=req.step_overhead_ms / 1e3,
        kernels=req.kernels,
    )


def check_request(req: CapacityRequest) -> None:
    """Raise ``ValueError`` (one sentence) on options that do not go together."""
    if req.requests is not None and req.duration is not None:
        raise ValueError(N_("give --requests or --duration, not both"))
    if req.concurrency is not None:
        check_closed_loop(req)
    elif req.arrivals != "trace" and req.rate is None:
        raise ValueError(
            N_(
                "give --rate (requests per second), --concurrency (clients in a closed loop), "
                "or --arrivals trace --trace FILE"
            )
        )
    if req.rate is not None and req.rate < MIN_RATE:
        # a gap of 1/rate seconds between arrivals would overflow the simulator's clock
        raise ValueError(
            N_("--rate {rate:g} is below {least:g} requests/s; give at least {least:g}").format(
                rate=req.rate, least=MIN_RATE
            )
        )
    has_trace = req.trace_file is not None or req.trace_text is not None
    if has_trace and req.arrivals != "trace":
        raise ValueError(N_("--trace needs --arrivals trace"))
    if req.trace_file is not None and req.trace_text is not None:
        raise ValueError(N_("give a trace file or its text, not both"))
    expected = float(req.requests or 0)
    if req.duration is not None and req.rate is not None:
        expected = req.rate * req.duration  # inf with --rate inf: give --requests instead
    if expected > MAX_SIMULATED_REQUESTS:
        raise ValueError(
            N_(
                "that is {expected:,.0f} requests to simulate; the most one run takes is "
                "{most:,}: lower --rate, --duration or --requests"
            ).format(expected=expected, most=MAX_SIMULATED_REQUESTS)
        )
    if req.burst_period is not None and req.burst_period < MIN_BURST_PERIOD_S:
        raise ValueError(
            N_(
                "--burst-period {period:g} s is shorter than a millisecond; give at least {least:g}"
            ).format(period=req.burst_period, least=MIN_BURST_PERIOD_S)
        )
    if req.mode == "plan" and req.slo_ttft is None and req.slo_tpot is None:
        raise ValueError(
            N_("give --gpu to simulate one GPU, or --slo-ttft/--slo-tpot to plan over the catalog")
        )


def check_closed_loop(req: CapacityRequest) -> None:
    """Raise ``ValueError`` (one sentence) where ``--concurrency`` meets an option it replaces."""
    if req.rate is not None:
        raise ValueError(N_("give --rate (open loop) or --concurrency (closed loop), not both"))
    if req.arrivals not in ("poisson", "closed"):
        raise ValueError(
            N_("--concurrency sends each request when one ends; drop --arrivals {arrivals}").format(
                arrivals=req.arrivals
            )
        )
    if req.duration is not None:
        raise ValueError(
            N_("--concurrency runs a number of requests: give --requests, not --duration")
        )
    clients = req.concurrency or 0
    if not 1 <= clients <= MAX_SIMULATED_REQUESTS:
        raise ValueError(
            N_("--concurrency must be in [1, {most:,}], got {value}").format(
                most=MAX_SIMULATED_REQUESTS, value=req.concurrency
            )
        )
    if req.gpu is None:
        raise ValueError(
            N_(
                "--concurrency simulates one deployment: give --gpu (planning over the catalog "
                "takes --rate)"
            )
        )


def load_trace(req: CapacityRequest) -> Requests | None:
    """The request's trace (file or text), parsed; ``None`` without one."""
    from suanli.estimate.serving import parse_trace

    if req.trace_text is not None:
        return parse_trace(req.trace_text, "trace")
    if req.trace_file is None:
        return None
    try:
        text = read_regular_text(req.trace_file, MAX_TRACE_BYTES, errors="replace")
    except UnsafeFileError as exc:
        raise ValueError(message_of(exc)) from None
    except OSError as exc:
        raise ValueError(
            N_("cannot read trace {path!r} ({error})").format(
                path=req.trace_file, error=exc.strerror
            )
        ) from None
    return parse_trace(text, req.trace_file)


def assumptions(device: Device, config: EngineConfig) -> tuple[str, ...]:
    """What a simulation assumes about the GPU and the engine (one sentence each)."""
    return (
        N_(
            "matmul at {matmul:.0%} of peak ({source}), memory at {memory:.0%} of peak bandwidth"
        ).format(
            matmul=device.matmul_efficiency,
            source=device.efficiency_source,
            memory=device.memory_efficiency,
        ),
        N_(
            "iteration time per op class (GEMMs, attention, fused non-matmul ops) from the "
            "roofline, classes added, plus tensor-parallel all-reduces"
        ),
        N_(
            "KV cache in {block}-token blocks: {share:g} of GPU memory minus weights, prefill "
            "peak and runtime overhead; kv policy {policy}"
        ).format(
            block=config.block_size, share=config.gpu_memory_utilization, policy=config.kv_policy
        ),
        N_("step overhead {ms:g} ms per iteration").format(ms=config.step_overhead_s * 1e3),
    )


def capacity(
    req: CapacityRequest,
    *,
    loader: Callable[[str], LoadedModel] = load_model,
    progress: Progress | None = None,
) -> CapacityAnswer:
    """Simulate the deployment on ``req.gpu``, or plan the fewest GPUs of every catalog type.

    ``loader`` turns the model string into a model (a web page passes its own, which refuses
    paths); ``progress`` hears how the simulation or the search goes. Raises ``ValueError`` with
    one sentence on bad input.
    """
    from suanli.estimate.serving import Lengths, make_requests

    req = with_engine_defaults(req)
    check_request(req)
    mode = req.mode
    n_requests = req.requests
    if n_requests is None and req.duration is None:
        n_requests = DEFAULT_REQUESTS[mode]
    trace = load_trace(req)
    config = engine_config(req)
    closed = req.concurrency is not None
    reqs = make_requests(
        # A closed loop's arrivals come from its completions; its requests wait at time 0.
        rate=math.inf if closed else req.rate if req.rate is not None else 1.0,
        prompt=Lengths(mean=req.prompt, dist=req.prompt_dist, spread=req.spread),
        output=Lengths(mean=req.output, dist=req.output_dist, spread=req.spread),
        requests=n_requests,
        duration_s=req.duration,
        arrivals="poisson" if closed else req.arrivals,
        seed=req.seed,
        trace=trace,
        burst_ratio=req.burst_ratio,
        burst_period_s=req.burst_period,
    )
    spec = loader(req.model).spec
    clipped = 0
    if trace is None and (req.prompt_dist != "fixed" or req.output_dist != "fixed"):
        reqs, clipped = clip_to_context(reqs, spec.max_position_embeddings)
    catalog = load_catalog(req.catalog_file)
    rate = req.rate if req.arrivals != "trace" else None
    workload = CapacityWorkload(
        model=req.model,
        rate_requests_per_s=finite_number(rate),
        all_at_once=rate is not None and math.isinf(rate),
        arrivals="closed" if closed else req.arrivals,
        concurrency=req.concurrency,
        requests=len(reqs),
        prompt_tokens_mean=float(reqs.prompt.mean()),
        output_tokens_mean=float(reqs.output.mean()),
        policy=req.policy,
        kv_policy=req.kv_policy,
        weight_format=req.quant,
        kv_dtype=req.kv_dtype,
        seed=req.seed,
        clipped_requests=clipped,
        slo_ttft_s=req.slo_ttft,
        slo_tpot_s=req.slo_tpot,
    )
    if req.gpu:
        gpu = find_gpu(req.gpu, catalog)
        return simulate_deployment(req, spec, gpu, reqs, config, workload, progress)
    return plan_deployments(req, spec, catalog, reqs, config, workload, progress)


def simulate_deployment(
    req: CapacityRequest,
    spec: ModelSpec,
    gpu: GPU,
    reqs: Requests,
    config: EngineConfig,
    workload: CapacityWorkload,
    progress: Progress | None = None,
) -> CapacitySimulation:
    """``req.replicas`` replicas of ``req.tp`` x ``gpu`` serving ``reqs``, simulated."""
    from suanli.catalog.formats import refused_format, refused_kv
    from suanli.estimate.device import device_for
    from suanli.estimate.serving import (
        device_dtype,
        replica_cost,
        saturated_requests_per_s,
        simulate,
    )

    lacks = refused_format(gpu, req.quant) or refused_kv(gpu, req.kv_dtype)
    if lacks:
        raise ValueError(lacks)
    device = device_for(gpu, device_dtype(req.quant))
    cost = replica_cost(
        spec,
        device,
        tp=req.tp,
        weight_format=req.quant,
        kv_dtype=req.kv_dtype,
        memory_bytes=gpu.memory_bytes,
        config=config,
        reference_context=int(reqs.prompt.mean() + reqs.output.mean() / 2),
    )
    rent = rent_price(gpu, override_usd_per_hour=req.price)
    usd = rent.usd if rent is not None else None
    tick: Callable[[int, int], None] | None = None
    if progress is not None:
        report = progress

        def tick_simulating(done: int, total: int) -> None:
            report("simulating", done, total)

        tick = tick_simulating
    result = simulate(
        cost,
        reqs,
        config,
        replicas=req.replicas,
        dispatch=req.dispatch,
        usd_per_gpu_hour=float(usd) if usd is not None else None,
        progress=tick,
        concurrency=req.concurrency,
    )
    has_slo = req.slo_ttft is not None or req.slo_tpot is not None
    series = result.queue_series
    stats = serving_stats(result)
    saturated = saturated_requests_per_s(cost, reqs, config)
    overload = overload_sentence(workload, saturated, result.replicas, result.tp, gpu.id)
    return CapacitySimulation(
        workload=workload,
        gpu=gpu.id,
        dispatch=req.dispatch,
        kv_tokens_per_replica=int(cost.kv_blocks * cost.block_size),
        meets_slo=result.meets(req.slo_ttft, req.slo_tpot) if has_slo else None,
        completed=result.completed,
        replicas=result.replicas,
        tp=result.tp,
        gpus=result.gpus,
        stats=stats,
        queue_series=QueueSeries(
            t_s=tuple(series.get("t_s", ())), waiting=tuple(series.get("waiting", ()))
        ),
        assumptions=(request_shape(req.prompt, req.output), *assumptions(device, config)),
        overloaded=overload is not None,
        overload=overload,
        rent=rent,
    )


def overload_sentence(
    workload: CapacityWorkload, saturated_per_replica: float, replicas: int, tp: int, gpu: str
) -> str | None:
    """Why the deployment is overloaded (None when it keeps up): more requests arrive than its
    replicas serve saturated (queueing's utilisation above one: the queue then grows without
    bound, whatever the run's length), with how many replicas hold the rate."""
    rate = workload.rate_requests_per_s
    served = saturated_per_replica * replicas
    if rate is None or served <= 0 or rate <= served:
        return None
    return N_(
        "overloaded: {rate:,.3g} requests/s arrive and {replicas} x tp{tp} {gpu} serve at most "
        "{served:,.3g}/s, so the queue grows as long as the load lasts and these latencies "
        "grow with the run's length; about {need} replicas hold this rate"
    ).format(
        rate=rate,
        replicas=replicas,
        tp=tp,
        gpu=gpu,
        served=served,
        need=math.ceil(rate / saturated_per_replica),
    )


def plan_deployments(
    req: CapacityRequest,
    spec: ModelSpec,
    catalog: list[GPU],
    reqs: Requests,
    config: EngineConfig,
    workload: CapacityWorkload,
    progress: Progress | None = None,
) -> CapacityPlan:
    """Per catalog GPU, the fewest GPUs meeting the SLOs on ``reqs``, ranked by cost."""
    from suanli.catalog.formats import refused_format, refused_kv
    from suanli.estimate.serving import plan_capacity

    # Only cards that run the weight format and KV dtype (docs/memory.md, "Precisions a card
    # has"): fp8 is not planned on a card without fp8 units.
    runs = [g for g in catalog if not (refused_format(g, req.quant) or refused_kv(g, req.kv_dtype))]
    rows = plan_capacity(
        spec,
        runs,
        reqs,
        slo_ttft_s=req.slo_ttft,
        slo_tpot_s=req.slo_tpot,
        config=config,
        weight_format=req.quant,
        kv_dtype=req.kv_dtype,
        max_gpus=req.max_gpus,
        price=req.price,
        progress=progress,
    )
    rents = rents_by_id(catalog, req.price)
    return CapacityPlan(
        workload=workload,
        max_gpus=req.max_gpus,
        rows=tuple(plan_row(r, rents.get(r.gpu_id)) for r in rows),
    )
