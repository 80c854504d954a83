"""How many parameters each part of a model puts on one GPU, and the sizes of training's
extra tensors: the split by pipeline stage and tensor shard, one layer, the largest tensor, LoRA
adapters and DeepSpeed ZeRO's buckets. Used by the memory breakdown (:mod:`suanli.estimate.memory`),
its vectorised twin (:mod:`suanli.estimate.vector`) and the speed model."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from suanli.catalog.formats import get_format
from suanli.estimate.expert_parallel import expert_tp
from suanli.estimate.shapes import linear_shapes
from suanli.estimate.workload import TrainWork, check_tensor_parallel
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec

# --- parameters on one GPU -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ParamSplit:
    """Parameters that live on the busiest GPU before ZeRO sharding."""

    total: float
    layer_linear: float
    """Linear weights inside the layers (what LoRA freezes and QLoRA quantizes)."""
    other: float
    """Embeddings, LM head, norms, biases, routers."""
    layers_on_stage: int


@lru_cache(maxsize=1024)
def param_split(spec: ModelSpec, tp: int = 1, pp: int = 1, ep: int = 1) -> ParamSplit:
    """Parameters per GPU: layers over ``pp`` stages, matrices over ``tp`` (Megatron splits
    attention heads, MLP width and the vocabulary), routed experts over ``ep``. Cached: a
    model's split depends on the layout alone, and the estimators ask for it per layout."""
    check_tensor_parallel(spec.attention.num_heads, tp, spec.name)
    counts = count_params(spec).by_component
    layers_on_stage = math.ceil(spec.num_layers / pp)
    stage_fraction = layers_on_stage / spec.num_layers
    linear = _dense_linear_params(spec)
    experts = counts["experts"] / ep
    layer_other = counts["attention"] + counts["mlp"] + counts["shared_experts"] - linear
    layer_linear = (linear + experts) * stage_fraction / tp
    layer_rest = (layer_other + counts["router"]) * stage_fraction
    norms = counts["norms"] * stage_fraction
    # The first stage holds the embeddings, the last the LM head; the busier one counts.
    edge = max(counts["embeddings"], counts["lm_head"] or counts["embeddings"]) / tp
    if pp == 1:
        edge = (counts["embeddings"] + counts["lm_head"]) / tp
    # A vision tower and its projector stay whole (and 16-bit) on the first stage.
    other = layer_rest + norms + edge + counts["pooler"] + counts["vision"]
    return ParamSplit(
        total=layer_linear + other,
        layer_linear=layer_linear,
        other=other,
        layers_on_stage=layers_on_stage,
    )


