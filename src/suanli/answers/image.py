"""How long does one image take, and does the pipeline fit? Text-to-image generation (SD 1.5,
SDXL, SD3, Flux or a local diffusers folder) at a resolution, step count and batch on one card
(``suanli perf MODEL --task generate-image``, ``suanli mem ... --task generate-image``,
:func:`suanli.generate_image`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from suanli.answers.base import Answer
from suanli.answers.devices import resolve_gpu
from suanli.answers.perf_terms import TimeTerm
from suanli.catalog import GPU
from suanli.catalog.formats import overhead_bytes, overhead_fraction
from suanli.diffusion.pipeline import Call, Pipeline, PipelineError, find_pipeline, pipeline_graphs
from suanli.estimate.device import device_for, sdpa_device
from suanli.estimate.diffusion import graph_seconds
from suanli.estimate.perf import Device
from suanli.i18n import N_, message_of
from suanli.units import DTYPE_BYTES as ELEMENT_BYTES

TASK = "generate-image"
#: A Hugging Face repo id (``org/name``).
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
OFFLOADS = ("none", "model", "sequential")
#: The dtypes a diffusion pipeline runs in, with their bytes per element (suanli.units' table).
DTYPE_BYTES = {dtype: float(ELEMENT_BYTES[dtype]) for dtype in ("fp16", "bf16", "fp32")}
#: Pixels per side suanli accepts (a 16k x 16k image is already 1 GiB per channel of the VAE).
MAX_SIDE = 16384
MAX_BATCH = 1024
MAX_STEPS = 10000

EXPLAIN = {
    "seconds_per_batch": N_(
        "text encoders once + steps x one denoiser pass + one VAE decode "
        "(+ weight transfers with offload); each pass = its GEMMs, convolutions (as implicit "
        "GEMMs), attention calls and element-wise traffic timed with the card's kernel model"
    ),
    "denoise_step_s": N_(
        "one UNet / transformer forward on the latents (2 x batch with classifier-free guidance)"
    ),
    "flops_per_image": N_(
        "forward FLOPs of every call per image, counted as FlopCounterMode counts "
        "them (2·M·N·K per GEMM or convolution, 4·B·H·Lq·Lkv·d per attention call)"
    ),
    "memory_bytes": N_(
        "resident weights + the largest call's live activations + CUDA context, "
        "cuBLAS workspace and the allocator's reserve"
    ),
}


@dataclass(frozen=True)
class ImageRequest:
    """One text-to-image job (the CLI's options, the Python API's arguments)."""

    model: str
    gpu: str
    width: int | None = None
    height: int | None = None
    steps: int | None = None
    batch: int = 1
    dtype: str | None = None
    """fp16, bf16 or fp32; default: bf16 for Flux, fp16 for the others (their model cards)."""
    guidance: bool | None = None
    """Classifier-free guidance (a second, unconditional denoiser pass); default: the pipeline's."""
    max_sequence_length: int | None = None
    offload: str = "none"
    """none; model (diffusers ``enable_model_cpu_offload``); sequential
    (``enable_sequential_cpu_offload``)."""
    catalog_file: str | None = None
    ignore_fit: bool = False
    local_paths: bool = True
    """Read ``model`` as a local diffusers folder too (the web API turns this off)."""


@dataclass(frozen=True, kw_only=True)
class ImageComponent:
    """One model of the pipeline and its call."""

    name: str
    cls: str
    role: str
    """encode, denoise or decode."""
    params: int
    weight_bytes: int
    flops_per_call: float
    calls: int
    """Calls per pipeline call (the denoiser: one per step)."""
    seconds_per_call: float
    activation_bytes: int
    """Largest set of activations alive during the call."""


