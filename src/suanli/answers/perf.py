"""How fast, and bound by what? Step time, tokens/s, MFU, time and cost to train; TTFT, TPOT and
a batch sweep for inference; the roofline point and the formula behind each number
(``suanli perf``, ``POST /api/perf``, :func:`suanli.perf`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from suanli.answers.bands import with_band
from suanli.answers.base import FLATTEN_OPTIONAL, NOT_IN_JSON, Answer, from_result
from suanli.answers.devices import resolve_gpu
from suanli.answers.model_source import load_model
from suanli.answers.perf_terms import TimeTerm, infer_terms, train_terms
from suanli.answers.recompute import settle_work
from suanli.answers.request import (
    DEFAULT_PUE,
    WorkRequest,
    framework_assumptions,
    image_tokens,
    with_file_format,
    with_images,
)
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.answers.validity import Validity, check_job
from suanli.catalog.formats import get_format
from suanli.estimate.advice import advice, scaling
from suanli.estimate.device import device_for, read_calibration
from suanli.estimate.inference import InferPerf, inference_perf
from suanli.estimate.load import ClosedLoop, closed_loop, static_batch
from suanli.estimate.offload import split_layers
from suanli.estimate.perf import Device, training_perf
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_, join
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec

#: Batches of the inference sweep.
SWEEP_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)

TRAIN_EXPLAIN = {
    "step_time_s": N_(
        "compute + memory + exposed communication + pipeline bubble, per "
        "optimizer step (roofline per op class; docs/speed.md)"
    ),
    "tokens_per_s": N_("tokens per step (batch x seq x grad_accum x dp) / step time"),
    "mfu": N_("model FLOPs per step / (step time x GPUs x dense peak FLOP/s) (PaLM, appendix B)"),
    "hfu": N_("as MFU, with recomputed FLOPs counted"),
    "bound": N_("the largest share of the step: compute, memory or communication"),
    "time_to_train_s": N_("tokens / tokens per second"),
    "cost_usd": N_(
        "GPU-hours x USD per GPU-hour (the rent every view shows for the card unless price is "
        "given)"
    ),
    "energy_kwh": N_("GPU-hours x TDP x PUE"),
}
INFER_EXPLAIN = {
    "ttft_s": N_(
        "prefill: max(prompt FLOPs / (tp x achievable FLOP/s), weight bytes / "
        "achievable bandwidth) + tensor-parallel all-reduces"
    ),
    "tpot_s": N_(
        "one decode step: max(FLOPs / achievable FLOP/s, (weights + KV cache) bytes / "
        "achievable bandwidth) + tensor-parallel all-reduces"
    ),
    "tokens_per_s": N_("batch / TPOT"),
    "batch_tokens_per_s": N_(
        "batch x output / (TTFT + (output - 1) x TPOT); a batch larger than the KV cache holds "
        "runs in waves of the largest batch that fits, as serving engines queue what they "
        "cannot hold (an engine that preempts and recomputes is slower still)"
    ),
    "bound": N_(
        "decode is memory-bound while the bytes a step reads take longer than its FLOPs; "
        "host-bound while Python takes longer to launch the step than the GPU to run it"
    ),
    "compute_bound_batch": N_(
        "the batch from which a decode step's FLOPs take longer than "
        "reading the weights and KV cache"
    ),
}


@dataclass(frozen=True)
class PerfRequest:
    """The speed question: a model, a workload, and the GPU it runs on."""

    model: str = DEFAULT_MODEL
    work: WorkRequest = field(default_factory=WorkRequest)
    gpu: str = "h100"
    """The GPU (catalog name, or local-cpu)."""
    gpus_per_node: int | None = None
    """Default by form factor: 8 for SXM/PCIe servers."""
    inter_node: str | None = None
    """Link between nodes: ib-ndr, ib-hdr, roce-200g, eth-100g, ..."""
    nics_per_node: int | None = None
    """Scale-out NICs (ports of the inter-node link) per node; None: the catalog's node for the
    card (8 on DGX/HGX, 4 on DGX-1)."""
    calibration: str | None = None
    """Measured ceilings (TOML from suanli bench) replacing the defaults."""
    tokens: float | None = None
    """Training tokens: adds time to train, GPU-hours, energy and cost."""
    prompt: int = PROMPT_TOKENS
    """Inference: prompt tokens."""
    output: int = OUTPUT_TOKENS
    """Inference: generated tokens."""
    pue: float = DEFAULT_PUE
    price: float | None = None
    """Rent per GPU-hour in USD (default: the one every view shows for the card,
    :func:`suanli.catalog.prices.rent_price`); ``suanli perf --rent``."""
    catalog_file: str | None = None
    ignore_fit: bool = False
    """Give the speed of a job that cannot run (marked ``fits``/``supported`` false) instead of
    refusing it."""
    host_cpu: str | None = None
    """The CPU that runs the layers left in system memory (``gpu_layers``): a catalog CPU;
    default a desktop with dual-channel DDR5 (ryzen-9-7950x-cpu)."""


@dataclass(frozen=True, kw_only=True)
class RooflinePoint:
    """One operating point on the roofline (per GPU)."""

    label: str
    flops: float
    bytes: float
    seconds: float
    flops_per_byte: float | None
    flops_per_s: float | None


@dataclass(frozen=True, kw_only=True)
class Roofline:
    """The GPU's roofs (peak and achievable) and where the work sits under them."""

    gpu: str
    peak_flops: float
    achievable_flops: float
    peak_bandwidth_bytes_per_s: float
    achievable_bandwidth_bytes_per_s: float
    ridge_flops_per_byte: float
    points: tuple[RooflinePoint, ...]
    note: str
    source: str


