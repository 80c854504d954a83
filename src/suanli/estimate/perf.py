"""Step time, throughput and the bound: a roofline over compute, memory and the network.

Per op class the time is ``max(FLOPs / (peak · matmul efficiency), bytes / (bandwidth · memory
efficiency))``; classes run one after another, so their times add. Communication that cannot
hide behind compute (tensor-parallel collectives, the pipeline bubble, the part of the gradient
all-reduce that outlasts the backward pass) adds to the step. Efficiencies are measured ceilings
(catalog/data/efficiency.toml), never fitted to a test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from suanli.estimate.casts import fp8_cast_seconds, nf4_dequant_seconds
from suanli.estimate.checkpointing import op_recompute_share
from suanli.estimate.comm import (
    Network,
    all_gather_s,
    all_reduce_s,
    p2p_s,
    reduce_scatter_s,
)
from suanli.estimate.data_parallel import (
    DP_OVERLAP,
    all_reduce_bytes,
    dp_bytes,
    fsdp_backward_gathers,
    fsdp_exposed_s,
    fsdp_root_s,
    fsdp_syncs,
    grad_reduce_overlap,
)
from suanli.estimate.elementwise import (
    elementwise_seconds,
    loss_bytes,
    optimizer_step_bytes,
)
from suanli.estimate.expert_parallel import (
    dispatch_bytes,
    expert_all_to_all_s,
    expert_rows_share,
    expert_tp,
    local_expert_shapes,
)
from suanli.estimate.flops import forward_flops_per_token, model_step_flops, step_flops
from suanli.estimate.kernels import (
    GemmModel,
    gemm_seconds,
    gemm_time_fn,
    layer_gemms,
)
from suanli.estimate.loss_scaling import loss_scaling_s
from suanli.estimate.memory import offloaded_activation_bytes
from suanli.estimate.pipeline import bubble_s as pipeline_bubble_s
from suanli.estimate.pipeline import exposed_s as pipeline_exposed_s
from suanli.estimate.pipeline import parameter_copies, pass_shares
from suanli.estimate.shapes import linear_shapes
from suanli.estimate.sizes import (
    base_weight_bytes,
    layer_matrices,
    lora_adapter_params,
    param_split,
    zero3_gathers_per_unit,
)
from suanli.estimate.stragglers import straggler_wait_s
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class Device:
    """What the speed model needs from one GPU."""

    name: str
    peak_flops: float
    """Dense peak of the compute precision."""
    matmul_efficiency: float
    memory_bytes_per_s: float
    memory_efficiency: float
    network: Network
    tdp_watts: float = 0.0
    usd_per_hour: float = 0.0
    efficiency_source: str = ""
    memory_source: str = ""
    """Where ``memory_efficiency`` comes from (empty: from ``efficiency_source``)."""
    gemm: GemmModel | None = None
    """The card's GEMM kernel model (None: one efficiency for every matmul, no launch cost)."""
    attention: Callable[[int, int, bool, bool], float] | None = None
    """Measured fused-attention efficiency as a fraction of the 16-bit dense peak, by
    ``(seq_len, head_dim, causal, backward)`` (None: the GEMM model's compute efficiency)."""
    attention_source: str = ""
    sdpa_attention: Callable[[int, int, bool, bool], float] | None = None
    """PyTorch ``scaled_dot_product_attention``'s efficiency where it differs from ``attention``:
    its flash backend is FlashAttention-2 on every card and its cuDNN backend is opt-in, so on
    Hopper it runs at FlashAttention-2's rates, not FlashAttention-3's (None: as ``attention``)."""
    sdpa_attention_source: str = ""
    triton_attention: Callable[[int, int, bool, bool], float] | None = None
    """The 2023 FlashAttention kernel in Triton (``--attention triton``; None: as ``attention``)."""
    triton_attention_source: str = ""
    decode_attention: Callable[[int, int, float], float] | None = None
    """Measured paged decode-attention bandwidth utilization by ``(batch, context, token bytes)``
    (the KV bytes a token adds per layer on one GPU; :func:`suanli.catalog.decode_attention.
    decode_attention_efficiency`)."""
    precision: str = ""
    """The tensor precision ``peak_flops`` is for (``bf16``, ``fp8``...; empty: unstated)."""
    host_bytes_per_s: float = 0.0
    """Host-to-device copy bandwidth (the card's PCIe link); 0: unknown."""
    host_memory_bytes_per_s: float = 0.0
    """The host CPU's memory bandwidth available to this GPU (an offloaded optimizer steps
    there); 0: unknown."""

    def attention_efficiency(
        self, seq: int, head_dim: int, causal: bool, backward: bool, kernel: str = "flash"
    ) -> float:
        """The attention core's efficiency (of the 16-bit peak) for one pass; ``kernel`` is the
        work's attention option: ``sdpa`` (PyTorch's own kernels), ``flash`` (the
        generation's fastest fused kernel: FlashAttention-3 or cuDNN through Transformer Engine
        on Hopper) or ``triton`` (the 2023 FlashAttention kernel in Triton)."""
        if self.attention is None:
            return self.gemm_model.compute_efficiency
        if kernel == "sdpa" and self.sdpa_attention is not None:
            return self.sdpa_attention(seq, head_dim, causal, backward)
        if kernel == "triton" and self.triton_attention is not None:
            return self.triton_attention(seq, head_dim, causal, backward)
        return self.attention(seq, head_dim, causal, backward)

    @property
    def gemm_model(self) -> GemmModel:
        """The GEMM kernel model: the card's, else the plain roofline at its ceilings."""
        if self.gemm is not None:
            return self.gemm
        return GemmModel(
            compute_efficiency=self.matmul_efficiency,
            memory_efficiency=self.memory_efficiency,
            launch_s=0.0,
            tile=1,
            source=self.efficiency_source,
        )

    @property
    def matmul_flops(self) -> float:
        """Achievable matmul FLOP/s."""
        return self.peak_flops * self.matmul_efficiency

    @property
    def bandwidth(self) -> float:
        """Achievable device-memory bytes/s."""
        return self.memory_bytes_per_s * self.memory_efficiency


