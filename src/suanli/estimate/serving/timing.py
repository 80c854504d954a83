"""Per-iteration roofline times of one serving replica, and closed-form sums of them.

:class:`ReplicaCost` holds everything per token of one replica of ``tp`` GPUs, computed once by
:func:`replica_cost`, so that an iteration costs a few arithmetic operations; :func:`sum_max`
sums a run of decode-only iterations in closed form. The cost model is described in
:mod:`suanli.estimate.serving`, of which this module is part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from suanli.estimate.comm import tp_all_reduce_s
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.flops import forward_flops_per_token
from suanli.estimate.inference import streamed_weight_bytes
from suanli.estimate.inference_memory import inference_memory, kv_bytes_per_token
from suanli.estimate.kernels import serving_ops_seconds
from suanli.estimate.perf import Device
from suanli.estimate.serving.config import EngineConfig
from suanli.estimate.shapes import serving_shapes
from suanli.estimate.workload import KV_DTYPES, InferWork, check_tensor_parallel
from suanli.i18n import N_
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec

TP_CHOICES = (1, 2, 4, 8)


def elementwise_seconds_per_token(spec: ModelSpec, device: Device, tp: int = 1) -> float:
    """Seconds one token spends in the non-matmul kernels of a forward pass on one GPU, summed
    over the layers: the bytes of each kernel (:func:`suanli.estimate.elementwise.
    serving_op_bytes`) at the share of the peak bandwidth that kind of kernel was measured to
    reach (:class:`suanli.estimate.kernels.ElementwiseEfficiency`). The kernels' floors are in
    :func:`kernel_floor_s`; attention and the KV cache are counted by the attention class."""
    # perf's per-kernel time for one token, without the floors (they are paid per iteration).
    no_floor = replace(device.gemm_model, small_op_s=0.0)
    ops = serving_op_bytes(spec, tp)
    seconds = serving_ops_seconds(ops, 1, spec.num_layers, device.memory_bytes_per_s, no_floor)
    return float(seconds)


@dataclass(frozen=True, kw_only=True)
class ReplicaCost:
    """Per-GPU costs of one replica, computed once: everything an iteration needs."""

    device: Device
    tp: int
    linear_flops: float
    """FLOPs per token of the linear layers on one GPU, LM head excluded."""
    lm_head_flops: float
    """FLOPs per token that produces logits, on one GPU."""
    attn_a: float
    attn_b: float
    """Attention FLOPs of one query on one GPU: ``attn_a + attn_b x keys``."""
    weight_bytes: float
    """Weights read per iteration on one GPU (all of them for a dense model), as the step's time
    sees them: quantized ones over their format's ``dequant_efficiency``."""
    expert_fraction: float
    """Share of the weights in routed experts (MoE); 0 for dense models."""
    expert_pick: float
    """``experts_per_token / num_experts`` (MoE)."""
    kv_bytes: float
    """KV bytes per token position on one GPU."""
    elementwise_s: float
    """Seconds of the non-matmul kernels per token on one GPU
    (:func:`elementwise_seconds_per_token`)."""
    logits_bytes: float
    """Per token that produces logits: fp32 logits written and read by the sampler (8 V)."""
    allreduce_bytes_per_token: float
    layers: int
    kv_blocks: int
    """Paged KV blocks one replica holds."""
    block_size: int
    memory_bytes: float
    """GPU memory of one GPU."""
    non_kv_bytes: float
    """Weights, prefill peak and runtime overhead on one GPU."""
    weight_format: str = "bf16"
    kv_dtype: str = "bf16"
    max_context: int = 0
    """The model's longest sequence (``max_position_embeddings``); 0: no limit."""
    kernel_floor_s: float = 0.0
    """Per iteration, what no token count amortizes: every GEMM's and attention kernel's launch
    and the element-wise kernels' floors (:mod:`suanli.estimate.kernels`)."""

    def weights_read(self, tokens: int) -> float:
        """Weight bytes an iteration of ``tokens`` tokens reads (MoE: the experts it touches)."""
        if not self.expert_fraction:
            return self.weight_bytes
        touched = 1 - (1 - self.expert_pick) ** tokens
        return self.weight_bytes * (1 - self.expert_fraction * (1 - touched))

    def comm_s(self, tokens: int) -> float:
        """Tensor-parallel all-reduces of an iteration: 2 per layer (attention and MLP)."""
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        link = self.device.network.link_for(self.tp)
        message_bytes = tokens * self.allreduce_bytes_per_token
        return 2 * self.layers * tp_all_reduce_s(message_bytes, self.tp, link)

    def iteration_s(
        self, tokens: int, logits: int, keys: float, kv_positions: float, overhead: float = 0.0
    ) -> float:
        """One iteration: ``tokens`` through the layers, ``logits`` of them through the LM head,
        ``keys`` query-key pairs in attention, ``kv_positions`` KV entries read or written."""
        flops = self.device.matmul_flops
        bw = self.device.bandwidth
        linear = max(
            (tokens * self.linear_flops + logits * self.lm_head_flops) / flops,
            self.weights_read(tokens) / bw,
        )
        attention = max(
            (tokens * self.attn_a + keys * self.attn_b) / flops, kv_positions * self.kv_bytes / bw
        )
        elementwise = tokens * self.elementwise_s + logits * self.logits_bytes / bw
        floor = self.kernel_floor_s
        return linear + attention + elementwise + self.comm_s(tokens) + overhead + floor