@dataclass(frozen=True, kw_only=True)
class Advice:
    """A fix for what dominates the step, quantified by re-estimating with it."""

    issue: str
    fix: str
    tokens_per_s_after: float
    speedup: float


@dataclass(frozen=True, kw_only=True)
class TimeToTrain:
    """Time, GPU-hours, energy and cost for a number of training tokens."""

    tokens: float
    time_to_train_s: float
    gpu_hours: float
    energy_kwh: float
    cost_usd: float | None
    """None when no price is known (give one)."""


@dataclass(frozen=True, kw_only=True)
class TrainPerfAnswer(Answer):
    """Speed of one training layout: step time, throughput, MFU and what bounds it."""

    schema_name = "perf-train"

    model: str
    task: str
    gpu: str
    gpus: int
    flops_per_step: float
    step_time_s: float
    tokens_per_step: float
    tokens_per_s: float
    mfu: float
    hfu: float
    bound: str
    breakdown_s: dict[str, float]
    """Seconds per optimizer step: compute, memory, communication, bubble."""
    communication_s: dict[str, float]
    """Exposed communication by kind (data_parallel, tensor_parallel, ...)."""
    scaling: dict[str, float | str | None]
    """Speed-up over one GPU running the same global batch: gpus, speedup, efficiency (None,
    with ``reason``, when one GPU cannot hold the job)."""
    advice: tuple[Advice, ...]
    assumptions: tuple[str, ...]
    time_to_train: TimeToTrain | None = field(default=None, metadata=FLATTEN_OPTIONAL)
    roofline: Roofline | None = None
    explain: dict[str, str] = field(default_factory=dict)
    """The formula behind each number."""
    fits: bool = True
    """The job fits in the card's memory (false only with ignore_fit)."""
    supported: bool = True
    """The card has units for the job's precision (false only with ignore_fit)."""
    memory_bytes: int = 0
    """Memory the job needs per GPU."""
    gpu_memory_bytes: int = 0
    warnings: tuple[str, ...] = ()
    """Why the job cannot run as given (with ignore_fit), one sentence each."""
    band: dict[str, list[float]] | None = None
    """Each headline figure's likely range (the 80% prediction interval of measured /
    estimated speed in this regime's published runs: suanli.answers.bands); None where the
    regime has too few."""
    band_basis: dict[str, Any] | None = None
    """The band's cell, its rows and sources, and the band's leave-one-source-out coverage."""
    terms: tuple[TimeTerm, ...] = ()
    """Every time term with its efficiency, its source and its formula (--explain)."""
    pue: float = field(default=DEFAULT_PUE, metadata=NOT_IN_JSON)


@dataclass(frozen=True, kw_only=True)
class SweepPoint:
    """Decode speed at one batch."""

    batch: int
    tpot_s: float
    tokens_per_s: float
    bound: str