@dataclass(frozen=True, kw_only=True)
class TrainPerf:
    """One optimizer step of a training job."""

    gpus: int
    flops_per_step: float
    """Model FLOPs of the whole step, all GPUs (MFU numerator)."""
    hardware_flops_per_step: float
    step_time_s: float
    tokens_per_step: int
    breakdown_s: dict[str, float]
    """``compute``, ``memory``, ``communication``, ``bubble`` (seconds per step)."""
    bound: str
    """``compute``, ``memory`` or ``communication``: the largest share of the step."""
    comm_detail_s: dict[str, float] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()

    @property
    def tokens_per_s(self) -> float:
        """Training throughput of the whole job."""
        return self.tokens_per_step / self.step_time_s

    def mfu(self, peak_flops: float) -> float:
        """Model FLOPs utilisation against ``peak_flops`` per GPU (PaLM appendix B)."""
        return self.flops_per_step / (self.step_time_s * self.gpus * peak_flops)

    def hfu(self, peak_flops: float) -> float:
        """Hardware FLOPs utilisation (recomputation counted)."""
        return self.hardware_flops_per_step / (self.step_time_s * self.gpus * peak_flops)


def _first_layer(spec: ModelSpec) -> int:
    return spec.moe_layers[0] if spec.moe_layers else 0


