"""Fitting a workload on a GPU: the largest batch and the longest sequence or context that
fit, and for inference the highest-precision weight format that does (``suanli mem --gpu``,
``suanli fit``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

if TYPE_CHECKING:
    from suanli.catalog.gpu import GPU


@dataclass(frozen=True, kw_only=True)
class Fit:
    """How a workload sits on one GPU model."""

    gpu_id: str
    gpu_memory_bytes: int
    usable_bytes: float
    fits: bool
    headroom_bytes: float
    max_batch: int
    """Largest micro-batch (training) or concurrent sequences (inference) that fits; 0 if none."""
    max_seq: int
    """Longest sequence (training) or context (inference) at the given batch; 0 if none."""
    best_format: str | None = None
    """Inference: the highest-precision weight format that fits, among those the card runs."""
    notes: tuple[str, ...] = field(default_factory=tuple)


#: Inference weight formats from highest to lowest fidelity, tried in this order; on a card
#: that lacks one (bf16 or fp8 on Turing, ...) its ``instead`` is tried in its place
#: (:func:`suanli.catalog.formats.runnable_formats`).
FORMAT_LADDER = (
    "bf16",
    "fp8",
    "int8",
    "gguf-q8_0",
    "gguf-q6_k",
    "gguf-q5_k_m",
    "nvfp4",
    "awq-4bit-g128",
    "gptq-4bit-g128",
    "gguf-q4_k_m",
    "nf4-dq",
    "gguf-q3_k_m",
    "gguf-q2_k",
)


def _largest(fits: Callable[[int], bool], limit: int) -> int:
    """Largest n in [1, limit] with ``fits(n)``, for a monotone ``fits``; 0 when even 1 fails."""
    if not fits(1):
        return 0
    lo = 1
    while lo < limit and fits(min(2 * lo, limit)):
        lo = min(2 * lo, limit)
    if lo == limit:
        return limit
    hi = min(2 * lo, limit)  # fits(lo) holds and fits(hi) fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def fit_training(spec: ModelSpec, work: TrainWork, gpu_id: str, memory_bytes: int) -> Fit:
    """Fit, headroom, the largest micro-batch and the longest sequence for training."""
    total = training_memory(spec, work).total_bytes
    max_batch = _largest(
        lambda n: training_memory(spec, replace(work, batch=n)).total_bytes <= memory_bytes, 1 << 16
    )
    max_seq = _largest(
        lambda n: training_memory(spec, replace(work, seq=n)).total_bytes <= memory_bytes,
        max(spec.max_position_embeddings, work.seq),
    )
    return Fit(
        gpu_id=gpu_id,
        gpu_memory_bytes=memory_bytes,
        usable_bytes=memory_bytes,
        fits=total <= memory_bytes,
        headroom_bytes=memory_bytes - total,
        max_batch=max_batch,
        max_seq=max_seq,
    )


def fit_inference(
    spec: ModelSpec, work: InferWork, gpu_id: str, memory_bytes: int, *, gpu: GPU | None = None
) -> Fit:
    """Fit for serving; with an engine reservation, weights + KV must fit in its share.
    ``gpu``: the card, so that the best format is one it runs (without it: any format)."""
    usable = memory_bytes * (work.gpu_memory_utilization or 1.0)
    total = inference_memory(spec, work).total_bytes
    limit = max(spec.max_position_embeddings, work.context)
    max_batch = _largest(
        lambda n: inference_memory(spec, replace(work, batch=n)).total_bytes <= usable, 1 << 16
    )
    max_ctx = _largest(
        lambda n: inference_memory(spec, replace(work, context=n)).total_bytes <= usable, limit
    )
    best = None
    ladder: tuple[str, ...] = FORMAT_LADDER
    if gpu is not None:
        from suanli.catalog.formats import runnable_formats

        ladder = runnable_formats(gpu, FORMAT_LADDER)
    for fid in ladder:
        if inference_memory(spec, replace(work, weight_format=fid)).total_bytes <= usable:
            best = fid
            break
    notes: tuple[str, ...] = ()
    if max_ctx == limit and limit == spec.max_position_embeddings:
        notes = (
            N_("context is capped by the model's max_position_embeddings ({limit:,})").format(
                limit=limit
            ),
        )
    return Fit(
        gpu_id=gpu_id,
        gpu_memory_bytes=memory_bytes,
        usable_bytes=usable,
        fits=total <= usable,
        headroom_bytes=usable - total,
        max_batch=max_batch,
        max_seq=max_ctx,
        best_format=best,
        notes=notes,
    )