def kernel_floor_s(spec: ModelSpec, device: Device, kernels: str = "eager") -> float:
    """The launches and element-wise floors of one forward pass (an iteration at batch 1 cannot
    be faster): one GEMM per linear weight group a serving engine launches in each layer (QKV and
    gate/up fused, :func:`~suanli.estimate.shapes.serving_shapes`; the ``k`` routed experts of a
    token in MoE layers), one attention kernel per layer, the LM head, and the element-wise
    kernels' floors, as the speed model counts them (:func:`~suanli.estimate.kernels.
    serving_ops_seconds` of no tokens: two norms, two adds, the activation, and rotary where the
    model has it; with ``kernels`` ``fused`` or ``compiled`` each add runs inside the next norm)."""
    model = device.gemm_model
    gemms = 0.0
    for s in serving_shapes(spec):
        if s.kind == "experts" and spec.moe is not None:
            gemms += s.count * spec.moe.experts_per_token / spec.moe.num_experts
        else:
            gemms += s.count
    launches = gemms + 2 * spec.num_layers + 1  # + attention per layer, + LM head
    small = serving_ops_seconds(
        serving_op_bytes(spec, kernels=kernels),
        0,
        spec.num_layers,
        device.memory_bytes_per_s,
        model,
    )
    return launches * model.launch_s + float(small)