def train_matmul_seconds(
    spec: ModelSpec,
    work: TrainWork,
    device: Device,
    tokens: Any,
    tp: Any,
    stage_layers: Any,
    *,
    grad_accum: Any = None,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
) -> Any:
    """Matmul seconds of one micro-batch of ``tokens`` tokens on the busiest pipeline stage
    (``grad_accum``: micro-batches per step, default ``work.grad_accum``; fp8 recipes that cache
    their weights cast them once per step).

    Every linear layer is a GEMM of its own shape (:mod:`suanli.estimate.kernels`): forward,
    input gradient and (for trained weights) weight gradient, LoRA adapters and the MoE router
    included; the attention core (scores and values) runs at the GEMM model's compute
    efficiency; full recomputation repeats the layers' forward, selective the core's. The last
    stage also runs the LM head. Works on floats and, with numpy's ``maximum``/``ceil``, arrays.
    """
    model = device.gemm_model
    b = work.dtype_bytes
    peak, bw = device.peak_flops, device.memory_bytes_per_s
    moe = spec.moe
    # Expert parallelism: E/ep local experts, each on the tokens the group routed to it; with
    # expert tensor parallelism e < tp, the rows of a sequence-parallel slice gathered over e.
    share = expert_rows_share(spec, work.parallel.ep)
    e_tp = expert_tp(tp, work.parallel.etp)
    if e_tp is not None:
        share = share * e_tp / tp
    shapes = local_expert_shapes(linear_shapes(spec), spec, work.parallel.ep)
    g = layer_gemms(
        shapes,
        spec.num_layers,
        spec.hidden_size,
        tokens,
        tp,
        b,
        peak,
        bw,
        model,
        frozen=work.is_lora,
        lora_rank=work.lora_rank if work.is_lora else 0,
        lora_targets=work.lora_targets,
        expert_share=share,
        maximum=maximum,
        ceil=ceil,
        expert_tp=e_tp,
    )

    def t(m: Any, n: Any, k: Any) -> Any:
        return gemm_seconds(m, n, k, b, peak, bw, model, maximum=maximum, ceil=ceil)

    fp8 = work.dtype == "fp8"
    # fp8 recipes run only the linear layers in fp8; attention and the LM head stay in bf16,
    # at half the fp8 tensor rate on every card that has fp8 units.
    bf16_peak = peak / 2 if fp8 else peak
    causal = work.attention != "eager"
    core_per_token = forward_flops_per_token(spec, work.seq, causal)["attention_core"]
    core_flops = core_per_token / spec.num_layers * tokens / tp
    if work.attention == "eager":
        # Eager attention is two batched GEMMs around a separate softmax: GEMM efficiency.
        core = core_flops / (bf16_peak * model.compute_efficiency)
        core_back = 2 * core
    else:
        # Fused kernels (FlashAttention, SDPA), measured: the backward pass recomputes the
        # scores and does 2.5x the forward's FLOPs (Dao 2023, §4.1).
        head_dim = spec.attention.head_dim
        fwd = device.attention_efficiency(work.seq, head_dim, causal, False, work.attention)
        bwd = device.attention_efficiency(work.seq, head_dim, causal, True, work.attention)
        core = core_flops / (bf16_peak * fwd)
        core_back = 2.5 * core_flops / (bf16_peak * bwd)
    forward, backward = g.forward_s + core, g.backward_s + core_back
    if fp8:
        # A recipe that caches its fp8 weights casts them once for the step's micro-batches.
        micro_batches = work.grad_accum if grad_accum is None else grad_accum
        backward = backward + fp8_cast_seconds(
            shapes,
            spec.num_layers,
            spec.hidden_size,
            tokens,
            tp,
            bw,
            model,
            expert_share=share,
            scaling=work.fp8_scaling,
            weight_casts=1 / micro_batches if work.fp8_weight_cache else 1.0,
            maximum=maximum,
            expert_tp=e_tp,
        )
    if work.task == "qlora":
        dequant = nf4_dequant_seconds(
            shapes, spec.num_layers, spec.hidden_size, tp, bw, model, maximum=maximum
        )
        forward, backward = forward + dequant, backward + dequant
    if moe is not None and spec.moe_layers:
        router = t(tokens, moe.num_experts, spec.hidden_size) * len(spec.moe_layers)
        forward = forward + router / spec.num_layers
        backward = backward + 2 * router / spec.num_layers
    # Full recomputation re-runs the layer's forward; per-op SAC its even-numbered matmuls;
    # with --recompute-every K only every K-th layer is checkpointed.
    if work.recompute == "full":
        recompute = forward
    elif work.recompute == "selective":
        recompute = core
    elif work.recompute == "op":
        recompute = g.forward_s * op_recompute_share(spec)
    else:
        recompute = 0.0
    recompute = recompute / (work.recompute_every if work.checkpointed else 1)
    layer = forward + backward + recompute
    head: Any = 0.0
    if spec.is_decoder:
        vocab = spec.vocab_size / tp
        # The LM head stays in bf16 under fp8 training.
        th = gemm_time_fn(2 if fp8 else b, bf16_peak, bw, model, maximum, ceil)
        head = th(tokens, vocab, spec.hidden_size) + th(tokens, spec.hidden_size, vocab)
        if not work.is_lora:
            head = head + th(spec.hidden_size, vocab, tokens)
    return stage_layers * layer + head