@dataclass(frozen=True, kw_only=True)
class ImagePerfAnswer(Answer):
    """Seconds per image and whether the pipeline fits."""

    schema_name = "perf-image"

    model: str
    title: str
    task: str
    gpu: str
    width: int
    height: int
    steps: int
    batch: int
    guidance: bool
    dtype: str
    offload: str
    components: tuple[ImageComponent, ...]
    denoise_step_s: float
    encode_s: float
    decode_s: float
    transfer_s: float
    """Weights moved over PCIe per pipeline call (offload only)."""
    seconds_per_batch: float
    seconds_per_image: float
    images_per_s: float
    flops_per_image: float
    memory_bytes: int
    memory_breakdown: dict[str, int]
    gpu_memory_bytes: int
    fits: bool
    terms: tuple[TimeTerm, ...]
    explain: dict[str, str] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _check(req: ImageRequest) -> None:
    if req.offload not in OFFLOADS:
        raise ValueError(
            N_("--offload {offload!r}: use one of {choices}").format(
                offload=req.offload, choices=", ".join(OFFLOADS)
            )
        )
    if req.dtype is not None and req.dtype not in DTYPE_BYTES:
        raise ValueError(
            N_(
                "--dtype {dtype} for image generation: use fp16, bf16 or fp32 (quantised "
                "diffusion weights are not modelled yet)"
            ).format(dtype=req.dtype)
        )
    for name, value, top in (
        ("width", req.width, MAX_SIDE),
        ("height", req.height, MAX_SIDE),
        ("steps", req.steps, MAX_STEPS),
        ("batch", req.batch, MAX_BATCH),
    ):
        if value is not None and not 1 <= value <= top:
            raise ValueError(
                N_("--{name} {value} is out of range; give 1 to {top}").format(
                    name=name, value=value, top=top
                )
            )


def _weight_bytes(call: Call, dtype: str) -> int:
    """Bytes of one component's weights. transformers keeps T5's ``wo`` projections in fp32
    when a model is loaded in fp16 (``T5PreTrainedModel._keep_in_fp32_modules``)."""
    size = call.graph.params * DTYPE_BYTES[dtype]
    if call.component.cls == "T5EncoderModel" and dtype == "fp16":
        cfg = call.component.config
        wo = (
            int(cfg.get("num_layers", 24))
            * int(cfg.get("d_model", 4096))
            * int(cfg.get("d_ff", 10240))
        )
        size += wo * (4 - 2)
    return int(size)


def _device(gpu: GPU, dtype: str) -> Device:
    return sdpa_device(device_for(gpu, dtype), gpu)


def generate_image(req: ImageRequest) -> ImagePerfAnswer:
    """Seconds per image and memory of ``req``. Raises ``ValueError`` with one sentence on bad
    input, on a model that is not a text-to-image pipeline, or on a job that does not fit
    (unless ``ignore_fit``)."""
    _check(req)
    pipe = find_pipeline(req.model, local_paths=req.local_paths)
    if pipe is None and req.local_paths and HUB_ID.match(req.model):
        from suanli.diffusion.hub import hub_pipeline

        try:
            pipe = hub_pipeline(req.model)
        except PipelineError as exc:
            raise ValueError(message_of(exc)) from None
    if pipe is None:
        raise ValueError(
            (
                N_(
                    "{model!r} is not a text-to-image pipeline suanli knows: give sd-1.5, sdxl, "
                    "sd3-medium, flux.1-dev, flux.1-schnell or a local diffusers folder"
                )
                if req.local_paths
                else N_(
                    "{model!r} is not a text-to-image pipeline suanli knows: give sd-1.5, sdxl, "
                    "sd3-medium, flux.1-dev, flux.1-schnell"
                )
            ).format(model=req.model)
        )
    gpu, _ = resolve_gpu(req.gpu, req.catalog_file)
    if gpu.form_factor == "cpu":
        raise ValueError(
            N_("{gpu} is a CPU; image generation is modelled on GPUs only").format(gpu=gpu.id)
        )
    flux = pipe.denoiser.cls == "FluxTransformer2DModel"
    dtype = req.dtype or ("bf16" if flux else "fp16")
    size = int(pipe.default("size") or 1024)
    width, height = req.width or size, req.height or size
    steps = req.steps or int(pipe.default("steps") or 30)
    guidance = pipe.default("guidance") if req.guidance is None else req.guidance
    # SDXL's VAE overflows in fp16: the pipeline upcasts it to fp32 for the decode (its config's
    # force_upcast); PyTorch runs fp32 convolutions on TF32 tensor cores by default.
    upcast = (
        dtype == "fp16"
        and pipe.pipeline_class == "StableDiffusionXLPipeline"
        and bool(pipe.vae.config.get("force_upcast", True))
    )
    try:
        calls = pipeline_graphs(
            pipe,
            width=width,
            height=height,
            batch=req.batch,
            guidance=bool(guidance),
            max_sequence_length=req.max_sequence_length,
            dtype_bytes=DTYPE_BYTES[dtype],
            vae_dtype_bytes=4.0 if upcast or dtype == "fp32" else DTYPE_BYTES[dtype],
        )
    except PipelineError as exc:
        raise ValueError(message_of(exc)) from None
    device = _device(gpu, dtype)
    vae_device = _device(gpu, "tf32") if upcast and gpu.peak_flops("tf32") else device
    return _answer(
        req,
        pipe,
        gpu,
        device,
        vae_device,
        calls,
        dtype,
        width,
        height,
        steps,
        bool(guidance),
        upcast,
    )