def sharded_params(
    spec: ModelSpec,
    work: TrainWork,
    total: Any,
    stage_fraction: Any,
    tp: Any,
    dp: Any,
    zero: Any,
    stage: int,
    *,
    maximum: Callable[[Any, Any], Any] = max,
    minimum: Callable[[Any, Any], Any] = min,
) -> Any:
    """Parameters one GPU keeps of :func:`param_split`'s ``total`` once ZeRO stage ``stage``
    shards them (weights: 3, gradients: 2, optimizer states: 1): the dense ones over the ZeRO
    group (``dp``, or the HSDP group), the routed experts over the expert-data-parallel group
    ``dp·tp/(ep·etp)`` (at most the HSDP group), which is what is left of the data-parallel
    ranks once the expert-parallel group is carved out of them (Megatron-Core's
    ``expert_data_parallel_size``; FSDP2's ``dp/ep`` expert mesh); the experts split over the
    expert tensor degree, not ``tp``. Floats or numpy arrays (``tp``, ``dp``, ``zero``,
    ``total``, ``stage_fraction``)."""
    par = work.parallel
    experts = count_params(spec).by_component["experts"] * stage_fraction / par.ep
    e_tp = tp if not par.etp else expert_tp(tp, par.etp)
    group = minimum(dp, par.shard) if par.shard else dp
    expert_group = maximum(1, (dp * tp) // (par.ep * e_tp))
    if par.shard:
        expert_group = minimum(expert_group, par.shard)
    on = zero >= stage
    dense = total - experts / tp
    return dense / (1 + (group - 1) * on) + experts / e_tp / (1 + (expert_group - 1) * on)


@lru_cache(maxsize=256)
def _dense_linear_params(spec: ModelSpec) -> int:
    """Linear weights of the layers other than the routed experts (cached: every estimate and
    every planner layout asks)."""
    return sum(s.weights * s.count for s in linear_shapes(spec) if s.kind != "experts")


def base_weight_bytes(work: TrainWork, layer_linear: Any, other: Any) -> Any:
    """Bytes of the weights as a GPU holds them, FSDP gathers them and CPU offload copies them:
    QLoRA's layer linears in NF4 with double quantization and the rest in bf16, every other
    task's weights in the tensor dtype. Floats or numpy arrays."""
    if work.task == "qlora":
        return layer_linear * get_format("nf4-dq").bits_per_weight / 8 + other * 2
    return (layer_linear + other) * work.tensor_bytes


# --- training's extra tensors ---------------------------------------------------------------


#: DeepSpeed's reduce_bucket_size and allgather_bucket_size defaults, in elements.
DS_BUCKET_ELEMENTS = 5e8
#: overlap_comm multiplies the buckets (the Hugging Face DeepSpeed guide: "4.5x").
DS_OVERLAP_FACTOR = 4.5


def zero_bucket_bytes(work: TrainWork, params_on_gpu: float) -> float:
    """DeepSpeed ZeRO's reduce and all-gather buckets on one GPU (0 without ZeRO or data
    parallelism, or with ``zero_buckets`` none); a bucket never exceeds the parameters it
    carries. (:mod:`suanli.estimate.vector` has the same rule over arrays.)"""
    par = work.parallel
    if work.zero_buckets != "deepspeed" or par.zero < 1 or par.dp < 2:
        return 0.0
    factor = DS_OVERLAP_FACTOR if par.zero >= 3 else 1.0
    return 2 * min(DS_BUCKET_ELEMENTS, params_on_gpu) * work.tensor_bytes * factor


#: DeepSpeed ZeRO-3's ``stage3_prefetch_bucket_size`` default, in elements (microsoft/DeepSpeed
#: deepspeed/runtime/zero/config.py at 50c6d6f2: ``prefetch_bucket_size ... pp_int(5e7)``).
DS_PREFETCH_ELEMENTS = 5e7


def zero3_gathers_per_unit(
    work: TrainWork,
    unit_elements: Any,
    matrices: Any,
    *,
    minimum: Callable[[Any, Any], Any] = min,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
) -> Any:
    """All-gathers per layer unit and pass under ZeRO-3: 1 for FSDP (one per unit); with
    DeepSpeed's buckets, one per prefetch bucket of ``DS_PREFETCH_ELEMENTS``, a bucket closed
    by the whole parameter that fills it (partitioned_param_coordinator.py at 196e63ac,
    ``fetch_sub_module``), so ``min(matrices, max(1, ceil(unit_elements / bucket)))``.
    ``unit_elements``: a unit's parameters on the GPU; ``matrices``: its weight matrices above
    the persistence threshold (docs/speed.md). Floats or numpy arrays."""
    if work.zero_buckets != "deepspeed":
        return 1
    return minimum(matrices, maximum(1, ceil(unit_elements / DS_PREFETCH_ELEMENTS)))


def layer_matrices(spec: ModelSpec) -> int:
    """Weight matrices of one transformer layer: attention's four (q, k, v, o; two with a fused
    qkv) and the MLP's two or three, each routed and shared expert's too (the most of any
    layer)."""
    attention = 2 if spec.attention.fused_qkv else 4
    dense = (3 if spec.mlp.gated else 2) if spec.mlp is not None else 0
    if spec.moe is None:
        return attention + dense
    expert = 3 if spec.moe.expert.gated else 2
    shared = spec.moe.shared_expert
    extra = (3 if shared.gated else 2) if shared is not None else 0
    return attention + max(dense, expert * spec.moe.num_experts + extra)


def grads_replace_activations(work: TrainWork) -> bool:
    """Whether gradients and saved activations never peak together: on one GPU without
    gradient accumulation, gradients are None after ``zero_grad(set_to_none=True)`` (PyTorch's
    default since 2.0) and appear layer by layer as backward frees that layer's activations.
    With accumulation they persist between micro-batches; DDP's buckets, ZeRO's partitions and
    Megatron's main-grad buffer are allocated up front; the optimizer-in-backward case already
    counts one tensor."""
    par = work.parallel
    return (
        par.gpus == 1
        and work.grad_accum == 1
        and not work.main_grads_fp32
        and not work.optimizer_in_backward
    )


def largest_tensor_params(spec: ModelSpec, work: TrainWork) -> float:
    """Parameters of the largest trainable tensor before tensor parallelism splits it (the
    embedding or a linear weight; a LoRA adapter matrix under LoRA)."""
    if work.is_lora:
        return max(work.lora_rank * max(s.n_in, s.n_out) for s in linear_shapes(spec))
    linear = max((s.weights for s in linear_shapes(spec)), default=0)
    return float(max(linear, spec.vocab_size * spec.hidden_size))


def layer_params(spec: ModelSpec, ep: int = 1) -> float:
    """Parameters of one transformer layer on average (attention, MLP, experts, router) as one
    GPU holds them gathered: the routed experts over ``ep`` expert-parallel ranks, since
    FSDP/ZeRO-3 gathers a layer over its data-parallel group and each expert-parallel rank
    gathers only its own experts (torchtitan and NeMo Automodel shard the experts' FSDP over
    the expert-data-parallel mesh; DeepSpeed-MoE's expert groups)."""
    counts = count_params(spec).by_component
    layer = sum(counts[k] for k in ("attention", "mlp", "shared_experts", "router"))
    return (layer + counts["experts"] / ep) / spec.num_layers


def lora_adapter_params(spec: ModelSpec, work: TrainWork) -> float:
    """Adapter parameters of the whole model: r·(d_in + d_out) per adapted matrix."""
    return sum(
        work.lora_rank * (shape.n_in + shape.n_out) * shape.count
        for shape in linear_shapes(spec)
        if shape.targeted_by(work.lora_targets)
    )
