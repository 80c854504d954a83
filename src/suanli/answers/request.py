"""The workload a question is about, as every front-end gives it: one frozen request type.

:class:`WorkRequest` holds the shared workload options of ``mem``, ``perf``, ``plan``, ``fit``
and ``verify``; each field's default, bounds, choices and help are declared once in
:mod:`suanli.answers.options`, from which the CLI's ``--task``, ``--batch``, ... and the web
form's fields are generated. :func:`build_work` turns it into the estimators' :class:`TrainWork`
or :class:`InferWork`, raising ``ValueError`` with one sentence on inconsistent values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from suanli.answers.option_kinds import RECOMPUTE_AUTO
from suanli.answers.options import (
    INFER_ONLY_OPTIONS,
    INFER_OPTIONS,
    LAYOUT_FIELDS,
    PUE,
    WORK_OPTIONS,
    declared,
)
from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.i18n import N_
from suanli.units import GiB

#: Data-centre power usage effectiveness used for energy when none is given (declared in
#: :data:`suanli.answers.options.PUE`).
DEFAULT_PUE: float = PUE.default


@dataclass(frozen=True)
class WorkRequest:
    """What to run and how it is laid out (the CLI's workload options). Each field's meaning,
    unit, default and bounds: :data:`suanli.answers.options.OPTIONS` (``suanli mem --help``)."""

    task: str = declared("task")
    batch: int | None = declared("batch")
    global_batch: int | None = declared("global_batch")
    grad_accum: int = declared("grad_accum")
    seq: int = declared("seq")
    context: int = declared("context")
    dtype: str = declared("dtype")
    precision: str = declared("precision")
    optimizer: str = declared("optimizer")
    optimizer_impl: str = declared("optimizer_impl")
    ep_dispatcher: str = declared("ep_dispatcher")
    recompute: str = declared("recompute")
    attention: str = declared("attention")
    kernels: str = declared("kernels")
    fp8_scaling: str = declared("fp8_scaling")
    rope: str = declared("rope")
    zero: int = declared("zero")
    tp: int = declared("tp")
    pp: int = declared("pp")
    vpp: int = declared("vpp")
    pp_schedule: str = declared("pp_schedule")
    dp: int | None = declared("dp")
    ep: int = declared("ep")
    etp: int = declared("etp")
    sp: bool = declared("sp")
    shard_group: int = declared("shard_group")
    gpus: int | None = declared("gpus")
    offload_optimizer: bool = declared("offload_optimizer")
    offload_params: bool = declared("offload_params")
    lora_rank: int = declared("lora_rank")
    lora_targets: str = declared("lora_targets")
    dropout: float | None = declared("dropout")
    quant: str = declared("quant")
    kv_dtype: str = declared("kv_dtype")
    projections: str = declared("projections")
    dispatch: str = declared("dispatch")
    kv_update: str = declared("kv_update")
    gqa: str = declared("gqa")
    prefix_hit: float = declared("prefix_hit")
    spec_tokens: int = declared("spec_tokens")
    spec_acceptance: float | None = declared("spec_acceptance")
    spec_method: str = declared("spec_method")
    prefill_chunk: int | None = declared("prefill_chunk")
    gpu_layers: int | None = declared("gpu_layers")
    gpu_memory_utilization: float | None = declared("gpu_memory_utilization")
    cuda_context: float | None = declared("cuda_context")
    fragmentation: float | None = declared("fragmentation")
    nccl: float | None = declared("nccl")
    recompute_every: int = declared("recompute_every")
    recompute_modules: str = declared("recompute_modules")
    activation_offload: bool = declared("activation_offload")
    loss: str = declared("loss")
    saved_tensors: str = declared("saved_tensors")
    main_grads_fp32: bool = declared("main_grads_fp32")
    blocking_grad_reduce: bool = declared("blocking_grad_reduce")
    zero_buckets: str = declared("zero_buckets")
    optimizer_in_backward: bool = declared("optimizer_in_backward")
    images: int = declared("images")
    image_size: str | None = declared("image_size")
    framework: str = declared("framework")
    explicit: tuple[str, ...] | None = None
    """The options the user set, which a framework never changes; None: every option whose
    value differs from its default here."""

    @classmethod
    def from_options(cls, opts: dict[str, Any]) -> WorkRequest:
        """The request from a dict of options (extra keys are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in opts.items() if k in names})

    def shape_only(self, task: str, quant: str) -> WorkRequest:
        """This work with the layout reset to the defaults (what ``plan`` searches over)."""
        return replace(
            self,
            task=task,
            quant=quant,
            **{name: WORK_OPTIONS[name].default for name in LAYOUT_FIELDS},
        )