@dataclass(frozen=True, kw_only=True)
class InferPerfAnswer(Answer):
    """Speed of serving: time to first token, time per output token, throughput, the bound."""

    schema_name = "perf-infer"

    model: str
    task: str
    gpu: str
    tp: int
    prefill_flops: float
    decode_flops_per_token: float
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    bound: str
    compute_bound_batch: int | None
    """The batch from which decode is compute-bound; None: never."""
    decode_bytes_per_step: float
    breakdown_s: dict[str, float]
    batch_sweep: tuple[SweepPoint, ...]
    roofline: Roofline | None = None
    explain: dict[str, str] = field(default_factory=dict)
    fits: bool = True
    """The job fits in the card's memory (false only with ignore_fit)."""
    supported: bool = True
    """The card has units for the job's precision (false only with ignore_fit)."""
    memory_bytes: int = 0
    """Memory the job needs per GPU."""
    gpu_memory_bytes: int = 0
    warnings: tuple[str, ...] = ()
    """Why the job cannot run as given (with ignore_fit), one sentence each."""
    band: dict[str, list[float]] | None = None
    """Each headline figure's likely range (the 80% prediction interval of measured /
    estimated speed in this regime's published runs: suanli.answers.bands); None where the
    regime has too few."""
    band_basis: dict[str, Any] | None = None
    """The band's cell, its rows and sources, and the band's leave-one-source-out coverage."""
    terms: tuple[TimeTerm, ...] = ()
    """Every time term with its efficiency, its source and its formula (--explain)."""
    largest_batch: int = 0
    """The largest batch that fits at this context (the sweep stops there); 0: none fits."""
    request_s: float = 0.0
    """One request end to end: TTFT + (output - 1) x TPOT."""
    batch_tokens_per_s: float = 0.0
    """Output tokens/s of a static batch whose sequences start together, prefill included
    (batch x output / request_s); tokens_per_s counts decode steps only. A batch larger than
    ``largest_batch`` runs in ``batch_waves`` waves, as a serving engine queues what its KV cache
    cannot hold (:func:`suanli.estimate.load.static_batch`)."""
    batch_waves: int = 1
    """How many waves the static batch runs in: 1 when the KV cache holds all of it."""
    closed_loop: ClosedLoop | None = None
    """``batch`` clients each sending a request when their last one ends (AIPerf, genai-perf,
    vllm bench serve --max-concurrency): steady-state TTFT, TPOT and throughput."""
    assumptions: tuple[str, ...] = ()
    """What was taken as given that the request did not say: the serving framework's defaults
    (``--framework``), one line each."""
    batch: int = field(default=1, metadata=NOT_IN_JSON)
    prompt: int = field(default=PROMPT_TOKENS, metadata=NOT_IN_JSON)
    output: int = field(default=OUTPUT_TOKENS, metadata=NOT_IN_JSON)


PerfAnswer = TrainPerfAnswer | InferPerfAnswer

#: The CPU that runs layers left in system memory when none is named: a desktop with
#: dual-channel DDR5-5200 (83.2 GB/s), what a consumer card usually sits in.
DEFAULT_HOST_CPU = "ryzen-9-7950x-cpu"


def roofline(device: Device, points: tuple[RooflinePoint, ...], note: str) -> Roofline:
    """The device's roofs with the work's points under them."""
    return Roofline(
        gpu=device.name,
        peak_flops=device.peak_flops,
        achievable_flops=device.matmul_flops,
        peak_bandwidth_bytes_per_s=device.memory_bytes_per_s,
        achievable_bandwidth_bytes_per_s=device.bandwidth,
        ridge_flops_per_byte=device.matmul_flops / device.bandwidth,
        points=points,
        note=note,
        source=device.efficiency_source,
    )


def roofline_point(label: str, flops: float, nbytes: float, seconds: float) -> RooflinePoint:
    """A point: its arithmetic intensity (FLOP/byte) and achieved FLOP/s."""
    return RooflinePoint(
        label=label,
        flops=flops,
        bytes=nbytes,
        seconds=seconds,
        flops_per_byte=flops / nbytes if nbytes else None,
        flops_per_s=flops / seconds if seconds else None,
    )


