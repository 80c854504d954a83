"""What can this card do? The largest model that fits for each common job, what it runs at,
and the popular models that fit (``suanli card [GPU]``: the practitioners' first question,
"这卡能跑多少B参数的模型?").

The largest size comes from a ladder of real dense models of one family (Qwen2.5 0.5B to 72B,
then Llama 3.1 405B): the biggest rung that fits is named, and the size between it and the next
rung is interpolated from their memory (memory grows about linearly with parameters within one
family). Every number is the same estimate ``suanli mem`` and ``suanli perf`` give.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from suanli.answers.base import NOT_IN_JSON, Answer
from suanli.answers.model_source import load_model
from suanli.answers.options import WORK_OPTIONS
from suanli.answers.recompute import AUTO, settle_work
from suanli.answers.request import WorkRequest, build_work
from suanli.answers.validity import training_dtype
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.formats import get_format, runnable_format, runnable_kv
from suanli.catalog.prices import Price, buy_price, rent_price
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec

#: Real dense models of growing size: the rungs of "the largest model that fits".
LADDER = (
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-3b",
    "qwen2.5-7b",
    "qwen2.5-14b",
    "qwen2.5-32b",
    "qwen2.5-72b",
    "llama-3.1-405b",
)
#: The popular models shown with their fit (dense and MoE, 4B to 671B).
POPULAR = (
    "qwen3-4b",
    "qwen3-8b",
    "llama-3.1-8b",
    "gemma-3-12b",
    "qwen3-14b",
    "qwen3-30b-a3b",
    "qwen3-32b",
    "llama-3.3-70b",
    "deepseek-r1",
)
#: Inference weight formats by the name users know them (on a card without bf16 the first is
#: fp16: :func:`suanli.catalog.formats.runnable_format`).
INFER_FORMATS = (("bf16", "bf16"), ("int8", "int8"), ("4-bit", "gguf-q4_k_m"))
#: Format of each label, the fp16 that stands in for bf16 included.
_FORMAT_OF = {**dict(INFER_FORMATS), "fp16": "fp16"}
TRAIN_TASKS = ("full", "lora", "qlora")
#: Tokens generated in the decode-speed estimate (its prompt fills the rest of the context).
DECODE_TOKENS = 256


@dataclass(frozen=True)
class CardRequest:
    """The card (or the local GPU), how many, and the jobs' settings."""

    gpu: str
    """A catalog name or alias (``4090``, ``rtx-3060-12gb``)."""
    gpus: int = 1
    """Cards in the machine: training shards over them (ZeRO-3), inference splits (tensor
    parallel)."""
    seq: int = WORK_OPTIONS["seq"].default
    """Training sequence length (tokens): the workload's default."""
    contexts: tuple[int, ...] = (WORK_OPTIONS["context"].default, 32768)
    """Inference context lengths (tokens) to answer for."""
    presets: tuple[str, ...] = POPULAR
    """The models shown with their fit."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""
    rent: float | None = None
    """Rent per GPU-hour in USD, shown as ``given`` (default: the data's)."""
    price: float | None = None
    """Purchase price per GPU in USD, shown as ``given`` (default: the data's)."""


@dataclass(frozen=True, kw_only=True)
class Job:
    """One way to use a model: training (full, LoRA, QLoRA) or inference in a weight format at
    a context length."""

    id: str
    """``train-full``, ``train-lora``, ``train-qlora``, ``infer-bf16-4k``, ..."""
    task: str
    """``full``, ``lora``, ``qlora`` or ``infer``."""
    weights: str
    """Weight format: ``bf16``, ``int8``, ``4-bit`` (GGUF Q4_K_M), ``nf4`` (QLoRA's base)."""
    tokens: int
    """Training sequence or inference context, in tokens."""


@dataclass(frozen=True, kw_only=True)
class Capability:
    """The largest model a job fits on the card, and its speed."""

    job: Job
    largest_model: str | None
    """The biggest rung of the ladder that fits (None: not even the smallest)."""
    largest_params: float | None
    """Its parameter count."""
    about_params: float | None
    """The size that would just fit, interpolated between that rung and the next (None when
    nothing fits or the top rung fits: then the card holds more than the ladder asks)."""
    memory_bytes: float | None
    """Memory the largest model needs per card for this job."""
    tokens_per_s: float | None
    """Its speed: training tokens per second over all cards, or decode tokens per second of
    one stream at this context."""


@dataclass(frozen=True, kw_only=True)
class ModelFit:
    """One popular model on the card: for each job, whether it fits and how fast it runs."""

    model: str
    params: float
    fits: tuple[bool, ...]
    """In the order of :attr:`CardAnswer.jobs`."""
    tokens_per_s: tuple[float | None, ...]
    """Speed where it fits (as in :class:`Capability`), None where it does not."""


@dataclass(frozen=True, kw_only=True)
class CardAnswer(Answer):
    """What a card can do, job by job."""

    schema_name = "card"

    gpu: str
    name: str
    memory_bytes: int
    """One card's memory."""
    gpus: int
    jobs: tuple[Job, ...]
    capabilities: tuple[Capability, ...]
    models: tuple[ModelFit, ...]
    assumptions: tuple[str, ...]
    device: GPU | None = field(default=None, metadata=NOT_IN_JSON)
    rent: Price | None = None
    """What one card rents for per GPU-hour, with its provider, kind and date: the price every
    view shows for it (:func:`suanli.catalog.prices.rent_price`), or the request's."""
    buy: Price | None = None
    """What one card costs to buy, with its kind and date (:func:`buy_price`), or the
    request's."""


def jobs_for(req: CardRequest, gpu: GPU | None = None) -> tuple[Job, ...]:
    """Training at ``req.seq``, then each inference format at each context; with ``gpu``, each
    labelled with the precision the card really uses (fp16 where it has no bf16)."""
    train = training_dtype(gpu, "bf16") if gpu is not None else "bf16"
    out = [
        Job(id=f"train-{t}", task=t, weights="nf4" if t == "qlora" else train, tokens=req.seq)
        for t in TRAIN_TASKS
    ]
    for context in req.contexts:
        for name, fmt in INFER_FORMATS:
            label = name
            if gpu is not None and runnable_format(gpu, fmt) != fmt:
                label = runnable_format(gpu, fmt)
            out.append(
                Job(
                    id=f"infer-{label}-{_short(context)}",
                    task="infer",
                    weights=label,
                    tokens=context,
                )
            )
    return tuple(out)


def _short(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens % 1024 == 0 else str(tokens)


def _work(job: Job, gpus: int, spec: ModelSpec, gpu: GPU) -> TrainWork | InferWork:
    memory_bytes = gpu.memory_bytes
    if job.task == "infer":
        quant = _FORMAT_OF[job.weights]
        # Over several cards: tensor parallel where the heads divide evenly (vLLM), else the
        # layers split across the cards (llama.cpp's default, vLLM's pipeline parallel).
        heads = spec.attention.num_heads
        kv_heads = spec.attention.num_kv_heads
        even = heads % gpus == 0 and (kv_heads % gpus == 0 or gpus % kv_heads == 0)
        tp, pp = (gpus, 1) if gpus == 1 or even else (1, gpus)
        kv = runnable_kv(gpu, "bf16")
        # A serving engine's launches (vLLM, llama.cpp), as the assumption says: transformers'
        # Python dispatch would cap every small model at the host's pace.
        options: dict[str, Any] = {
            "context": job.tokens,
            "quant": quant,
            "kv_dtype": kv,
            "tp": tp,
            "pp": pp,
        }
        return build_work(
            WorkRequest(
                task="infer", dispatch="engine", explicit=("task", "dispatch", *options), **options
            )
        )
    # Batch 1, recomputation settled as mem and perf settle it (the lightest that fits): the
    # usual "does it fit at all" setting; over several cards the weights, gradients and
    # optimizer states are sharded (ZeRO-3 / FSDP).
    request = WorkRequest(
        task=job.task,
        batch=1,
        seq=job.tokens,
        recompute=AUTO,
        gpus=gpus,
        zero=3 if gpus > 1 else 0,
        dtype=training_dtype(gpu, "bf16"),
    )
    return settle_work(request, spec, memory_bytes)[0]


class _Estimator:
    """Memory and speed of one job on the card, cached per model."""

    def __init__(self, gpu: GPU, gpus: int) -> None:
        self.gpu = gpu
        self.gpus = gpus
        self._devices: dict[str, object] = {}

    def need_bytes(self, spec: ModelSpec, work: TrainWork | InferWork) -> float:
        if isinstance(work, InferWork):
            return float(inference_memory(spec, work).total_bytes)
        return float(training_memory(spec, work).total_bytes)

    def fits(self, spec: ModelSpec, work: TrainWork | InferWork) -> bool:
        return self.need_bytes(spec, work) <= self.gpu.memory_bytes

    def speed(self, spec: ModelSpec, work: TrainWork | InferWork) -> float:
        infer = isinstance(work, InferWork)
        dtype = get_format(work.weight_format).gemm_dtype if infer else work.dtype  # type: ignore[union-attr]
        device = self._devices.get(dtype)
        if device is None:
            device = device_for(self.gpu, dtype, gpus_per_node=self.gpus, auto_calibration=False)
            self._devices[dtype] = device
        if isinstance(work, InferWork):
            prompt = max(work.context - DECODE_TOKENS, 1)
            result = inference_perf(spec, work, device, prompt, DECODE_TOKENS)  # type: ignore[arg-type]
            return 1.0 / result.tpot_s
        return training_perf(spec, work, device).tokens_per_s  # type: ignore[arg-type]


def _capability(job: Job, est: _Estimator, ladder: list[LoadedModel], gpus: int) -> Capability:
    works = [_work(job, gpus, m.spec, est.gpu) for m in ladder]
    needs = [est.need_bytes(m.spec, w) for m, w in zip(ladder, works, strict=True)]
    fitting = [i for i, need in enumerate(needs) if need <= est.gpu.memory_bytes]
    if not fitting:
        return Capability(
            job=job,
            largest_model=None,
            largest_params=None,
            about_params=None,
            memory_bytes=None,
            tokens_per_s=None,
        )
    top = max(fitting)
    model = ladder[top]
    about = None
    if top + 1 < len(ladder) and needs[top + 1] > needs[top]:
        bigger = ladder[top + 1]
        share = (est.gpu.memory_bytes - needs[top]) / (needs[top + 1] - needs[top])
        about = model.params.total + share * (bigger.params.total - model.params.total)
    return Capability(
        job=job,
        largest_model=model.location,
        largest_params=float(model.params.total),
        about_params=about,
        memory_bytes=needs[top],
        tokens_per_s=est.speed(model.spec, works[top]),
    )


def card(req: CardRequest, *, loader: Callable[[str], LoadedModel] = load_model) -> CardAnswer:
    """The largest model each job fits on ``req.gpu`` (times ``req.gpus``), its speed, and the
    popular models' fit. Raises ``ValueError`` with one sentence on an unknown or ambiguous card
    or bad settings."""
    if req.gpus < 1:
        raise ValueError(N_("--gpus must be at least 1"))
    if not req.contexts:
        raise ValueError(N_("give at least one inference context length"))
    gpu = find_gpu(req.gpu, load_catalog(req.catalog_file))
    est = _Estimator(gpu, req.gpus)
    jobs = jobs_for(req, gpu)
    ladder = [loader(name) for name in LADDER]
    capabilities = tuple(_capability(job, est, ladder, req.gpus) for job in jobs)
    models = []
    for name in req.presets:
        loaded = loader(name)
        works = [_work(job, req.gpus, loaded.spec, gpu) for job in jobs]
        fits = tuple(est.fits(loaded.spec, w) for w in works)
        speeds = tuple(
            est.speed(loaded.spec, w) if ok else None for ok, w in zip(fits, works, strict=True)
        )
        models.append(
            ModelFit(
                model=loaded.location,
                params=float(loaded.params.total),
                fits=fits,
                tokens_per_s=speeds,
            )
        )
    return CardAnswer(
        gpu=gpu.id,
        name=gpu.name,
        memory_bytes=gpu.memory_bytes,
        gpus=req.gpus,
        jobs=jobs,
        capabilities=capabilities,
        models=tuple(models),
        assumptions=_assumptions(req, gpu),
        device=gpu,
        rent=rent_price(gpu, override_usd_per_hour=req.rent),
        buy=buy_price(gpu, override_usd_per_gpu=req.price),
    )


def _assumptions(req: CardRequest, gpu: GPU) -> tuple[str, ...]:
    # English values in the JSON, marked for the catalog: a view shows them translated.
    shard = (
        N_(
            "over several cards: training shards weights, gradients and optimizer states "
            "(ZeRO-3 / FSDP), inference splits the model (tensor or pipeline parallel)"
        )
        if req.gpus > 1
        else N_("one card")
    )
    sixteen = training_dtype(gpu, "bf16")
    lacks = (
        (
            N_(
                "{gpu} has no bf16: training runs in {dtype} mixed precision, inference in "
                "{weights} weights with a {kv} KV cache"
            ).format(
                gpu=gpu.id,
                dtype=sixteen,
                weights=runnable_format(gpu, "bf16"),
                kv=runnable_kv(gpu, "bf16"),
            ),
        )
        if sixteen != "bf16"
        else ()
    )
    return (
        shard,
        *lacks,
        N_(
            "training: micro-batch 1, gradient checkpointing only where the job needs it to fit "
            "(as suanli mem and perf settle --recompute auto), AdamW, bf16 mixed precision; "
            "LoRA rank 16 on q,k,v,o; QLoRA on an NF4 base with double quantization"
        ),
        N_(
            "inference: one stream; speed is decode tokens/s with the context filled, launched by "
            "a serving engine (CUDA graphs or C++: vLLM, llama.cpp); 4-bit is GGUF Q4_K_M "
            "(llama.cpp / Ollama); transformers' generate() is slower on small models (suanli "
            "perf --framework hf)"
        ),
        N_(
            "the largest model is the biggest of Qwen2.5 0.5B/1.5B/3B/7B/14B/32B/72B and Llama "
            "3.1 405B that fits; 'about' interpolates between it and the next size by their "
            "memory"
        ),
        N_(
            "memory as suanli mem counts it (CUDA context and allocator overhead included); "
            "speed as suanli perf estimates it"
        ),
    )


def local_card() -> tuple[str, int]:
    """The local GPU's catalog name and how many of them there are; ``ValueError`` with one
    sentence when there is no GPU or it is not in the catalog."""
    from suanli.live.bench.profile import local_gpu
    from suanli.live.devices import gpu_samples

    samples = gpu_samples()
    if not samples:
        raise ValueError(
            N_(
                "no local GPU was found; name a card instead, e.g. suanli card 4090 "
                "(suanli gpus lists them)"
            )
        )
    name = samples[0].name
    gpu, _gpu_id = local_gpu(name)
    if gpu is None:
        raise ValueError(
            N_(
                "the local GPU {name!r} is not in the catalog; name the closest card, e.g. "
                "suanli card 4090 (suanli gpus lists them)"
            ).format(name=name)
        )
    same = sum(1 for s in samples if s.name == name)
    return gpu.id, same
