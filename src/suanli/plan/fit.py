"""The OOM remedy chain: what to change, in order, until a configuration fits.

The order is the one practitioners follow (the seed guides' out-of-memory checklist): (1) a
smaller micro-batch with gradient accumulation to keep the global batch; (2) activation
recomputation, selective then full; (3) lower precision: bf16 mixed precision, an 8-bit
optimizer, then a quantized base (QLoRA) for fine-tunes; (4) sharding across the GPUs:
ZeRO/FSDP stages, then tensor and pipeline parallelism; (5) CPU offload of the optimizer as the
last resort. Each step reports the memory it saves and what it costs in speed.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, replace

from suanli.catalog.gpu import GPU
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import Device, training_perf
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class Step:
    """One remedy and its effect."""

    stage: str
    """``batch``, ``recompute``, ``precision``, ``sharding`` or ``offload``."""
    change: str
    memory_bytes: float
    saved_bytes: float
    tokens_per_s: float
    speed_ratio: float
    """Throughput after / before this step (below 1 is a slowdown)."""
    fits: bool
    options: str


@dataclass(frozen=True, kw_only=True)
class FitPlan:
    """The walk down the chain."""

    start_bytes: float
    gpu_memory_bytes: int
    steps: tuple[Step, ...]
    fits: bool
    final: TrainWork
    final_options: str


def work_options(work: TrainWork) -> str:
    """A workload as command-line options a user can paste."""
    par = work.parallel
    parts = [
        f"--task {work.task}",
        f"--batch {work.batch}",
        f"--seq {work.seq}",
        f"--grad-accum {work.grad_accum}",
        f"--dtype {work.dtype}",
        f"--precision {work.precision}",
        f"--optimizer {work.optimizer}",
        f"--recompute {work.recompute}",
        f"--attention {work.attention}",
    ]
    if par.gpus > 1:
        parts += [f"--gpus {par.gpus}", f"--zero {par.zero}", f"--tp {par.tp}", f"--pp {par.pp}"]
        if par.sp:
            parts.append("--sp")
    if work.offload_optimizer:
        parts.append("--offload-optimizer")
    if work.offload_params:
        parts.append("--offload-params")
    if work.recompute_every > 1:
        parts.append(f"--recompute-every {work.recompute_every}")
    if work.recompute == "selective" and work.recompute_modules != ("core_attn",):
        parts.append(f"--recompute-modules {','.join(work.recompute_modules)}")
    if work.loss != "full":
        parts.append(f"--loss {work.loss}")
    if work.fused_kernels:
        # Fused and compiled norms and SwiGLU keep fewer tensors for backward.
        parts.append(f"--kernels {work.kernels}")
    if work.activation_offload:
        parts.append("--activation-offload")
    if work.optimizer_in_backward:
        parts.append("--optimizer-in-backward")
    if work.main_grads_fp32:
        parts.append("--main-grads-fp32")
    if work.saved_tensors != "hf":
        parts.append(f"--saved-tensors {work.saved_tensors}")
    if work.zero_buckets != "none":
        parts.append(f"--zero-buckets {work.zero_buckets}")
    if work.is_lora:
        parts += [f"--lora-rank {work.lora_rank}", f"--lora-targets {','.join(work.lora_targets)}"]
    return " ".join(parts)


#: The chain of plain PyTorch / Hugging Face (the ``hf`` framework's techniques).
DEFAULT_TECHNIQUES = frozenset(
    {"recompute", "adamw8bit", "lora", "qlora", "zero", "offload_optimizer"}
)
#: Every technique the chain can use (a framework's ``techniques`` list picks from these).
ALL_TECHNIQUES = frozenset(
    {
        "recompute",
        "loss",
        "activation_offload",
        "optimizer_in_backward",
        "adamw8bit",
        "lora",
        "qlora",
        "zero",
        "sp",
        "offload_optimizer",
        "offload_params",
    }
)


def _remedies(
    work: TrainWork, gpus: int, allowed: frozenset[str] = DEFAULT_TECHNIQUES
) -> Generator[tuple[str, str, TrainWork], TrainWork, None]:
    """Every step of the chain the framework offers, each on top of the ones kept: the caller
    sends back the work it keeps (the candidate, or the previous work when the step saved no
    memory, which is then not taken)."""
    current = work
    while current.batch > 1:  # (1) keep the global batch with accumulation
        candidate = replace(current, batch=current.batch // 2, grad_accum=current.grad_accum * 2)
        kept = yield (
            "batch",
            N_("micro-batch {batch}, gradient accumulation {accum}").format(
                batch=candidate.batch, accum=candidate.grad_accum
            ),
            candidate,
        )
        if kept is not candidate:
            break
        current = kept
    order = ("none", "selective", "op", "full")
    for mode in ("selective", "full") if "recompute" in allowed else ():  # (2)
        if order.index(current.recompute) < order.index(mode):
            current = yield (
                "recompute",
                N_("selective activation recomputation")
                if mode == "selective"
                else N_("full activation recomputation"),
                replace(current, recompute=mode, recompute_every=1),
            )
    if current.loss == "full" and "loss" in allowed:
        current = yield (
            "recompute",
            N_("chunked cross-entropy (fp32 logits 1/8 at a time)"),
            replace(current, loss="chunked"),
        )
    if not current.activation_offload and "activation_offload" in allowed:
        current = yield (
            "offload",
            N_("activation offloading to CPU memory"),
            replace(current, activation_offload=True),
        )
    if (
        not current.optimizer_in_backward
        and "optimizer_in_backward" in allowed
        and current.grad_accum == 1
        and not current.is_lora
    ):
        current = yield (
            "precision",
            N_("optimizer step in the backward pass (one gradient at a time)"),
            replace(current, optimizer_in_backward=True),
        )
    if current.fp32_storage:  # (3)
        current = yield (
            "precision",
            N_("bf16 mixed precision"),
            replace(current, dtype="bf16", precision="mixed"),
        )
    if current.optimizer in ("adamw", "sgd_momentum", "lion") and "adamw8bit" in allowed:
        current = yield (
            "precision",
            N_("8-bit AdamW (bitsandbytes)"),
            replace(current, optimizer="adamw8bit"),
        )
    # QLoRA keeps a LoRA fine-tune's method; for a full fine-tune it is a different method, so it
    # is offered only when there is no second GPU to shard over.
    if "qlora" in allowed and (current.task == "lora" or (current.task == "full" and gpus == 1)):
        before = current.task
        current = yield (
            "precision",
            N_("quantized NF4 base (QLoRA) instead of a full fine-tune")
            if before == "full"
            else N_("quantized NF4 base (QLoRA)"),
            replace(
                current,
                task="qlora",
                lora_targets=current.lora_targets
                if before == "lora"
                else ("q", "k", "v", "o", "gate", "up", "down"),
            ),
        )
    if gpus > 1 and "zero" in allowed:  # (4)
        dp = gpus
        current = yield (
            "sharding",
            N_("data parallel over {dp} GPUs with ZeRO-1").format(dp=dp),
            replace(current, parallel=replace(current.parallel, dp=dp, zero=1)),
        )
        for stage in (2, 3):
            current = yield (
                "sharding",
                N_("ZeRO-3 (FSDP full shard)") if stage == 3 else f"ZeRO-{stage}",
                replace(current, parallel=replace(current.parallel, zero=stage)),
            )
        tp = 2
        while tp <= min(gpus, 8):
            par = replace(
                current.parallel,
                tp=tp,
                dp=gpus // tp,
                sp=True,
                zero=min(current.parallel.zero, 3) if gpus // tp > 1 else 0,
            )
            current = yield (
                "sharding",
                N_("tensor parallel {tp} with sequence parallelism").format(tp=tp),
                replace(current, parallel=par),
            )
            tp *= 2
        pp = 2
        while current.parallel.tp * pp <= gpus:
            dp = gpus // (current.parallel.tp * pp)
            par = replace(
                current.parallel, pp=pp, dp=dp, zero=current.parallel.zero if dp > 1 else 0
            )
            current = yield (
                "sharding",
                N_("pipeline parallel {pp}").format(pp=pp),
                replace(current, parallel=par, grad_accum=max(current.grad_accum, pp)),
            )
            pp *= 2
    if not current.offload_optimizer and "offload_optimizer" in allowed:  # (5)
        current = yield (
            "offload",
            N_("optimizer states and master weights in CPU memory"),
            replace(current, offload_optimizer=True),
        )
    # Under LoRA and QLoRA the frozen base goes too (FSDP CPU offload, fsdp_qlora's recipe).
    if not current.offload_params and "offload_params" in allowed:
        current = yield (
            "offload",
            N_("parameters and gradients in CPU memory (one layer on the GPU at a time)"),
            replace(current, offload_params=True),
        )


def fit_chain(
    spec: ModelSpec,
    work: TrainWork,
    gpu: GPU,
    device: Device,
    gpus: int = 1,
    allowed: frozenset[str] = DEFAULT_TECHNIQUES,
) -> FitPlan:
    """Walk the remedy chain until ``work`` fits on ``gpu`` (``gpus`` of them at most), using
    only the ``allowed`` techniques (a framework's)."""
    limit = gpu.memory_bytes
    start = training_memory(spec, work).total_bytes
    before_speed = training_perf(spec, work, device).tokens_per_s
    steps: list[Step] = []
    current = work
    if start <= limit:
        return FitPlan(
            start_bytes=start,
            gpu_memory_bytes=limit,
            steps=(),
            fits=True,
            final=work,
            final_options=work_options(work),
        )
    last_bytes = start
    chain = _remedies(work, gpus, allowed)
    proposal = next(chain, None)
    while proposal is not None:
        stage, change, candidate = proposal
        kept = current
        try:
            memory = training_memory(spec, candidate).total_bytes
            speed = training_perf(spec, candidate, device).tokens_per_s
        except ValueError:
            memory = last_bytes
        # A step that saves no memory here (on one GPU without accumulation, recomputation
        # cannot beat the gradients' size) costs speed for nothing: it is not taken.
        if memory < last_bytes:
            fits = memory <= limit
            steps.append(
                Step(
                    stage=stage,
                    change=change,
                    memory_bytes=memory,
                    saved_bytes=last_bytes - memory,
                    tokens_per_s=speed,
                    speed_ratio=speed / before_speed,
                    fits=fits,
                    options=work_options(candidate),
                )
            )
            last_bytes, before_speed, kept = memory, speed, candidate
            if fits:
                current = kept
                break
        current = kept
        try:
            proposal = chain.send(kept)
        except StopIteration:
            proposal = None
    fits = bool(steps) and steps[-1].fits
    return FitPlan(
        start_bytes=start,
        gpu_memory_bytes=limit,
        steps=tuple(steps),
        fits=fits,
        final=current,
        final_options=work_options(current),
    )