def _answer(
    req: ImageRequest,
    pipe: Pipeline,
    gpu: GPU,
    device: Device,
    vae_device: Device,
    calls: tuple[Call, ...],
    dtype: str,
    width: int,
    height: int,
    steps: int,
    guidance: bool,
    upcast: bool,
) -> ImagePerfAnswer:
    rows = []
    seconds = {"encode": 0.0, "denoise": 0.0, "decode": 0.0}
    by_class = {N_("GEMMs and convolutions"): 0.0, "attention": 0.0, "element-wise": 0.0}
    for call in calls:
        dev = vae_device if call.role == "decode" else device
        t = graph_seconds(call.graph, dev)
        times = steps if call.role == "denoise" else 1
        seconds[call.role] += t.total_s
        by_class[N_("GEMMs and convolutions")] += t.gemm_s * times
        by_class["attention"] += t.attention_s * times
        by_class["element-wise"] += t.elementwise_s * times
        rows.append(
            ImageComponent(
                name=call.component.name,
                cls=call.component.cls,
                role=call.role,
                params=call.graph.params,
                weight_bytes=_weight_bytes(call, dtype),
                flops_per_call=call.graph.flops,
                calls=times,
                seconds_per_call=t.total_s,
                activation_bytes=int(call.graph.peak_bytes),
            )
        )
    weights = {r.name: r.weight_bytes for r in rows}
    denoiser = next(r for r in rows if r.role == "denoise")
    transfer = _transfer_s(req.offload, rows, steps, device)
    activations = max(r.activation_bytes for r in rows)
    if req.offload == "none":
        resident = sum(weights.values())
    elif req.offload == "model":
        resident = max(r.weight_bytes + r.activation_bytes for r in rows) - activations
    else:  # sequential: one block's weights at a time
        resident = int(denoiser.weight_bytes / max(1, _blocks(pipe)))
    context, _ = overhead_bytes("cuda-context")
    workspace, _ = overhead_bytes("cublas-workspace-sm90")
    fraction, _ = overhead_fraction("torch-allocator-fragmentation")
    reserve = (resident + activations) * fraction
    breakdown = {
        "weights": int(resident),
        "activations": int(activations),
        "overhead": int(context + workspace + reserve),
    }
    total = sum(breakdown.values())
    fits = total <= gpu.memory_bytes
    warnings: tuple[str, ...] = ()
    if not fits:
        hint = (
            N_("try --cpu-offload model")
            if req.offload == "none"
            else N_("try --cpu-offload sequential")
            if req.offload == "model"
            else N_("try a smaller --size or --batch, or a larger card")
        )
        values = {
            "model": pipe.name,
            "width": width,
            "height": height,
            "batch": req.batch,
            "need": total / 2**30,
            "have": gpu.memory_bytes / 2**30,
            "gpu": gpu.id,
            "hint": hint,
        }
        if not req.ignore_fit:
            raise ValueError(
                N_(
                    "{model} at {width}x{height}, batch {batch}, needs {need:.1f} GiB on a "
                    "{have:.0f} GiB {gpu}; {hint} (--ignore-fit gives the speed anyway)"
                ).format(**values)
            )
        warnings = (
            N_(
                "{model} at {width}x{height}, batch {batch}, needs {need:.1f} GiB on a "
                "{have:.0f} GiB {gpu}: it does not fit ({hint})"
            ).format(**values),
        )
    batch_s = seconds["encode"] + steps * seconds["denoise"] + seconds["decode"] + transfer
    per_image_flops = sum(r.flops_per_call * r.calls for r in rows) / req.batch
    terms = tuple(
        TimeTerm(
            term=term,
            seconds=s,
            efficiency=None,
            source=_source(term, device),
            formula=_formula(term),
        )
        for term, s in by_class.items()
    ) + (
        (
            TimeTerm(
                term=N_("weight transfers (offload)"),
                seconds=transfer,
                efficiency=None,
                source=N_("PCIe host-to-device copy, {rate:.0f} GB/s").format(
                    rate=device.host_bytes_per_s / 1e9
                ),
                formula=N_("bytes moved / host-to-device bandwidth"),
            ),
        )
        if transfer
        else ()
    )
    assumptions = [
        N_(
            "diffusers pipeline {pipeline} in eager PyTorch, {dtype} weights and "
            "activations, SDPA attention (FlashAttention-2 kernels), NCHW convolutions"
        ).format(pipeline=pipe.pipeline_class, dtype=dtype),
        N_("classifier-free guidance: the denoiser runs on 2 x batch latents")
        if guidance
        else N_("no classifier-free guidance (one denoiser pass per step)"),
        N_(
            "the scheduler's own work (a few element-wise ops per step) and the tokenizers are "
            "not counted"
        ),
    ]
    if upcast:
        assumptions.append(
            N_("the VAE decodes in fp32 (config force_upcast), on TF32 tensor cores")
        )
    if any(r.cls == "T5EncoderModel" for r in rows) and dtype == "fp16":
        assumptions.append(N_("T5's wo projections stay in fp32 in an fp16 load (transformers)"))
    if req.offload != "none":
        assumptions.append(
            N_(
                "offload model: each component is moved to the GPU for its call, once per "
                "pipeline call"
            )
            if req.offload == "model"
            else N_("offload sequential: every layer's weights cross PCIe at every call")
        )
    return ImagePerfAnswer(
        model=pipe.name,
        title=pipe.title,
        task=TASK,
        gpu=gpu.id,
        width=width,
        height=height,
        steps=steps,
        batch=req.batch,
        guidance=guidance,
        dtype=dtype,
        offload=req.offload,
        components=tuple(rows),
        denoise_step_s=seconds["denoise"],
        encode_s=seconds["encode"],
        decode_s=seconds["decode"],
        transfer_s=transfer,
        seconds_per_batch=batch_s,
        seconds_per_image=batch_s / req.batch,
        images_per_s=req.batch / batch_s,
        flops_per_image=per_image_flops,
        memory_bytes=int(total),
        memory_breakdown=breakdown,
        gpu_memory_bytes=int(gpu.memory_bytes),
        fits=fits,
        terms=terms,
        explain=dict(EXPLAIN),
        assumptions=tuple(assumptions),
        warnings=warnings,
    )


