"""Data-parallel gradient and parameter traffic a training step cannot hide: DDP's bucketed
all-reduce overlap, and ZeRO-3/FSDP's per-unit gathers and reduce-scatters, phase by phase
(docs/speed.md). Shared by the scalar step (:mod:`suanli.estimate.perf`) and the vectorized
planner (:mod:`suanli.estimate.vector`); floats or numpy arrays alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.estimate.comm import all_gather_s, reduce_scatter_s
from suanli.estimate.workload import TrainWork

#: Fraction of the gradient all-reduce that overlaps the backward pass with bucketing
#: (PyTorch DDP and DeepSpeed overlap bucket reductions with the rest of backward; Li et al.
#: 2020, "PyTorch Distributed", §3.2.3). The last bucket cannot overlap.
DP_OVERLAP = 0.9


def dp_bytes(work: TrainWork, trainable: Any, param_bytes: float) -> tuple[Any, Any, Any]:
    """(gradient bytes, bytes reduced, bytes gathered back) of one data-parallel sync, for
    ``trainable`` parameters stored in ``param_bytes`` each.

    The gradients are the parameters' bytes (4 for LoRA's adapters). With ``main_grads_fp32``
    (Megatron reduces bf16 training's gradients in its fp32 main-grad buffer:
    ``accumulate_allreduce_grads_in_fp32``) full-weight gradients are reduced in 4 bytes, and a
    distributed optimizer gathers the updated parameters back in their own bytes; otherwise
    both collectives move the gradients' bytes."""
    grads = trainable * (4 if work.is_lora else param_bytes)
    if work.main_grads_fp32 and not work.is_lora:
        return grads, trainable * 4, trainable * param_bytes
    return grads, grads, grads


def all_reduce_bytes(
    zero: Any,
    reduce_bytes: Any,
    gather_bytes: Any,
    *,
    where: Callable[[Any, Any, Any], Any] = lambda c, a, b: a if c else b,
) -> Any:
    """Bytes of the one all-reduce ZeRO 0 and 1 run (:func:`dp_bytes`' reduced and gathered
    bytes): the reduced bytes at ZeRO 0; at ZeRO 1 their mean, so a ring all-reduce's
    reduce-scatter and all-gather halves move what the distributed optimizer's two collectives
    do. ``where`` is numpy's for arrays."""
    return where(zero == 0, reduce_bytes, (reduce_bytes + gather_bytes) / 2)


def grad_reduce_overlap(work: TrainWork) -> float:
    """The share of the last micro-batch's backward a ZeRO 0-2 gradient reduction hides behind:
    :data:`DP_OVERLAP`, or 0 when it blocks (``work.blocking_grad_reduce``)."""
    return 0.0 if work.blocking_grad_reduce else DP_OVERLAP


def fsdp_root_s(root_bytes: Any, work: TrainWork, group: Any, link: Any) -> Any:
    """Seconds of FSDP traffic that nothing can hide: the root unit (embeddings, final norm, LM
    head, which FSDP wraps with the model itself) is gathered before each micro-batch's forward
    and again before its backward (it is resharded after forward), and its gradients are
    reduce-scattered after the last layer's backward (each :func:`fsdp_syncs`), when no compute
    is left to overlap
    (torchtitan 9dec370 parallelize_llama.py: ``fully_shard(model, reshard_after_forward=not
    pp_enabled)``). With a pipeline it is gathered once a step: not resharded after forward, and
    kept across the micro-batches (torch.distributed.pipelining sets
    ``set_reshard_after_backward(False)`` on all but the last backward). LoRA freezes the root:
    no gradients to reduce."""
    gather = all_gather_s(root_bytes, group, link)
    scatter = 0.0 if work.is_lora else reduce_scatter_s(root_bytes, group, link)
    gathers = 2 * work.grad_accum if work.parallel.pp == 1 else 1
    return gathers * gather + fsdp_syncs(work) * scatter


