"""Vectorized evaluation of many layouts at once (numpy): the planner's and the benchmark's path.

Each function takes one model, one device and one fixed workload "shape" (sequence, dtype,
precision, recompute, attention, kernels, task) and arrays of layout choices (tp, pp, dp, ZeRO
stage, micro-batch, gradient accumulation, sequence parallelism). It computes exactly what the
scalar functions in :mod:`suanli.estimate.memory` and :mod:`suanli.estimate.perf` compute;
``tests/estimate/test_vector.py`` checks the two agree to 1e-9 on random layouts. Layout-free
quantities (activation terms, FLOPs per sequence) come from the scalar code once per call.
numpy is imported here, never by the planning CLI at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from suanli.catalog.formats import overhead_bytes, overhead_fraction
from suanli.estimate.activations import Term, layer_terms, model_terms
from suanli.estimate.data_parallel import (
    all_reduce_bytes,
    dp_bytes,
    fsdp_backward_gathers,
    fsdp_exposed_s,
    grad_reduce_overlap,
)
from suanli.estimate.elementwise import elementwise_seconds, loss_bytes, optimizer_step_bytes
from suanli.estimate.expert_parallel import dispatch_bytes, expert_all_to_all_s, expert_tp
from suanli.estimate.flops import step_flops
from suanli.estimate.loss_scaling import loss_scaling_s
from suanli.estimate.memory import adafactor_state_elements, optimizer_bytes_per_param
from suanli.estimate.perf import (
    Device,
    offloaded_step_s,
    params_offload_s,
    train_matmul_seconds,
)
from suanli.estimate.pipeline import bubble_s as pipeline_bubble_s
from suanli.estimate.pipeline import exposed_s as pipeline_exposed_s
from suanli.estimate.pipeline import in_flight, parameter_copies, pass_shares
from suanli.estimate.shapes import linear_shapes
from suanli.estimate.sizes import (
    DS_BUCKET_ELEMENTS,
    DS_OVERLAP_FACTOR,
    base_weight_bytes,
    grads_replace_activations,
    largest_tensor_params,
    layer_matrices,
    layer_params,
    lora_adapter_params,
    sharded_params,
    zero3_gathers_per_unit,
)
from suanli.estimate.stragglers import straggler_wait_s
from suanli.estimate.train_activations import (
    activation_settings,
    backward_transient_bytes_per_token,
    checkpoint_bytes_per_token,
    edge_drop,
    first_dense_layer,
    fused_loss_extra_bytes_per_token,
    layers_saved,
    logits_bytes_per_token,
    offload_split,
    selective_drop,
)
from suanli.estimate.vector_comm import all_reduce, pick, reduce_scatter, tp_all_reduce
from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec

Array = Any  # numpy arrays (kept loose: numpy's typing is not part of the pure core check)


@dataclass(frozen=True, kw_only=True)
class Layouts:
    """Arrays of layout choices, all the same length."""

    tp: Array
    pp: Array
    dp: Array
    zero: Array
    batch: Array
    grad_accum: Array
    sp: Array

    @staticmethod
    def of(**columns: Any) -> Layouts:
        """Build from lists or arrays; missing columns default (1, or 0 for zero/sp)."""
        n = len(next(iter(columns.values())))
        defaults = {"tp": 1, "pp": 1, "dp": 1, "zero": 0, "batch": 1, "grad_accum": 1, "sp": 0}
        arrays = {
            k: np.asarray(columns.get(k, [v] * n), dtype=np.int64) for k, v in defaults.items()
        }
        return Layouts(**arrays)


# --- parameters --------------------------------------------------------------------------------


def _param_split(spec: ModelSpec, tp: Array, pp: Array, ep: int) -> dict[str, Array]:
    """Vector form of :func:`suanli.estimate.sizes.param_split`."""
    counts = count_params(spec).by_component
    layers = np.ceil(spec.num_layers / pp)
    frac = layers / spec.num_layers
    totals: dict[str, int] = {}
    for shape in linear_shapes(spec):
        totals[shape.kind] = totals.get(shape.kind, 0) + shape.weights * shape.count
    linear = sum(n for kind, n in totals.items() if kind != "experts")
    experts = counts["experts"] / ep
    layer_other = counts["attention"] + counts["mlp"] + counts["shared_experts"] - linear
    layer_linear = (linear + experts) * frac / tp
    rest = (layer_other + counts["router"]) * frac
    norms = counts["norms"] * frac
    edge_pp = max(counts["embeddings"], counts["lm_head"] or counts["embeddings"]) / tp
    edge_one = (counts["embeddings"] + counts["lm_head"]) / tp
    edge = np.where(pp == 1, edge_one, edge_pp)
    other = rest + norms + edge + counts["pooler"]
    return {
        "total": layer_linear + other,
        "layer_linear": layer_linear,
        "other": other,
        "layers": layers,
    }


# --- activations --------------------------------------------------------------------------------


def _zero_group(work: TrainWork, dp: Array) -> Array:
    """Ranks the ZeRO/FSDP states shard over per layout (the HSDP group when set)."""
    shard = work.parallel.shard
    return np.minimum(dp, shard) if shard else dp


def _class_sums(terms: list[Term], drop: tuple[str, ...] = ()) -> Array:
    """Bytes per token of (tp-sharded, sp-sharded, unsharded) terms."""
    sums = np.zeros(3)
    for t in terms:
        if drop and any(d in t.name for d in drop):
            continue
        sums[{"tp": 0, "sp": 1, "none": 2}[t.shardable]] += t.bytes_per_token
    return sums


def _sharded(sums: Array, tp: Array, sp: Array) -> Array:
    return sums[0] / tp + sums[1] / np.where(sp > 0, tp, 1) + sums[2]


def _activations(
    spec: ModelSpec, work: TrainWork, lay: Layouts, layers: Array
) -> tuple[Array, Array]:
    """Vector form of :func:`suanli.estimate.memory.activation_bytes` (summed): the bytes on the
    GPU and the bytes offloaded to the CPU."""
    tokens = lay.batch * work.seq
    drop = selective_drop(work)
    kinds = [(first_dense_layer(spec), False)]
    if spec.moe_layers:
        kinds.append((spec.moe_layers[0], True))
    moe_sorted = np.asarray(sorted(spec.moe_layers), dtype=np.int64)
    n_moe = np.searchsorted(moe_sorted, layers, side="left") if len(moe_sorted) else 0 * layers
    counts = {False: layers - n_moe, True: n_moe}
    full_total = np.zeros(len(tokens))
    kept_total = np.zeros(len(tokens))
    peak = np.zeros(len(tokens))
    for index, is_moe in kinds:
        full_sums, kept_sums = [], []
        for batch in (1, 2):
            st = activation_settings(spec, replace(work, batch=batch))
            terms = layer_terms(spec, st, index)
            full_sums.append(_class_sums(terms))
            kept_sums.append(_class_sums(terms, drop=drop))
        one = lay.batch == 1
        full = (
            np.where(
                one, _sharded(full_sums[0], lay.tp, lay.sp), _sharded(full_sums[1], lay.tp, lay.sp)
            )
            * tokens
        )
        kept = (
            np.where(
                one, _sharded(kept_sums[0], lay.tp, lay.sp), _sharded(kept_sums[1], lay.tp, lay.sp)
            )
            * tokens
        )
        count = counts[is_moe]
        peak = np.maximum(peak, np.where(count > 0, full, 0.0))
        full_total = full_total + count * full
        kept_total = kept_total + count * kept
    sp_div = np.where(lay.sp > 0, lay.tp, 1)
    ckpt = checkpoint_bytes_per_token(spec, work, lay.tp, sp_div) * tokens
    saved = layers_saved(work, layers, full_total / layers, kept_total / layers, ckpt, ceil=np.ceil)
    if work.checkpointed:
        peak = peak + backward_transient_bytes_per_token(spec, work, lay.tp) * tokens
    else:
        peak = np.zeros(len(tokens))
    pp, par = lay.pp, work.parallel
    held = in_flight(par.pp_schedule, pp, par.vpp, lay.grad_accum, minimum=np.minimum)
    inflight = np.where(pp > 1, held, 1.0)
    on_gpu, on_cpu = offload_split(work, saved * inflight, layers * inflight, minimum=np.minimum)
    # model terms are const + c / batch (rotary tables and position ids are shared by a batch)
    edge_terms = [
        [
            t
            for t in model_terms(spec, activation_settings(spec, replace(work, batch=n)), n)
            if not t.name.startswith(edge_drop(work))
        ]
        for n in (1, 2)
    ]
    m1, m2 = _class_sums(edge_terms[0]), _class_sums(edge_terms[1])
    coeff = 2 * (m1 - m2)
    const = m1 - coeff
    edge = (_sharded(const, lay.tp, lay.sp) + _sharded(coeff, lay.tp, lay.sp) / lay.batch) * tokens
    edge = edge + fused_loss_extra_bytes_per_token(spec, work) * tokens
    return on_gpu + peak + edge, on_cpu


# --- training memory -------------------------------------------------------------------------


def train_memory(spec: ModelSpec, work: TrainWork, lay: Layouts) -> Array:
    """Per-GPU bytes (the ``total_bytes`` of :func:`training_memory`) for every layout."""
    b = work.tensor_bytes  # fp8 training holds its tensors in bf16
    split = _param_split(spec, lay.tp, lay.pp, work.parallel.ep)
    mixed = work.precision == "mixed" and not work.fp32_storage
    state_bytes = 4 if (mixed or work.fp32_storage) else b
    zero, dp = lay.zero, lay.dp
    group = _zero_group(work, dp)
    w3 = np.where(zero >= 3, group, 1)
    total = np.zeros(len(lay.tp))
    layer_bytes = 2 * layer_params(spec, work.parallel.ep) * b / lay.tp  # gathered (ZeRO-3)
    frac = split["layers"] / spec.num_layers

    def kept(stage: int) -> Array:  # memory.training_memory's: experts over their own group
        return sharded_params(
            spec,
            work,
            split["total"],
            frac,
            lay.tp,
            dp,
            zero,
            stage,
            maximum=np.maximum,
            minimum=np.minimum,
        )

    if work.is_lora:
        base = base_weight_bytes(work, split["layer_linear"], split["other"])
        stage = split["layers"] / spec.num_layers
        trainable = lora_adapter_params(spec, work) * stage / lay.tp
        if not work.offload_params:
            total += base / w3 + trainable * (4 if mixed else b) / w3
        gathered = (w3 > 1) | work.offload_params
        total += np.where(gathered, layer_bytes, 0.0)
    else:
        trainable = split["total"]
        if not work.offload_params:
            total += kept(3) * b
        gathered = (zero >= 3) | work.offload_params
        total += np.where(gathered, layer_bytes, 0.0)
    total += split["layer_linear"] * work.fp8_weight_cache_bytes_per_param
    trainable_bytes = 4 if (work.is_lora and mixed) or work.main_grads_fp32 else b
    grads = trainable / np.where(zero >= 2, group, 1) if work.is_lora else kept(2)
    grads = grads * trainable_bytes
    if work.optimizer_in_backward:
        grads = np.minimum(grads, largest_tensor_params(spec, work) * trainable_bytes / lay.tp)
    if work.offload_params:
        grads = 0.0 * grads
    total += grads
    opt_shard = np.where(zero >= 1, group, 1)
    states = trainable / opt_shard if work.is_lora else kept(1)  # on this GPU
    if not work.offload_optimizer:
        if work.optimizer == "adafactor":
            frac = trainable / np.maximum(split["total"], 1)
            total += adafactor_state_elements(spec, 1.0) * frac / (lay.tp * lay.pp) * 4 / opt_shard
        else:
            total += states * optimizer_bytes_per_param(work.optimizer, state_bytes)[0]
        if mixed and not work.is_lora:
            total += states * 4
    if work.parallel.pp_schedule == "dualpipe":  # a second stage (memory._second_copy)
        total = 2 * total - np.where(gathered, layer_bytes, 0.0)
    if work.zero_buckets == "deepspeed":
        factor = np.where(zero >= 3, DS_OVERLAP_FACTOR, 1.0)
        buckets = 2 * np.minimum(DS_BUCKET_ELEMENTS, split["total"]) * b * factor
        total += np.where((zero >= 1) & (dp >= 2), buckets, 0.0)
    freed = _activations(spec, work, lay, split["layers"])[0]
    freed = freed + lay.batch * work.seq * logits_bytes_per_token(spec, work) / lay.tp
    total += freed
    if grads_replace_activations(replace(work, parallel=Parallelism(), grad_accum=1)):
        # One GPU without accumulation: gradients and activations peak apart.
        alone = (lay.dp * lay.tp * lay.pp == 1) & (lay.grad_accum == 1)
        total -= np.where(alone, np.minimum(freed, grads), 0.0)
    return total + _overhead(total, work.overheads, lay.dp * lay.tp * lay.pp > 1)


def _overhead(tensors: Array, overheads: Overheads, multi: Array) -> Array:
    context = overheads.cuda_context_bytes
    if context is None:
        context = overhead_bytes("cuda-context")[0]
    fraction = overheads.fragmentation
    if fraction is None:
        fraction = overhead_fraction("torch-allocator-fragmentation")[0]
    nccl = overheads.nccl_bytes
    if nccl is None:
        nccl = overhead_bytes("nccl-communicator-typical")[0]
    workspace = overhead_bytes("cublas-workspace-sm90")[0]
    return context + workspace + tensors * fraction + np.where(multi, nccl, 0.0)


# --- training speed ----------------------------------------------------------------------------


def train_speed(spec: ModelSpec, work: TrainWork, lay: Layouts, device: Device) -> dict[str, Array]:
    """Step time, tokens/s and MFU (as :func:`suanli.estimate.perf.training_perf`) per layout."""
    # Activations, gradients and gathered weights travel in bf16 under fp8 training.
    tb = work.tensor_bytes
    tp, pp, dp, zero, m = lay.tp, lay.pp, lay.dp, lay.zero, lay.grad_accum
    tokens = lay.batch * work.seq
    frozen = 1.0 if work.is_lora else 0.0
    model_one = step_flops(spec, 1, work.seq, causal=False, frozen_fraction=frozen).model_flops
    stage_layers = np.ceil(spec.num_layers / pp)
    matmul_s = train_matmul_seconds(
        spec,
        work,
        device,
        tokens,
        tp,
        stage_layers,
        grad_accum=m.astype(np.float64),
        maximum=np.maximum,
        ceil=np.ceil,
    )
    split = _param_split(spec, tp, pp, work.parallel.ep)
    passes = 3 if work.recompute == "full" else 2
    memory_s = elementwise_seconds(
        spec,
        work,
        device.bandwidth,
        device.gemm_model,
        stage_layers,
        tokens,
        tp,
        sequence_split=np.where(lay.sp > 0, tp, 1),
        maximum=np.maximum,
    ) + loss_bytes(spec, replace(work, parallel=replace(work.parallel, tp=1)), 1) * tokens / tp / (
        device.bandwidth
    )
    if work.activation_offload and device.host_bytes_per_s:
        offloaded = _activations(spec, work, lay, stage_layers)[1]
        memory_s = memory_s + np.maximum(0.0, 2 * offloaded / device.host_bytes_per_s - matmul_s)
    per_micro = matmul_s + memory_s
    trainable = lora_adapter_params(spec, work) / (tp * pp) if work.is_lora else split["total"]
    trainable = trainable * parameter_copies(work.parallel.pp_schedule)
    opt_shard = np.where(zero >= 1, _zero_group(work, dp), 1)
    optimizer_s = (
        offloaded_step_s(work, trainable / opt_shard, device)
        if work.offload_optimizer
        else optimizer_step_bytes(work, 1.0) * trainable / opt_shard / device.bandwidth
    )
    compute_s = matmul_s * m
    memory_total = memory_s * m + optimizer_s
    busy_s = compute_s + memory_total
    memory_total = memory_total + loss_scaling_s(
        work, trainable / opt_shard, device.bandwidth, busy_s
    )
    net = device.network
    h = spec.hidden_size
    comm = np.zeros(len(tp))
    bw, lat, base = pick(net, tp, np.ones_like(tp), gather=True)
    volume = tokens * h * tb
    per_layer_coll = 4 + (2 if work.recompute == "full" else 0)
    one_coll = np.where(
        lay.sp > 0,
        2 * reduce_scatter(volume, tp, bw, lat, base),
        all_reduce(net, volume, tp, np.ones_like(tp)),
    )
    comm += np.where(tp > 1, per_layer_coll * stage_layers * one_coll * m, 0.0)
    ep, schedule = work.parallel.ep, work.parallel.pp_schedule
    a2a = 0.0 * tp
    if ep > 1 and spec.moe is not None and spec.moe_layers:
        e_tp = expert_tp(tp, work.parallel.etp)
        one_a2a = expert_all_to_all_s(
            net, dispatch_bytes(tokens, spec, tb, tp), ep, tp if e_tp is None else e_tp,
            where=np.where, minimum=np.minimum, maximum=np.maximum,
            spec=spec, dispatcher=work.ep_dispatcher,
        )  # fmt: skip
        a2a = 4 * np.ceil(len(spec.moe_layers) / pp) * one_a2a
    # Point to point: one peer link inside a node, one NIC across (Network.point_to_point_link).
    inside = (pp * tp <= net.gpus_per_node) | (pp <= 1)
    peer_bw = net.intra.for_group(2).effective_bytes_per_s
    bw = np.where(inside, peer_bw, net.inter.effective_bytes_per_s)
    lat = np.where(inside, net.intra.latency_s, net.inter.latency_s)
    p2p = tokens * h * tb / tp / bw + lat
    # Fill and drain wait on a transfer per hop (perf.training_perf).
    vpp = work.parallel.vpp
    shares = pass_shares(spec, work)
    exposed = sum(pipeline_exposed_s(schedule, a2a, p2p, per_micro, vpp, shares, m))
    comm += np.where(pp > 1, exposed, a2a * m)
    bubble = np.where(pp > 1, pipeline_bubble_s(schedule, pp, vpp, per_micro, p2p, shares), 0.0)
    grad_bytes, reduce_bytes, gather_bytes = dp_bytes(work, trainable, tb)
    group = np.where(zero >= 1, _zero_group(work, dp), dp)
    bw, lat, base = pick(net, group, tp * pp, gather=True)
    busy = compute_s + memory_total
    # What FSDP gathers and CPU offload copies: QLoRA's base in NF4.
    weight_bytes = base_weight_bytes(work, split["layer_linear"], split["other"])
    # HSDP: the shard groups' gradient shards are all-reduced across the replicas.
    replicas = dp // group
    replica = np.where(
        replicas > 1,
        all_reduce(net, reduce_bytes / group, replicas, tp * pp * group),
        0.0,
    )
    # Sharded gradients are reduced after every micro-batch, once a step with a pipeline
    # (data_parallel.fsdp_syncs).
    syncs = np.where(pp == 1, m, 1)
    # The root unit's gathers and gradient reduction, which nothing hides
    # (data_parallel.fsdp_root_s).
    root_bytes = split["other"] * tb
    root = reduce_scatter(root_bytes, group, bw, lat, base)
    # Twice a micro-batch, or once a step with a pipeline (data_parallel.fsdp_root_s).
    gathers = np.where(pp == 1, 2 * m, 1)
    root_s = gathers * root + (0.0 if work.is_lora else syncs * root)
    fsdp = fsdp_exposed_s(
        work=work,
        weight_bytes=weight_bytes,
        grad_bytes=grad_bytes,
        root_bytes=root_bytes,
        units=stage_layers,
        group=group,
        bandwidth=bw,
        ring_latency=net.ring_latency(
            group, tp * pp, where=np.where, minimum=np.minimum, maximum=np.maximum
        ),
        base=base,
        per_micro_s=per_micro,
        replica_s=replica,
        root_s=root_s,
        micro_batches=m,
        syncs=syncs,
        backward_passes=fsdp_backward_gathers(work, pp),
        gathers_per_unit=zero3_gathers_per_unit(
            work,
            split["layer_linear"] / np.maximum(stage_layers, 1),
            layer_matrices(spec),
            minimum=np.minimum,
            maximum=np.maximum,
            ceil=np.ceil,
        ),
        maximum=np.maximum,
    )
    # ZeRO 2: reduce-scatter the reduced bytes, gather the gathered ones (the same time per
    # byte); ZeRO 0 and 1 one all-reduce (data_parallel.all_reduce_bytes).
    ddp_s = (
        np.where(
            zero >= 2,
            reduce_scatter(reduce_bytes, group, bw, lat, base)
            + reduce_scatter(gather_bytes, group, bw, lat, base),
            all_reduce(
                net,
                all_reduce_bytes(zero, reduce_bytes, gather_bytes, where=np.where),
                group,
                tp * pp,
            ),
        )
        + replica
    )
    ddp = np.maximum(0.0, ddp_s - grad_reduce_overlap(work) * per_micro * 2 / 3)
    comm += np.where(dp > 1, np.where(zero >= 3, fsdp, ddp), 0.0)
    if work.offload_params:
        shard_group = np.where(zero >= 3, _zero_group(work, dp), 1)
        comm += params_offload_s(
            weight_bytes / shard_group,
            grad_bytes / shard_group,
            m,
            passes,
            busy,
            device,
            maximum=np.maximum,
        )
    gpus = tp * pp * dp
    comm += straggler_wait_s(compute_s + memory_total, gpus)
    step = compute_s + memory_total + comm + bubble
    tokens_step = tokens * m * dp
    mfu = model_one * lay.batch * m * dp / (step * gpus * device.peak_flops)
    return {
        "step_time_s": step,
        "tokens_per_s": tokens_step / step,
        "mfu": mfu,
        "compute_s": compute_s,
        "memory_s": memory_total,
        "communication_s": comm,
        "bubble_s": bubble,
    }


# --- inference speed ---------------------------------------------------------------------------


def infer_speed(
    spec: ModelSpec,
    weight_format: str,
    kv_bytes: float,
    batch: Array,
    tp: Array,
    prompt: int,
    output: int,
    device: Device,
    projections: str = "fused",
    kernels: str = "eager",
    dispatch: str = "engine",
    *,
    options: InferWork | None = None,
) -> dict[str, Array]:
    """TTFT, TPOT and tokens/s (as :func:`suanli.estimate.inference.inference_perf`) per
    (batch, tp); ``projections``, ``kernels`` and ``dispatch`` as ``InferWork``'s; ``options``:
    the request's other serving options (its ``kv_update``, ``gqa``, ``engine``, ``prefix_hit``
    and ``spec_*``; its batch, layout, format and cache dtype are ignored here)."""
    from suanli.estimate.flops import forward_flops_per_token
    from suanli.estimate.host_dispatch import host_step_s
    from suanli.estimate.inference import (
        active_weight_bytes,
        cached_tokens,
        kv_dequant_seconds,
        prefill_flops_per_sequence,
        serve_kernels,
        weight_bytes,
    )
    from suanli.estimate.inference_memory import kv_bytes_per_token
    from suanli.estimate.kv_traffic import (
        attention_read_factor,
        copy_factor,
        copy_kernels,
        copy_seconds,
    )
    from suanli.estimate.speculative import accepted_tokens, eagle_head

    batch = np.asarray(batch, dtype=np.int64)
    tp = np.asarray(tp, dtype=np.int64)
    b = 2
    # The planner tries bf16 and fp8 caches only, so one byte is fp8.
    kv_dtype = {1: "fp8", 2: "bf16", 4: "fp32"}.get(int(kv_bytes), "bf16")
    traffic = replace(options or InferWork(), kv_dtype=kv_dtype)
    verify = traffic.spec_tokens + 1  # tokens per sequence in each decode pass
    cached = cached_tokens(prompt, traffic.prefix_hit)
    prefill_flops = prefill_flops_per_sequence(spec, prompt, cached) * batch
    context = prompt + output / 2
    decode_per_token = sum(forward_flops_per_token(spec, int(context), causal=False).values())
    # Layout-dependent pieces that the scalar code computes per tp (few distinct values).
    weights = np.empty(len(tp))
    active = np.empty(len(tp))
    kv_tok = np.empty(len(tp))
    for value in np.unique(tp):
        sel = tp == value
        work = InferWork(weight_format=weight_format, tp=int(value))
        weights[sel] = weight_bytes(spec, work)
        kv_tok[sel] = kv_bytes_per_token(spec, kv_bytes, int(context), int(value))
        for bval in np.unique(batch[sel]):
            both = sel & (batch == bval)
            active[both] = active_weight_bytes(spec, work, int(bval) * verify)
    layers = spec.num_layers
    h = spec.hidden_size
    prefill_comm = np.where(
        tp > 1,
        2 * layers * tp_all_reduce(batch * (prompt - cached) * h * b, tp, device.network),
        0.0,
    )
    read = attention_read_factor(spec, traffic)
    kv_eff = None
    if device.decode_attention is not None:
        # Per layout: the KV bytes a token adds per layer on one GPU set the lookup (tp varies).
        token_bytes = kv_tok * read / max(spec.num_layers, 1)
        kv_eff = np.array(
            [
                device.decode_attention(int(b), int(context), float(t))
                for b, t in zip(batch, token_bytes, strict=True)
            ]
        )
    prefill_k, decode_k = serve_kernels(
        spec,
        weight_format,
        kv_tok * context * read,
        batch,
        tp,
        prompt,
        device,
        kv_efficiency=kv_eff,
        projections=projections,
        kernels=kernels,
        cached=cached,
        verify=verify,
        maximum=np.maximum,
        ceil=np.ceil,
    )
    ttft = np.maximum(prefill_flops / tp / device.matmul_flops, weights / device.bandwidth)
    host = host_step_s(spec, dispatch)
    ttft = np.maximum(np.maximum(ttft, prefill_k.total_s), host) + prefill_comm
    kv = kv_tok * context * batch
    copy_bytes = kv * copy_factor(spec, traffic)
    copy_s = copy_seconds(
        copy_bytes,
        copy_kernels(spec, traffic),
        layers,
        device.memory_bytes_per_s,
        device.gemm_model,
        maximum=np.maximum,
    )
    decode_compute = decode_per_token * batch * verify / tp / device.matmul_flops
    decode_memory = (active + kv * read + copy_bytes) / device.bandwidth
    decode_comm = np.where(
        tp > 1, 2 * layers * tp_all_reduce(batch * verify * h * b, tp, device.network), 0.0
    )
    dequant_s = kv_dequant_seconds(device.name, traffic, kv)
    tpot = np.maximum(
        np.maximum(decode_compute, decode_memory), decode_k.total_s + copy_s + dequant_s
    )
    tpot = np.maximum(tpot, host) + decode_comm
    if traffic.spec_tokens:
        draft = 0.0
        if traffic.spec_method == "eagle":
            drafter = replace(traffic, spec_tokens=0, spec_acceptance=None, prefix_hit=0.0)
            head = infer_speed(
                eagle_head(spec), weight_format, kv_bytes, batch, tp, prompt, output, device,
                projections, kernels, dispatch, options=drafter,
            )  # fmt: skip
            draft = traffic.spec_tokens * head["tpot_s"]
        acceptance = traffic.spec_acceptance or 0.0
        tpot = (tpot + draft) / accepted_tokens(traffic.spec_tokens, acceptance)
    return {
        "ttft_s": ttft,
        "tpot_s": tpot,
        "tokens_per_s": batch / tpot,
        "compute_bound": decode_compute >= decode_memory,
    }