def replica_cost(
    spec: ModelSpec,
    device: Device,
    *,
    tp: int = 1,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    memory_bytes: float,
    config: EngineConfig | None = None,
    reference_context: int = 2048,
) -> ReplicaCost:
    """Precompute the per-token costs and the KV blocks of one replica of ``tp`` GPUs.

    ``reference_context``: the context at which sliding-window attention is linearised (keys
    per query and KV bytes per position); exact for models without sliding windows.
    """
    config = config or EngineConfig()
    floor = kernel_floor_s(spec, device, config.kernels)
    elementwise_s = elementwise_seconds_per_token(spec, device, tp)
    if device.gemm is not None:
        # GEMMs of real shapes reach the kernel model's efficiencies, not the best shape's.
        device = replace(
            device,
            matmul_efficiency=device.gemm.compute_efficiency,
            memory_efficiency=device.gemm.memory_efficiency,
        )
    if tp not in TP_CHOICES:
        raise ValueError(
            N_("--tp must be one of {choices}, got {value}").format(choices=TP_CHOICES, value=tp)
        )
    check_tensor_parallel(spec.attention.num_heads, tp, spec.name)
    if kv_dtype not in KV_DTYPES:
        raise ValueError(
            N_("--{option} {value!r} is not one of {allowed}").format(
                option="kv-dtype", value=kv_dtype, allowed=", ".join(KV_DTYPES)
            )
        )
    if not spec.is_decoder:
        raise ValueError(
            N_("{model} is not a decoder; serving simulates text generation").format(
                model=spec.name
            )
        )
    work = InferWork(
        batch=config.max_batch,
        context=1,
        weight_format=weight_format,
        kv_dtype=kv_dtype,
        tp=tp,
        prefill_chunk=config.token_budget,
        gpu_memory_utilization=config.gpu_memory_utilization,
    )
    ref = max(2, int(reference_context))
    parts = forward_flops_per_token(spec, ref, causal=False)
    linear = sum(v for k, v in parts.items() if k not in ("attention_core", "lm_head"))
    core_ref = parts["attention_core"]
    core_2ref = forward_flops_per_token(spec, 2 * ref, causal=False)["attention_core"]
    attn_b = (core_2ref - core_ref) / ref
    attn_a = core_ref - attn_b * ref
    # What a step's time sees: quantized weights at their kernel's dequantizing rate.
    weights = streamed_weight_bytes(spec, work)
    expert_fraction = expert_pick = 0.0
    if spec.is_moe and spec.moe is not None:
        counts = count_params(spec)
        expert_fraction = counts.by_component["experts"] / counts.total
        expert_pick = spec.moe.experts_per_token / spec.moe.num_experts
    kv_tok = kv_bytes_per_token(spec, work.kv_bytes, ref, tp)
    mem = inference_memory(spec, work)
    non_kv = mem.total_bytes - mem.breakdown["kv_cache"]
    usable = memory_bytes * config.gpu_memory_utilization - non_kv
    blocks = int(usable // (kv_tok * config.block_size)) if usable > 0 and kv_tok > 0 else 0
    return ReplicaCost(
        device=device,
        tp=tp,
        linear_flops=linear / tp,
        lm_head_flops=parts["lm_head"] / tp,
        attn_a=attn_a / tp,
        attn_b=attn_b / tp,
        weight_bytes=weights,
        expert_fraction=expert_fraction,
        expert_pick=expert_pick,
        kv_bytes=kv_tok,
        elementwise_s=elementwise_s,
        logits_bytes=8.0 * spec.vocab_size,
        allreduce_bytes_per_token=spec.hidden_size * 2,
        layers=spec.num_layers,
        kv_blocks=max(blocks, 0),
        block_size=config.block_size,
        memory_bytes=memory_bytes,
        non_kv_bytes=non_kv,
        weight_format=weight_format,
        kv_dtype=kv_dtype,
        max_context=spec.max_position_embeddings,
        kernel_floor_s=floor,
    )


# --- closed-form sums --------------------------------------------------------------------------


def lin_sum(a0: float, a1: float, lo: int, hi: int) -> float:
    """Sum of ``a0 + a1 i`` for ``i`` in ``[lo, hi)``."""
    count = hi - lo
    if count <= 0:
        return 0.0
    return count * a0 + a1 * (lo + hi - 1) * count / 2


def sum_max(c0: float, c1: float, m0: float, m1: float, m: int) -> float:
    """Sum over ``i < m`` of ``max(c0 + c1 i, m0 + m1 i)`` (one crossover at most)."""
    d0, d1 = c0 - m0, c1 - m1
    half = m * (m - 1) / 2
    if d0 <= 0 and d1 <= 0:  # the second dominates throughout (decode: KV reads)
        return m * m0 + m1 * half
    if d0 >= 0 and d1 >= 0:
        return m * c0 + c1 * half
    x = -d0 / d1
    if d1 > 0:  # the first dominates for i >= x
        s = min(max(math.ceil(x), 0), m)
        return lin_sum(m0, m1, 0, s) + lin_sum(c0, c1, s, m)
    s = min(max(math.floor(x) + 1, 0), m)  # the first dominates for i <= x
    return lin_sum(c0, c1, 0, s) + lin_sum(m0, m1, s, m)