def fsdp_exposed_s(
    *,
    work: TrainWork,
    weight_bytes: Any,
    grad_bytes: Any,
    root_bytes: Any,
    units: Any,
    group: Any,
    bandwidth: Any,
    ring_latency: Any,
    base: Any,
    per_micro_s: Any,
    replica_s: Any,
    root_s: Any,
    micro_batches: Any,
    syncs: Any,
    backward_passes: Any,
    gathers_per_unit: Any = 1,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Exposed ZeRO-3/FSDP seconds per step, unit by unit and phase by phase (docs/speed.md).

    Each of the ``units`` layer units is all-gathered once per pass and reduce-scattered once
    per sync, one collective each: ``(n-1)/n · bytes / bandwidth + ring_latency + base``
    (Rajbhandari et al. 2020 for the volume; NCCL's ring). The next unit's gather is prefetched
    behind this unit's compute (Zhao et al. 2023, §3.3): the forward's gathers hide behind the
    forward, the backward's gathers, reduce-scatters and the HSDP replicas' all-reduce
    (``replica_s``) behind the backward (recomputation included), each at ``DP_OVERLAP``; the
    optimizer step hides nothing. ``root_s``: the root unit's exposed traffic
    (:func:`fsdp_root_s`); ``micro_batches`` per step, ``syncs`` of them reduce-scatter
    (:func:`fsdp_syncs`); ``backward_passes`` gathers of each unit after the forward's
    (:func:`fsdp_backward_gathers`). ``gathers_per_unit``: all-gathers per unit and pass, 1 for
    FSDP, DeepSpeed's prefetch buckets (:func:`zero3_gathers_per_unit`). Floats or numpy arrays
    (ints for ``group``)."""
    n = group
    share = (n - 1) / n / bandwidth
    layer_weights = maximum(weight_bytes - root_bytes, 0.0)
    layer_grads = maximum(grad_bytes - (0.0 if work.is_lora else root_bytes), 0.0)
    fixed = units * (ring_latency + base) * (n > 1)
    gather = share * layer_weights + gathers_per_unit * fixed
    scatter = share * layer_grads + fixed + replica_s
    full = work.recompute == "full"
    forward_s = per_micro_s / (4 if full else 3)
    backward_s = per_micro_s - forward_s
    exposed_forward = maximum(0.0, gather - DP_OVERLAP * forward_s)
    # Resharded after forward, a unit is gathered again for the backward (and the recomputed
    # forward); with a pipeline it is not resharded (torchtitan: reshard_after_forward=not
    # pp_enabled), so the backward reuses the forward's gather.
    backward_gathers = backward_passes * gather
    synced = maximum(0.0, backward_gathers + scatter - DP_OVERLAP * backward_s)
    unsynced = maximum(0.0, backward_gathers - DP_OVERLAP * backward_s)
    m = micro_batches
    # With a pipeline the units stay gathered across the micro-batches (set_reshard_after_
    # backward(False) on all but the last backward): the first forward gathers.
    gathering = maximum(m * (backward_passes > 0), 1)
    return root_s + gathering * exposed_forward + syncs * synced + (m - syncs) * unsynced


def fsdp_backward_gathers(work: TrainWork, pp: Any) -> Any:
    """Gathers of a layer unit per micro-batch after its forward's: one for the backward and one
    more for full recomputation's forward, none with a pipeline (FSDP keeps the forward's
    gather: torchtitan's ``reshard_after_forward=not pp_enabled``, and the schedule keeps it
    across micro-batches: torch.distributed.pipelining ``set_reshard_after_backward(False)``
    on all but the last backward, so only the first micro-batch's forward gathers). ``pp``: an
    int or an array of pipeline degrees."""
    again = 2 if work.recompute == "full" else 1
    return (pp == 1) * again


def fsdp_syncs(work: TrainWork) -> int:
    """Gradient reduce-scatters per optimizer step under ZeRO-3 / FSDP: one per micro-batch
    without pipeline parallelism, because sharded gradients cannot wait unreduced (DeepSpeed
    ZeRO-3 reduces in every backward and refuses ``no_sync``; FSDP2 reduce-scatters every
    backward unless told ``set_requires_gradient_sync(False)``, which torchtitan and torchtune
    do not call); one per step with a pipeline, whose schedule syncs only the last backward
    (torch.distributed.pipelining ``backward_maybe_with_nosync``)."""
    return work.grad_accum if work.parallel.pp == 1 else 1
