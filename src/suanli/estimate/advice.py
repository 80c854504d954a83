"""What to change when a training step is slow, and how it scales: each fix quantified by
re-estimating the step with :func:`suanli.estimate.perf.training_perf`."""

from __future__ import annotations

from dataclasses import replace

from suanli.estimate.memory import training_memory
from suanli.estimate.perf import Device, training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec


def advice(spec: ModelSpec, work: TrainWork, device: Device) -> list[dict[str, object]]:
    """What dominates the step and what would fix it, each fix quantified by re-estimating.

    Returns ``{"issue", "fix", "tokens_per_s_after", "speedup"}`` entries, largest gain first.
    """
    base = training_perf(spec, work, device)
    step = base.step_time_s
    par = work.parallel
    candidates: list[tuple[str, str, TrainWork]] = []
    # Accumulating four times the micro-batches answers both exposed gradient traffic and the
    # pipeline bubble.
    more_micro = replace(work, grad_accum=work.grad_accum * 4)
    dp_share = base.comm_detail_s.get("data_parallel", 0.0) / step
    if dp_share > 0.1:
        candidates.append(
            (
                N_("gradient communication is {share:.0%} of the step").format(share=dp_share),
                N_("accumulate more micro-batches (--grad-accum {grad_accum})").format(
                    grad_accum=more_micro.grad_accum
                ),
                more_micro,
            )
        )
        if par.zero < 2 and not work.is_lora:
            candidates.append(
                (
                    N_("gradient communication is {share:.0%} of the step").format(share=dp_share),
                    N_("shard gradients (--zero 2)"),
                    replace(work, parallel=replace(par, zero=2)),
                )
            )
    tp_share = base.comm_detail_s.get("tensor_parallel", 0.0) / step
    if tp_share > 0.1 and par.tp > 1:
        candidates.append(
            (
                N_("tensor-parallel collectives are {share:.0%} of the step").format(
                    share=tp_share
                ),
                N_("halve tensor parallelism (--tp {tp}, --dp {dp})").format(
                    tp=par.tp // 2, dp=par.dp * 2
                ),
                replace(work, parallel=replace(par, tp=par.tp // 2, dp=par.dp * 2)),
            )
        )
    bubble_share = base.breakdown_s["bubble"] / step
    if bubble_share > 0.1:
        candidates.append(
            (
                N_("the pipeline bubble is {share:.0%} of the step").format(share=bubble_share),
                N_("more micro-batches per step (--grad-accum {grad_accum})").format(
                    grad_accum=more_micro.grad_accum
                ),
                more_micro,
            )
        )
    memory_share = base.breakdown_s["memory"] / step
    if memory_share > 0.3:
        if not work.fused_kernels:
            candidates.append(
                (
                    N_("memory traffic is {share:.0%} of the step").format(share=memory_share),
                    N_("fuse the non-matmul ops (torch.compile: --kernels compiled)"),
                    replace(work, kernels="compiled"),
                )
            )
        candidates.append(
            (
                N_("memory traffic is {share:.0%} of the step").format(share=memory_share),
                N_("a larger micro-batch (--batch {batch})").format(batch=work.batch * 2),
                replace(work, batch=work.batch * 2),
            )
        )
    out: list[dict[str, object]] = []
    for issue, fix, changed in candidates:
        after = training_perf(spec, changed, device).tokens_per_s
        if after > base.tokens_per_s * 1.02:
            out.append(
                {
                    "issue": issue,
                    "fix": fix,
                    "tokens_per_s_after": after,
                    "speedup": after / base.tokens_per_s,
                }
            )
    return sorted(out, key=lambda a: -float(a["speedup"]))  # type: ignore[arg-type]


def scaling(
    spec: ModelSpec, work: TrainWork, device: Device, gpu_memory_bytes: int = 0
) -> dict[str, float | str | None]:
    """Speed-up of this layout over one GPU that runs the same global batch per optimizer step
    (the same micro-batch, ``grad_accum x dp`` micro-batches): strong scaling, so the one-GPU
    job's optimizer step is amortized over the same tokens as the layout's.

    With ``gpu_memory_bytes`` (the card's memory) the speed-up is given only when that one-GPU
    job fits the card; otherwise ``speedup`` and ``efficiency`` are None and ``reason`` says
    why (a speed-up against a job that cannot run means nothing). The speed-up is never above
    the GPU count: the layout does the one-GPU job's work split over its GPUs and adds only
    communication and bubbles (tests/estimate/test_floors_scaling.py checks it)."""
    gpus = work.parallel.gpus
    single = replace(work, parallel=Parallelism(), grad_accum=work.grad_accum * work.parallel.dp)
    if gpu_memory_bytes > 0 and gpus > 1:
        need = training_memory(spec, single).total_bytes
        if need > gpu_memory_bytes:
            return {
                "gpus": float(gpus),
                "speedup": None,
                "efficiency": None,
                "reason": N_(
                    "no speed-up over one GPU: one GPU would need {need:,.1f} GiB of its "
                    "{have:,.0f} GiB for this job"
                ).format(need=need / 2**30, have=gpu_memory_bytes / 2**30),
            }
    one = training_perf(spec, single, device)
    many = training_perf(spec, work, device)
    speedup = many.tokens_per_s / one.tokens_per_s
    return {
        "gpus": float(gpus),
        "speedup": speedup,
        "efficiency": speedup / gpus,
    }
