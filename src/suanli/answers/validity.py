"""Can this job run at all? Memory and precision, checked before any speed is given.

A speed for a job that does not fit, or in a precision the card has no units for, is a number
nobody can bet on: ``perf`` refuses it (with the ``suanli fit`` command to run) unless asked for
the hypothetical (``--ignore-fit``), and ``plan`` never ranks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.catalog import GPU
from suanli.catalog.formats import (
    attention_problem,
    refused_format,
    refused_kv,
    runnable_format,
    runnable_kv,
)
from suanli.estimate.fitting import fit_inference, fit_training
from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec
from suanli.units import GiB

#: Tensor precisions a training dtype needs units for, and what to offer instead.
TRAINING_PRECISIONS = ("fp8", "bf16", "fp16", "tf32")
#: The order in which a card's precisions are offered as alternatives.
OFFER_ORDER = ("fp8", "bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True, kw_only=True)
class Validity:
    """Whether a job can run on a card: memory and precision."""

    fits: bool
    """The job's memory per GPU fits in the card's."""
    supported: bool
    """The card has units for the job's precision."""
    memory_bytes: int
    """Memory the job needs per GPU."""
    gpu_memory_bytes: int
    problems: tuple[str, ...]
    """One sentence per problem, each saying what to do."""
    largest_batch: int = 0
    """Inference: the most concurrent sequences that fit at the work's context (0: none)."""


def card_precisions(gpu: GPU) -> tuple[str, ...]:
    """The dense tensor precisions the catalog lists for ``gpu``, fastest first."""
    return tuple(p for p in OFFER_ORDER if gpu.peak_flops(p))


def precision_problem(gpu: GPU, dtype: str) -> str | None:
    """Why ``gpu`` cannot train in ``dtype`` (None: it can).

    fp8 needs fp8 tensor cores (Ada, Hopper, Blackwell, CDNA 3, Gaudi 2+); tf32 and bf16 need
    Ampere,
    CDNA 2 or later (Turing and Volta have fp16 only: PyTorch's ``is_bf16_supported()`` is
    false there and Hugging Face refuses ``bf16=True``). A CPU runs any dtype in software.
    """
    if gpu.form_factor == "cpu" or dtype not in TRAINING_PRECISIONS or gpu.peak_flops(dtype):
        return None
    has = card_precisions(gpu)
    instead = training_dtype(gpu, dtype)
    arch = gpu.get("architecture") or gpu.vendor
    return N_(
        "{gpu} ({arch}) has no {dtype} tensor units (it has {has}); use --dtype {instead}"
    ).format(gpu=gpu.id, arch=arch, dtype=dtype, has=", ".join(has) or "none", instead=instead)


def training_dtype(gpu: GPU, dtype: str) -> str:
    """``dtype`` where ``gpu`` trains in it, else the precision it would really use: its
    fastest of fp8/bf16/fp16 (bf16 becomes fp16 on Turing and Volta), else fp32."""
    if gpu.form_factor == "cpu" or dtype not in TRAINING_PRECISIONS or gpu.peak_flops(dtype):
        return dtype
    has = card_precisions(gpu)
    return next((p for p in has if p in TRAINING_PRECISIONS and p != "tf32"), "fp32")


def precision_lack(gpu: GPU, dtype: str) -> str | None:
    """What ``gpu`` lacks to train in ``dtype`` and what to use instead, without the card's name
    (a plan row's reason); None when it can."""
    if precision_problem(gpu, dtype) is None:
        return None
    has = card_precisions(gpu)
    instead = training_dtype(gpu, dtype)
    return N_("no {dtype} tensor units (it has {has}); use --dtype {instead}").format(
        dtype=dtype, has=", ".join(has) or "none", instead=instead
    )


def _infer_lack(gpu: GPU, work: InferWork) -> str | None:
    """What ``gpu`` lacks for the work's weight format and KV dtype, one sentence."""
    weights = refused_format(gpu, work.weight_format)
    kv = refused_kv(gpu, work.kv_dtype)
    if weights and kv:
        return N_(
            "{gpu} ({arch}) cannot run {format} weights or keep the KV cache in {dtype} (it has "
            "{has}); "
            "use --quant {quant} --kv-dtype {kv}"
        ).format(
            gpu=gpu.id,
            arch=gpu.get("architecture") or gpu.vendor,
            format=work.weight_format,
            dtype=work.kv_dtype,
            has=", ".join(card_precisions(gpu)) or "none",
            quant=runnable_format(gpu, work.weight_format),
            kv=runnable_kv(gpu, work.kv_dtype),
        )
    return weights or kv


def training_lack(gpu: GPU, work: TrainWork) -> str | None:
    """What ``gpu`` lacks to train ``work`` (its dtype, its attention kernel), without the card's
    name (a plan row's reason); None when it can."""
    lack = precision_lack(gpu, work.dtype)
    if lack is None and attention_problem(gpu, work.attention):
        lack = (
            N_("no Triton FlashAttention kernel (NVIDIA Ampere and later); use --attention sdpa")
            if work.attention == "triton"
            else N_(
                "no FlashAttention-2 kernels (Ampere or CDNA 2 and later); use --attention sdpa"
            )
        )
    return lack


def fit_command(model: str, work: TrainWork | InferWork, gpu: GPU) -> str:
    """The command that says what to change for the job to fit."""
    if isinstance(work, InferWork):
        return f"suanli mem {model} --task infer --context {work.context} --gpu {gpu.id}"
    from suanli.plan.fit import work_options

    return f"suanli fit {model} {work_options(work)} --gpu {gpu.id}"


def check_job(model: str, spec: ModelSpec, work: TrainWork | InferWork, gpu: GPU) -> Validity:
    """Memory and precision of ``work`` on one ``gpu`` (per GPU of its layout)."""
    problems: list[str] = []
    if isinstance(work, InferWork):
        need = inference_memory(spec, work).total_bytes
        card_fit = fit_inference(spec, work, gpu.id, gpu.memory_bytes, gpu=gpu)
        fits, largest = card_fit.fits, card_fit.max_batch
        # A weight format or KV dtype the card has no units or kernels for is refused like a
        # training precision it lacks (catalog/data/quant.toml, needs; docs/speed.md).
        lacks = [_infer_lack(gpu, work)]
    else:
        need = training_memory(spec, work).total_bytes
        fits, largest = fit_training(spec, work, gpu.id, gpu.memory_bytes).fits, 0
        lacks = [precision_problem(gpu, work.dtype), attention_problem(gpu, work.attention)]
    problems.extend(p for p in lacks if p)
    supported = not problems
    if not fits:
        problems.append(
            (
                N_(
                    "{model} inference needs {need:,.1f} GiB per GPU and {gpu} has "
                    "{have:,.0f} GiB; run '{command}' for what to change"
                )
                if isinstance(work, InferWork)
                else N_(
                    "{model} {task} needs {need:,.1f} GiB per GPU and {gpu} has "
                    "{have:,.0f} GiB; run '{command}' for what to change"
                )
            ).format(
                model=model,
                task="" if isinstance(work, InferWork) else work.task,
                need=need / GiB,
                gpu=gpu.id,
                have=gpu.memory_bytes / GiB,
                command=fit_command(model, work, gpu),
            )
        )
    return Validity(
        fits=fits,
        supported=supported,
        memory_bytes=round(need),
        gpu_memory_bytes=gpu.memory_bytes,
        problems=tuple(problems),
        largest_batch=largest,
    )