def lora_target_tuple(text: str) -> tuple[str, ...]:
    """``"q,k,v"`` -> ``("q", "k", "v")``; an empty list is an error."""
    targets = tuple(t.strip() for t in text.split(",") if t.strip())
    if not targets:
        raise ValueError(N_("--lora-targets is empty; give e.g. q,v or q,k,v,o,gate,up,down"))
    return targets


def apply_framework(req: WorkRequest) -> WorkRequest:
    """``req`` with its framework's defaults in every option the user did not set (see
    :attr:`WorkRequest.explicit`); a framework that cannot run the task is a ValueError."""
    from suanli.catalog.frameworks import frameworks, get_framework

    fw = get_framework(req.framework)
    if req.task == "infer" and not fw.serves():
        # The serving frameworks from the catalog itself: a hand list had already lost ollama.
        serving = ", ".join(f.id for f in frameworks() if f.kind == "serve")
        raise ValueError(
            N_(
                "--framework {framework} trains models; for --task infer use a serving framework "
                "({serving}) or hf"
            ).format(framework=fw.id, serving=serving)
        )
    if req.task != "infer" and fw.kind == "serve":
        raise ValueError(
            N_(
                "--framework {framework} serves models; use it with --task infer, or pick a "
                "training framework (suanli frameworks lists them)"
            ).format(framework=fw.id)
        )
    if req.explicit is not None:
        explicit = set(req.explicit)
    else:
        explicit = {f.name for f in fields(req) if getattr(req, f.name) != f.default}
    check_task_options(req, explicit)
    relevant = {d.option: d.value for d in fw.defaults if d.option not in explicit}
    if relevant.get("pp") == "gpus":
        # Layer split: one pipeline stage per GPU (llama.cpp, Ollama).
        relevant["pp"] = max(1, (req.gpus or 1) // max(req.tp, 1))
    if req.task == "infer":
        relevant = {k: v for k, v in relevant.items() if k in INFER_OPTIONS}
        if relevant.get("dispatch", req.dispatch) != "python":
            # A step the engine launches (a CUDA graph, a C++ runtime) needs fixed shapes: a
            # static or paged cache written in place, never a cache that grows by concatenation.
            relevant.pop("kv_update", None)
    else:
        relevant = {k: v for k, v in relevant.items() if k not in INFER_ONLY_OPTIONS}
    return replace(
        req, framework=fw.id, explicit=tuple(sorted(explicit | set(relevant))), **relevant
    )


def serving_engine(framework: str | None) -> str | None:
    """``framework``'s catalog id where it is a serving engine (vLLM, SGLang, TensorRT-LLM...),
    else ``None``."""
    from suanli.catalog.frameworks import get_framework

    if framework is None:
        return None
    fw = get_framework(framework)
    return fw.id if fw.kind == "serve" else None


def check_task_options(req: WorkRequest, given: set[str]) -> None:
    """An option the user set away from its default that the task never reads is a ValueError
    (``--quant int8`` with ``--task pretrain`` would otherwise answer for bf16 without a word);
    one left at its default is harmless (the page sends every field)."""
    for name in sorted(given):
        option = WORK_OPTIONS.get(name)
        if option is None or req.task in option.tasks:
            continue
        if getattr(req, name) == option.default:
            continue
        tasks = "infer" if option.tasks == ("infer",) else ", ".join(option.tasks)
        raise ValueError(
            N_(
                "--{option} applies to --task {tasks}, not {task}; drop it or change the task"
            ).format(option=option.name.replace("_", "-"), tasks=tasks, task=req.task)
        )


def framework_assumptions(req: WorkRequest) -> tuple[str, ...]:
    """One line per default the request's framework set (empty for ``hf``)."""
    from suanli.catalog.frameworks import get_framework

    fw = get_framework(req.framework)
    if not fw.defaults:
        return ()
    applied = apply_framework(req)
    lines = []
    for d in fw.defaults:
        if getattr(applied, d.option) == d.value and (
            req.explicit is None or d.option not in req.explicit
        ):
            lines.append(f"{fw.name} ({fw.version}): {d.option} = {d.value}: {d.why}")
    return tuple(lines)


def image_tokens(req: WorkRequest, spec: Any) -> int:
    """Tokens ``req.images`` images add to each sequence (0 without images); a model without a
    vision tower cannot take them."""
    if not req.images:
        return 0
    if req.images < 0 or req.images > 1024:
        raise ValueError(N_("--images must be 0 to 1024, got {images}").format(images=req.images))
    vision = getattr(spec, "vision", None)
    if vision is None:
        raise ValueError(
            N_(
                "--images applies to vision-language models (LLaVA-style configs with a "
                "vision_config); this model reads text only"
            )
        )
    width, height = image_pixels(req.image_size)
    per_image = vision.tokens_for(width, height) if width else vision.tokens_per_image
    return int(req.images * per_image)


def image_pixels(text: str | None, option: str = "--image-size") -> tuple[int, int]:
    """``"1024x768"`` -> (1024, 768), ``"1024"`` -> (1024, 1024); None -> (0, 0) (the model's
    default size). ``option`` names the option in the error."""
    if text is None:
        return 0, 0
    parts = str(text).strip().lower().replace("*", "x").split("x")
    if len(parts) == 1:
        parts = parts * 2
    try:
        width, height = (int(p) for p in parts)
    except ValueError:
        raise ValueError(
            N_("{option} {text!r} must be WIDTHxHEIGHT in pixels, e.g. 1024x768").format(
                option=option, text=text
            )
        ) from None
    if not (1 <= width <= 16384 and 1 <= height <= 16384):
        raise ValueError(
            N_("{option} {text!r}: each side must be 1 to 16384 pixels").format(
                option=option, text=text
            )
        )
    return width, height


def with_images(req: WorkRequest, spec: Any) -> WorkRequest:
    """``req`` with its images' tokens added to the context (inference) or sequence (training)."""
    extra = image_tokens(req, spec)
    if not extra:
        return req
    if req.task == "infer":
        return replace(req, context=req.context + extra)
    return replace(req, seq=req.seq + extra)


def with_file_format(req: WorkRequest, file_format: str | None) -> WorkRequest:
    """``req`` with the weight format a model file stores (a GGUF file's own mix) unless the
    user chose one; a quantised file is for inference only."""
    if file_format is None:
        return req
    if req.task != "infer":
        raise ValueError(
            N_(
                "a GGUF file holds quantised weights for inference; use --task infer (train "
                "from the model's config.json)"
            )
        )
    chosen = "quant" in req.explicit if req.explicit is not None else req.quant != "bf16"
    if chosen:
        return req
    explicit = None if req.explicit is None else (*req.explicit, "quant")
    return replace(req, quant=file_format, explicit=explicit)


def build_work(req: WorkRequest) -> TrainWork | InferWork:
    """The workload the request describes (its framework's defaults applied); raises
    ValueError on inconsistent values."""
    if req.task == "generate-image":
        raise ValueError(
            N_(
                "--task generate-image works with suanli perf and suanli mem on a text-to-image "
                "pipeline (sd-1.5, sdxl, sd3-medium, flux.1-dev, flux.1-schnell or a diffusers "
                "folder)"
            )
        )
    req = apply_framework(req)
    overheads = Overheads(
        cuda_context_bytes=req.cuda_context * GiB if req.cuda_context is not None else None,
        fragmentation=req.fragmentation,
        nccl_bytes=req.nccl * GiB if req.nccl is not None else None,
    )
    gpus = req.gpus
    if req.task == "infer":
        if req.pp > 1:
            if gpus is not None and gpus != req.tp * req.pp:
                raise ValueError(
                    N_("--gpus {gpus} != tp x pp = {product}; drop one of them").format(
                        gpus=gpus, product=req.tp * req.pp
                    )
                )
            tp = req.tp
        else:
            tp = req.tp if req.tp > 1 or gpus is None else gpus
        return InferWork(
            batch=req.batch or 1,
            context=req.context,
            weight_format=req.quant,
            kv_dtype=req.kv_dtype,
            tp=tp,
            pp=req.pp,
            prefill_chunk=req.prefill_chunk,
            gpu_layers=req.gpu_layers,
            gpu_memory_utilization=req.gpu_memory_utilization,
            overheads=overheads,
            projections=req.projections,
            kernels=req.kernels,
            dispatch=req.dispatch,
            kv_update=req.kv_update,
            gqa=req.gqa,
            engine=serving_engine(req.framework),
            prefix_hit=req.prefix_hit,
            spec_tokens=req.spec_tokens,
            spec_acceptance=req.spec_acceptance,
            spec_method=req.spec_method,
        )
    tp, pp = req.tp, req.pp
    if req.etp and tp % req.etp:
        raise ValueError(
            N_("--etp {etp} does not divide --tp {tp}; use 1 (whole experts) or --tp").format(
                etp=req.etp, tp=tp
            )
        )
    dp = req.dp
    if dp is None:
        if gpus is not None and gpus % (tp * pp):
            raise ValueError(
                N_("--gpus {gpus} is not a multiple of tp x pp = {product}").format(
                    gpus=gpus, product=tp * pp
                )
            )
        dp = gpus // (tp * pp) if gpus is not None else 1
    elif gpus is not None and gpus != dp * tp * pp:
        raise ValueError(
            N_("--gpus {gpus} != dp x tp x pp = {product}; drop one of them").format(
                gpus=gpus, product=dp * tp * pp
            )
        )
    batch = req.batch or 1
    grad_accum = req.grad_accum
    if req.global_batch is not None:
        per_step = batch * dp
        if req.global_batch % per_step:
            raise ValueError(
                N_("--global-batch {batch} is not a multiple of batch x dp = {per_step}").format(
                    batch=req.global_batch, per_step=per_step
                )
            )
        grad_accum = req.global_batch // per_step
    return TrainWork(
        task=req.task,
        batch=batch,
        seq=req.seq,
        grad_accum=grad_accum,
        dtype=req.dtype,
        precision=req.precision,
        optimizer=req.optimizer,
        optimizer_impl=req.optimizer_impl,
        ep_dispatcher=req.ep_dispatcher,
        # auto without a card to fit: none (answers/recompute.py settles it for a card).
        recompute="none" if req.recompute == RECOMPUTE_AUTO else req.recompute,
        attention=req.attention,
        parallel=Parallelism(
            dp=dp,
            tp=tp,
            pp=pp,
            vpp=req.vpp,
            pp_schedule=req.pp_schedule,
            sp=req.sp,
            ep=req.ep,
            etp=req.etp,
            zero=req.zero,
            shard=req.shard_group,
        ),
        offload_optimizer=req.offload_optimizer,
        offload_params=req.offload_params,
        lora_rank=req.lora_rank,
        lora_targets=lora_target_tuple(req.lora_targets),
        dropout=req.dropout,
        overheads=overheads,
        kernels=req.kernels,
        fp8_scaling=req.fp8_scaling,
        rope=req.rope,
        recompute_every=req.recompute_every,
        recompute_modules=tuple(m.strip() for m in req.recompute_modules.split(",") if m.strip()),
        activation_offload=req.activation_offload,
        loss=req.loss,
        main_grads_fp32=req.main_grads_fp32,
        blocking_grad_reduce=req.blocking_grad_reduce,
        saved_tensors=req.saved_tensors,
        zero_buckets=req.zero_buckets,
        optimizer_in_backward=req.optimizer_in_backward,
    )