def _blocks(pipe: Pipeline) -> int:
    """Layers of the denoiser a sequential offload streams one at a time."""
    cfg = pipe.denoiser.config
    if pipe.denoiser.cls == "UNet2DConditionModel":
        return 3 * len(cfg.get("block_out_channels", (1, 1, 1, 1))) + 3
    return int(cfg.get("num_layers", 24)) + int(cfg.get("num_single_layers", 0))


def _transfer_s(offload: str, rows: list[ImageComponent], steps: int, device: Device) -> float:
    """Seconds of host-to-device weight copies per pipeline call."""
    if offload == "none" or not device.host_bytes_per_s:
        return 0.0
    moved = sum(r.weight_bytes * (r.calls if offload == "sequential" else 1) for r in rows)
    return moved / device.host_bytes_per_s


def _source(term: str, device: Device) -> str:
    if term == "attention":
        if device.attention is None:
            return N_("the GEMM model's compute efficiency (no measured attention rows)")
        return N_(
            "FlashAttention-2 kernel benchmarks (Dao 2023, arXiv:2307.08691) of this card's "
            "generation, non-causal forward, at each call's key length"
        )
    if term == "element-wise":
        return N_("achievable memory bandwidth; per-kernel floor of the card's kernel profile")
    return device.gemm_model.source or device.efficiency_source


def _formula(term: str) -> str:
    if term == "attention":
        return N_("max(4·B·H·Lq·Lkv·d / (peak x FlashAttention-2 efficiency), Q,K,V,O bytes / BW)")
    if term == "element-wise":
        return N_(
            "Σ max(bytes / achievable BW, kernel floor) over norms, activations, adds, copies"
        )
    return N_("Σ max(2·M'·N'·K / (peak x e_c), bytes / (BW x e_m)) + launch, per GEMM / conv")