def train_perf_answer(
    model: str,
    spec: ModelSpec,
    work: TrainWork,
    device: Device,
    tokens: float | None = None,
    pue: float = DEFAULT_PUE,
    usd_per_hour: float | None = None,
    validity: Validity | None = None,
    notes: tuple[str, ...] = (),
) -> TrainPerfAnswer:
    """The training answer for a built workload on a device (``validity``: the memory and
    precision check, when one was made; ``notes``: assumptions to list first, such as the
    framework's defaults)."""
    result = training_perf(spec, work, device)
    cost = None
    if tokens:
        seconds = tokens / result.tokens_per_s
        gpu_hours = seconds / 3600 * work.parallel.gpus
        price = usd_per_hour if usd_per_hour is not None else device.usd_per_hour
        cost = TimeToTrain(
            tokens=tokens,
            time_to_train_s=seconds,
            gpu_hours=gpu_hours,
            energy_kwh=gpu_hours * device.tdp_watts / 1000 * pue,
            cost_usd=gpu_hours * price if price else None,
        )
    point = roofline_point(
        N_("training step"),
        result.hardware_flops_per_step / result.gpus,
        result.breakdown_s["memory"] * device.bandwidth,
        result.step_time_s,
    )
    return TrainPerfAnswer(
        model=model,
        task=work.task,
        gpu=device.name,
        gpus=work.parallel.gpus,
        flops_per_step=result.flops_per_step,
        step_time_s=result.step_time_s,
        tokens_per_step=result.tokens_per_step,
        tokens_per_s=result.tokens_per_s,
        mfu=result.mfu(device.peak_flops),
        hfu=result.hfu(device.peak_flops),
        bound=result.bound,
        breakdown_s=dict(result.breakdown_s),
        communication_s=dict(result.comm_detail_s),
        scaling=scaling(
            spec, work, device, validity.gpu_memory_bytes if validity is not None else 0
        ),
        advice=tuple(
            Advice(
                issue=cast(str, a["issue"]),  # a sentence: str() would drop its message id
                fix=cast(str, a["fix"]),
                tokens_per_s_after=float(a["tokens_per_s_after"]),  # type: ignore[arg-type]
                speedup=float(a["speedup"]),  # type: ignore[arg-type]
            )
            for a in advice(spec, work, device)
        ),
        assumptions=notes + tuple(result.assumptions),
        time_to_train=cost,
        roofline=roofline(
            device,
            (point,),
            N_(
                "per GPU and optimizer step: hardware FLOPs (recomputation counted) over the bytes "
                "the memory-bound ops move; the point sits below the roof by the time spent in "
                "communication and the pipeline bubble"
            ),
        ),
        explain=dict(TRAIN_EXPLAIN),
        **_validity_fields(validity),
        terms=train_terms(work, device, result),
        pue=pue,
    )


def _validity_fields(validity: Validity | None) -> dict[str, Any]:
    if validity is None:
        return {}
    return {
        "fits": validity.fits,
        "supported": validity.supported,
        "memory_bytes": validity.memory_bytes,
        "gpu_memory_bytes": validity.gpu_memory_bytes,
        "warnings": validity.problems,
    }


def sweep_batches(largest: int | None) -> tuple[int, ...]:
    """The batches of the sweep: powers of two up to ``largest`` (and ``largest`` itself);
    all of them when ``largest`` is None (no card to fit on)."""
    if largest is None:
        return SWEEP_BATCHES
    batches = tuple(b for b in SWEEP_BATCHES if b <= largest)
    if 0 < largest <= SWEEP_BATCHES[-1] and largest not in batches:
        batches += (largest,)
    return batches


def infer_perf_answer(
    model: str,
    spec: ModelSpec,
    work: InferWork,
    device: Device,
    prompt: int,
    output: int,
    validity: Validity | None = None,
    largest_batch: int | None = None,
    host: Device | None = None,
    images: int = 0,
    image_tokens_total: int = 0,
    assumptions: tuple[str, ...] = (),
) -> InferPerfAnswer:
    """The inference answer for a built workload on a device, with a batch sweep up to
    ``largest_batch`` (the largest that fits; None: the whole sweep); ``host`` runs the layers
    left in system memory (``work.gpu_layers``); ``assumptions`` are listed as the answer's."""
    share = work.gpu_share(spec.num_layers)

    def timed(w: InferWork) -> InferPerf:
        on_gpu = inference_perf(spec, w, device, prompt, output)
        if host is not None and share < 1:
            on_cpu = inference_perf(spec, replace(w, tp=1, pp=1), host, prompt, output)
            on_gpu = split_layers(on_gpu, on_cpu, share, w.batch)
        if images and spec.vision is not None:
            # The vision tower encodes every image before the prefill (replicated under TP).
            per_image = image_tokens_total // max(images, 1) if image_tokens_total else None
            flops = images * w.batch * spec.vision.forward_flops_per_image(per_image)
            vision_s = flops / device.matmul_flops
            on_gpu = replace(
                on_gpu,
                ttft_s=on_gpu.ttft_s + vision_s,
                request_s=on_gpu.request_s + vision_s,
                breakdown_s={**on_gpu.breakdown_s, "vision_encoder": vision_s},
            )
        return on_gpu

    result = timed(work)
    alone = result if work.batch == 1 else timed(replace(work, batch=1))
    static = static_batch(
        work.batch,
        largest_batch or 0,
        output,
        lambda n: result.request_s if n == work.batch else timed(replace(work, batch=n)).request_s,
    )
    sweep = []
    for batch in sweep_batches(largest_batch):
        r = timed(replace(work, batch=batch))
        sweep.append(
            SweepPoint(batch=batch, tpot_s=r.tpot_s, tokens_per_s=r.tokens_per_s, bound=r.bound)
        )
    points = (
        roofline_point(
            "prefill",
            result.prefill_flops / work.tp,
            result.breakdown_s["prefill_memory"] * device.bandwidth,
            result.ttft_s,
        ),
        roofline_point(
            N_("decode, batch {batch}").format(batch=work.batch),
            result.decode_flops_per_token * work.batch / work.tp,
            result.decode_bytes_per_step,
            result.tpot_s,
        ),
    )
    # The estimate's own fields (FLOPs, TTFT, TPOT, tokens/s, bound, request_s, ...) come from
    # the result; the static batch's rate is the answer's batch_tokens_per_s, not the result's.
    return from_result(
        InferPerfAnswer,
        result,
        model=model,
        task="infer",
        gpu=device.name,
        tp=work.tp,
        breakdown_s=dict(result.breakdown_s),
        batch_sweep=tuple(sweep),
        roofline=roofline(
            device,
            points,
            N_(
                "per GPU: prefill reads the weights once for the whole prompt; a decode step "
                "reads the weights and the KV cache for one token per sequence"
            ),
        ),
        explain=dict(INFER_EXPLAIN),
        **_validity_fields(validity),
        terms=infer_terms(work, device, result, int(prompt + output / 2)),
        largest_batch=largest_batch or 0,
        batch_tokens_per_s=static.tokens_per_s,
        batch_waves=static.waves,
        closed_loop=closed_loop(work.batch, output, alone.ttft_s, result.tpot_s),
        assumptions=assumptions,
        batch=work.batch,
        prompt=prompt,
        output=output,
    )