def offloaded_step_s(work: TrainWork, params: Any, device: Device) -> Any:
    """An optimizer step on the CPU (ZeRO-Offload): the same state traffic at the host's memory
    bandwidth, then the updated 16-bit parameters copied back over PCIe (the gradients' copy
    out overlaps the backward pass, as ZeRO-Offload schedules it). 0 where the host is unknown."""
    if not device.host_memory_bytes_per_s or not device.host_bytes_per_s:
        return 0.0 * params
    step = optimizer_step_bytes(work, 1.0) * params / device.host_memory_bytes_per_s
    return step + params * work.tensor_bytes / device.host_bytes_per_s


def params_offload_s(
    shard_bytes: Any,
    grad_bytes: Any,
    grad_accum: Any,
    passes: int,
    busy_s: Any,
    device: Device,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Exposed seconds per step of parameter offloading: every micro-batch copies this GPU's
    parameter shard (``shard_bytes``) in for each pass and its gradient shard (``grad_bytes``;
    LoRA's adapters only) out, over PCIe, prefetched behind the compute as far as it lasts.
    Floats or numpy arrays."""
    if not device.host_bytes_per_s:
        return 0.0 * busy_s
    copy_s = grad_accum * (passes * shard_bytes + grad_bytes) / device.host_bytes_per_s
    return maximum(0.0, copy_s - DP_OVERLAP * busy_s)


def training_perf(spec: ModelSpec, work: TrainWork, device: Device) -> TrainPerf:
    """Step time of ``work`` on GPUs like ``device`` (layout in ``work.parallel``).

    Per micro-batch on the busiest GPU: matmul time (FLOPs of its pipeline stage, split over TP,
    at the measured matmul ceiling) plus memory time (weights read per pass, the non-matmul ops,
    the loss). Per step: the micro-batches, the optimizer step (memory-bound), the exposed
    communication and the 1F1B bubble ``(p-1)/vpp`` micro-batch times (Narayanan et al. 2021).
    """
    par = work.parallel
    frozen = 1.0 if work.is_lora else 0.0
    # Flash/SDPA kernels skip the masked half of causal attention; eager attention computes
    # the full s x s scores and masks them.
    causal = work.attention != "eager"
    micro = step_flops(
        spec,
        work.batch,
        work.seq,
        recompute=work.recompute,
        recompute_every=work.recompute_every,
        causal=causal,
        frozen_fraction=frozen,
    )
    model_per_micro = model_step_flops(spec, work.batch, work.seq, frozen)
    tokens = work.batch * work.seq
    m = work.grad_accum
    layers = math.ceil(spec.num_layers / par.pp)
    matmul_s = train_matmul_seconds(spec, work, device, tokens, par.tp, layers)
    split = param_split(spec, par.tp, par.pp, par.ep)
    passes = 3 if work.recompute == "full" else 2
    # Weights are read by the GEMMs themselves (kernel model): here only the other ops.
    memory_s = elementwise_seconds(
        spec, work, device.bandwidth, device.gemm_model, layers, tokens, par.tp
    )
    memory_s += loss_bytes(spec, work, tokens) / device.bandwidth
    if work.activation_offload and device.host_bytes_per_s:
        # Saved activations go to the CPU in forward and come back in backward on a side stream,
        # hidden behind the matmuls as far as they last.
        copy_s = 2 * offloaded_activation_bytes(spec, work) / device.host_bytes_per_s
        memory_s += max(0.0, copy_s - matmul_s)
    per_micro_s = matmul_s + memory_s
    trainable = lora_adapter_params(spec, work) / (par.tp * par.pp) if work.is_lora else split.total
    # DualPipe: a rank updates and reduces both stages it holds (DeepSeek-V3 report, Table 2).
    trainable *= parameter_copies(par.pp_schedule)
    opt_shard = par.zero_group if par.zero >= 1 else 1
    optimizer_s = (
        offloaded_step_s(work, trainable / opt_shard, device)
        if work.offload_optimizer
        else (optimizer_step_bytes(work, trainable / opt_shard) / device.bandwidth)
    )
    compute_s = matmul_s * m
    memory_total_s = memory_s * m + optimizer_s
    busy_s = compute_s + memory_total_s
    memory_total_s += loss_scaling_s(work, trainable / opt_shard, device.bandwidth, busy_s)

    comm: dict[str, float] = {}
    net = device.network
    h = spec.hidden_size
    # Activations, gradients and gathered weights travel in bf16 under fp8 training.
    tb = work.tensor_bytes
    if par.tp > 1:
        link = net.link_for(par.tp)
        volume = tokens * h * tb
        # Megatron: 2 all-reduces in forward and 2 in backward per layer (attention and MLP
        # outputs); with sequence parallelism an all-gather and a reduce-scatter replace each,
        # moving the same bytes (Korthikanti et al. 2022, §4.2.2). Recompute repeats forward.
        per_layer = 4 + (2 if work.recompute == "full" else 0)
        one = (
            all_gather_s(volume, par.tp, link) + reduce_scatter_s(volume, par.tp, link)
            if par.sp
            else all_reduce_s(volume, par.tp, link)
        )
        comm["tensor_parallel"] = per_layer * layers * one * m
    if par.ep > 1 and spec.moe is not None and spec.moe_layers:
        a2a_bytes = dispatch_bytes(tokens, spec, tb, par.tp)
        one_a2a = expert_all_to_all_s(
            net, a2a_bytes, par.ep, par.expert_tp, spec=spec, dispatcher=work.ep_dispatcher
        )
        moe_layers = math.ceil(len(spec.moe_layers) / par.pp)
        # Dispatch and combine in forward, and again in backward.
        comm["expert_all_to_all"] = 4 * moe_layers * one_a2a * m
    bubble_s = 0.0
    if par.pp > 1:
        link = net.point_to_point_link(par.pp, par.tp)
        hop_s = p2p_s(tokens * h * tb / par.tp, link)
        shares = pass_shares(spec, work)
        # DualPipe's paired forward and backward chunks hide each other's all-to-alls and
        # transfers as far as their compute lasts (estimate/pipeline.py).
        a2a_s, comm["pipeline_p2p"] = pipeline_exposed_s(
            par.pp_schedule,
            comm.get("expert_all_to_all", 0.0) / m,
            hop_s,
            per_micro_s,
            par.vpp,
            shares,
            m,
        )
        if par.pp_schedule == "dualpipe" and "expert_all_to_all" in comm:
            comm["expert_all_to_all"] = a2a_s
        # Fill and drain: each a chunk's compute and a transfer (estimate/pipeline.py).
        bubble_s = pipeline_bubble_s(par.pp_schedule, par.pp, par.vpp, per_micro_s, hop_s, shares)
    grad_bytes, reduce_bytes, gather_bytes = dp_bytes(work, trainable, tb)
    # What FSDP gathers and CPU offload copies: QLoRA's base in NF4.
    weight_bytes = base_weight_bytes(work, split.layer_linear, split.other)
    if par.dp > 1:
        group = par.zero_group if par.zero else par.dp
        link = net.link_for(group, par.tp * par.pp)
        # HSDP: the shard groups' gradient shards are all-reduced across the replicas.
        replicas = par.dp // group
        replica_s = (
            all_reduce_s(
                reduce_bytes / group, replicas, net.link_for(replicas, par.tp * par.pp * group)
            )
            if replicas > 1
            else 0.0
        )
        if par.zero >= 3:
            # FSDP: all-gather each unit's parameters before each forward, recompute and
            # backward pass, reduce-scatter its gradients after each backward (fsdp_syncs);
            # prefetching hides a phase's collectives behind that phase's compute.
            root_bytes = split.other * tb
            exposed = fsdp_exposed_s(
                work=work,
                weight_bytes=weight_bytes,
                grad_bytes=grad_bytes,
                root_bytes=root_bytes,
                units=layers,
                group=group,
                bandwidth=link.effective_bytes_per_s * link.gather_share,
                ring_latency=net.ring_latency(group, par.tp * par.pp),
                base=link.base_latency_s,
                per_micro_s=per_micro_s,
                replica_s=replica_s,
                root_s=fsdp_root_s(root_bytes, work, group, link),
                micro_batches=m,
                syncs=fsdp_syncs(work),
                backward_passes=fsdp_backward_gathers(work, par.pp),
                gathers_per_unit=zero3_gathers_per_unit(
                    work, split.layer_linear / max(layers, 1), layer_matrices(spec)
                ),
            )
        else:
            dp_s = (
                reduce_scatter_s(reduce_bytes, group, link)
                + all_gather_s(gather_bytes, group, link)
                + replica_s
                if par.zero >= 2
                else all_reduce_s(
                    all_reduce_bytes(par.zero, reduce_bytes, gather_bytes), group, link
                )
                + replica_s
            )
            # Buckets reduce while the last micro-batch's backward (2/3 of it) runs, unless
            # the framework reduces on the compute stream (DeepSpeed below ZeRO 3).
            exposed = max(0.0, dp_s - grad_reduce_overlap(work) * per_micro_s * 2 / 3)
        comm["data_parallel"] = exposed
    if work.offload_params:
        group = par.zero_group if par.zero >= 3 else 1
        comm["host_offload"] = params_offload_s(
            weight_bytes / group, grad_bytes / group, m, passes, compute_s + memory_total_s, device
        )
    # Every collective waits for the slowest GPU of the job (estimate/stragglers.py).
    if par.gpus > 1:
        comm["straggler_wait"] = straggler_wait_s(compute_s + memory_total_s, par.gpus)
    comm_s = sum(comm.values())
    step = compute_s + memory_total_s + comm_s + bubble_s
    breakdown = {
        "compute": compute_s,
        "memory": memory_total_s,
        "communication": comm_s,
        "bubble": bubble_s,
    }
    bound = max(
        ("compute", compute_s),
        ("memory", memory_total_s),
        ("communication", comm_s + bubble_s),
        key=lambda kv: kv[1],
    )[0]
    total_model = model_per_micro * m * par.dp
    total_hw = micro.hardware_flops * m * par.dp
    assumptions = _training_assumptions(
        device.gemm_model,
        device.memory_efficiency,
        device.efficiency_source,
        work.kernels,
        grad_reduce_overlap(work),
    )
    return TrainPerf(
        gpus=par.gpus,
        flops_per_step=total_model,
        hardware_flops_per_step=total_hw,
        step_time_s=step,
        tokens_per_step=tokens * m * par.dp,
        breakdown_s=breakdown,
        bound=bound,
        comm_detail_s=comm,
        assumptions=assumptions,
    )


@lru_cache(maxsize=64)
def _training_assumptions(
    gemm: GemmModel, memory_efficiency: float, efficiency_source: str, kernels: str, overlap: float
) -> tuple[str, ...]:
    """The assumptions every training estimate on one card states (formatted once per card and
    kernel class: the planner asks for thousands of layouts)."""
    return (
        N_(
            "GEMMs by shape: tensor cores at {compute:.0%} of peak on tile-padded shapes, "
            "operands streamed at {memory:.0%} of the bandwidth, {launch:.0f} us per kernel "
            "({source})"
        ).format(
            compute=gemm.compute_efficiency,
            memory=gemm.memory_efficiency,
            launch=gemm.launch_s * 1e6,
            source=gemm.source or efficiency_source,
        ),
        N_("memory at {efficiency:.0%} of peak bandwidth").format(efficiency=memory_efficiency),
        N_("{kernels} kernels for the non-matmul ops").format(kernels=kernels),
        N_("flash/SDPA kernels skip the masked half of causal attention; MFU counts the full s²"),
        N_("gradient reduction overlaps {overlap:.0%} of the backward pass (bucketed)").format(
            overlap=overlap
        )
        if overlap
        else N_("gradient reduction blocks the backward pass (--blocking-grad-reduce)"),
    )