def perf(req: PerfRequest, *, loader: Callable[[str], LoadedModel] = load_model) -> PerfAnswer:
    """Speed of ``req.model`` under ``req.work`` on ``req.gpu``: a training or an inference
    answer by the task. Raises ``ValueError`` with one sentence on bad input."""
    loaded = loader(req.model)
    spec = loaded.spec
    work_req = with_file_format(req.work, loaded.weight_format)
    prompt = req.prompt + (image_tokens(work_req, spec) if work_req.task == "infer" else 0)
    if work_req.task == "infer":
        work_req = replace(work_req, context=prompt + req.output)
    else:
        work_req = with_images(work_req, spec)
    gpu, measured = resolve_gpu(req.gpu, req.catalog_file)
    work, settled = settle_work(work_req, spec, gpu.memory_bytes)
    calibration = read_calibration(req.calibration) if req.calibration else measured
    # Weights stored in fp8 are multiplied in fp8 where the card can; others dequantize to 16-bit.
    dtype = work.dtype if isinstance(work, TrainWork) else get_format(work.weight_format).gemm_dtype
    device = device_for(
        gpu,
        dtype,
        gpus_per_node=req.gpus_per_node,
        inter_node=req.inter_node,
        nics_per_node=req.nics_per_node,
        calibration=calibration,
    )
    validity = check_job(req.model, spec, work, gpu)
    if validity.problems and not req.ignore_fit:
        first, *others = validity.problems
        raise ValueError(
            N_(
                "{problem}; also, {other} (--ignore-fit gives the speed anyway, marked as not "
                "runnable)"
            ).format(problem=first, other=join(others, N_("; also, ")))
            if others
            else N_(
                "{problem} (--ignore-fit gives the speed anyway, marked as not runnable)"
            ).format(problem=first)
        )
    if isinstance(work, InferWork):
        host = None
        if work.gpu_share(spec.num_layers) < 1:
            cpu, _ = resolve_gpu(req.host_cpu or DEFAULT_HOST_CPU, req.catalog_file)
            host = device_for(cpu, "bf16")
        # Nothing fits: the hypothetical (ignore_fit) sweeps every batch, marked not runnable.
        answer: PerfAnswer = infer_perf_answer(
            req.model,
            spec,
            work,
            device,
            prompt,
            req.output,
            validity,
            validity.largest_batch or None,
            host,
            req.work.images,
            image_tokens(work_req, spec) if req.work.images else 0,
            framework_assumptions(work_req),
        )
    else:
        answer = train_perf_answer(
            req.model,
            spec,
            work,
            device,
            req.tokens,
            req.pue,
            req.price,
            validity,
            framework_assumptions(work_req) + settled,
        )
    return with_band(answer, gpu, spec.is_moe, work_req.framework)
