"""Serving speed: TTFT, TPOT and throughput of one batch, kernel by kernel.

A prefill is the GEMMs at ``M = batch x prompt`` with attention at the measured rate; a decode
step streams the weights (and the KV cache) once per token, with a launch per kernel and the
element-wise floors; tensor parallelism adds two all-reduces per layer and forward
(:func:`suanli.estimate.comm.tp_all_reduce_s`). The training step is in
:mod:`suanli.estimate.perf`; both take its :class:`~suanli.estimate.perf.Device`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from suanli.estimate.casts import FP8_CAST_BYTES
from suanli.estimate.comm import p2p_s, tp_all_reduce_s
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.flops import forward_flops_per_token
from suanli.estimate.host_dispatch import host_step_s
from suanli.estimate.inference_memory import kv_bytes_per_token
from suanli.estimate.kernels import ServeKernels, serve_forward
from suanli.estimate.kv_traffic import (
    attention_read_factor,
    copy_factor,
    copy_kernels,
    copy_seconds,
)
from suanli.estimate.perf import Device
from suanli.estimate.shapes import serving_shapes
from suanli.estimate.sizes import param_split
from suanli.estimate.speculative import accepted_tokens, eagle_head
from suanli.estimate.workload import InferWork
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec
from suanli.units import DTYPE_BYTES


@dataclass(frozen=True, kw_only=True)
class InferPerf:
    """Latency and throughput of serving."""

    prefill_flops: float
    decode_flops_per_token: float
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    bound: str
    """What limits decode: ``compute``, ``memory`` or ``host`` (Python dispatch)."""
    decode_bytes_per_step: float
    compute_bound_batch: int
    """The batch from which a decode step is limited by compute rather than memory."""
    breakdown_s: dict[str, float]
    request_s: float = 0.0
    """One request end to end: TTFT + (output - 1) x TPOT."""
    batch_tokens_per_s: float = 0.0
    """Output tokens/s of a static batch (every sequence starts together and the prefill runs
    first): batch x output / request_s."""
    kv_token_bytes: float = 0.0
    """KV bytes one token adds per layer on one GPU (what the decode-attention lookup reads)."""


def weight_bytes(spec: ModelSpec, work: InferWork) -> float:
    """Weight bytes on one GPU of ``work.tp`` in ``work.weight_format``: the linear layers
    quantized, the rest (embeddings, LM head, norms) in 16 bits; GGUF and 16-bit formats whole."""
    from suanli.catalog.formats import get_format

    fmt = get_format(work.weight_format)
    split = param_split(spec, work.tp)
    if fmt.kind == "gguf" or fmt.bits_per_weight >= 16:
        return split.total * fmt.bits_per_weight / 8
    return split.layer_linear * fmt.bits_per_weight / 8 + split.other * 2


def streamed_weight_bytes(spec: ModelSpec, work: InferWork) -> float:
    """:func:`weight_bytes` as a decode step's time sees them: the quantized linear layers read at
    their format's ``dequant_efficiency`` of the 16-bit streaming rate (the kernel dequantizes
    them), so ``bytes / dequant_efficiency``; the rest as stored."""
    from suanli.catalog.formats import get_format

    fmt = get_format(work.weight_format)
    if fmt.dequant_efficiency >= 1 or fmt.kind == "gguf" or fmt.bits_per_weight >= 16:
        return weight_bytes(spec, work)
    split = param_split(spec, work.tp)
    return split.layer_linear * fmt.bits_per_weight / 8 / fmt.dequant_efficiency + split.other * 2


def active_weight_bytes(spec: ModelSpec, work: InferWork, batch: int) -> float:
    """Weights a decode step reads: all dense weights, and the experts the batch touches."""
    total = weight_bytes(spec, work)
    if not spec.is_moe or spec.moe is None:
        return total
    counts = count_params(spec).by_component
    experts = counts["experts"]
    touched = 1 - (1 - spec.moe.experts_per_token / spec.moe.num_experts) ** batch
    return total * (1 - experts / count_params(spec).total * (1 - touched))


def low_precision_speedup(precision: str) -> float:
    """A precision's dense tensor rate over the 16-bit rate on the cards that have it: the
    bytes ratio (Hopper's and Blackwell's fp8 twice bf16, Blackwell's fp4 four times); 1 for
    16 bits and up. Attention stays in 16 bits, so its rate is the peak over this."""
    return max(DTYPE_BYTES["bf16"] / DTYPE_BYTES.get(precision, DTYPE_BYTES["bf16"]), 1.0)


def cached_tokens(prompt: int, prefix_hit: float) -> int:
    """Tokens of a ``prompt`` the prefix cache already holds: its ``prefix_hit`` share, but
    never the last token, which the engine always computes for the first output's logits."""
    return max(min(int(prompt * prefix_hit), prompt - 1), 0)


def prefill_shares(prompt: int, cached: Any) -> tuple[Any, Any]:
    """(share of the prompt's linear-layer work, share of its causal attention) a prefill does
    when ``cached`` tokens of it are in the prefix cache: the new tokens run every linear layer,
    and token ``i`` attends to ``i`` earlier ones, so the attention left is
    ``(prompt^2 - cached^2) / prompt^2`` of the whole prompt's."""
    new = (prompt - cached) / prompt
    return new, 1 - (cached / prompt) ** 2


def prefill_flops_per_sequence(spec: ModelSpec, prompt: int, cached: Any) -> Any:
    """FLOPs of one sequence's prefill of ``prompt`` tokens with ``cached`` of them in the prefix
    cache: the linear work of the new tokens and their share of the causal attention
    (:func:`prefill_shares`)."""
    per_token = forward_flops_per_token(spec, prompt, causal=True)
    core = per_token["attention_core"]
    linear_share, attention_share = prefill_shares(prompt, cached)
    return ((sum(per_token.values()) - core) * linear_share + core * attention_share) * prompt


def draft_seconds(
    spec: ModelSpec, work: InferWork, device: Device, prompt: int, output: int
) -> float:
    """Seconds a speculative decoding drafter spends per verify pass: nothing for prompt lookup
    (``ngram``, on the CPU); for ``eagle``, ``spec_tokens`` decode steps of a one-layer model of
    the target's shape (:func:`suanli.estimate.speculative.eagle_head`)."""
    if work.spec_method != "eagle" or not work.spec_tokens:
        return 0.0
    head = replace(work, spec_tokens=0, spec_acceptance=None, prefix_hit=0.0)
    step = inference_perf(eagle_head(spec), head, device, prompt, output).tpot_s
    return work.spec_tokens * step


def kv_dequant_seconds(gpu_id: str, work: InferWork, kv_bytes: Any) -> Any:
    """Seconds a decode step's attention spends converting an fp8 KV cache of ``kv_bytes`` (one
    GPU, the whole batch) back to 16 bits: its elements at the engine's measured rate on this
    card (:func:`suanli.catalog.kv_dequant.fp8_kv_rate`); 0 for a 16-bit cache and for a pair
    nobody measured. Floats or numpy arrays."""
    from suanli.catalog.kv_dequant import fp8_kv_rate

    measured = fp8_kv_rate(gpu_id, work.engine) if work.kv_dtype == "fp8" else None
    if measured is None or math.isinf(measured.elements_per_s):
        return 0.0 * kv_bytes
    return kv_bytes / work.kv_bytes / measured.elements_per_s


def serve_kernels(
    spec: ModelSpec,
    weight_format: str,
    kv_bytes_per_seq: Any,
    batch: Any,
    tp: Any,
    prompt: int,
    device: Device,
    *,
    kv_efficiency: Any = None,
    projections: str = "fused",
    kernels: str = "eager",
    cached: Any = 0,
    verify: int = 1,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
) -> tuple[ServeKernels, ServeKernels]:
    """Kernel-level seconds of the prefill of ``batch`` prompts and of one decode step
    (:func:`suanli.estimate.kernels.serve_forward`); ``kv_bytes_per_seq`` is the KV cache one
    sequence holds on one GPU at the average decode context; ``projections`` how the engine
    launches the input projections (:func:`suanli.estimate.shapes.serving_shapes`), ``kernels``
    whether it fuses each residual add into the next norm (:func:`serving_op_bytes`); ``cached``
    prompt tokens per sequence are in the prefix cache (:func:`prefill_shares`); each decode pass
    runs ``verify`` tokens per sequence (speculative decoding's drafts and the next token:
    :mod:`suanli.estimate.speculative`) over the same KV cache. Floats or numpy arrays."""
    from suanli.catalog.formats import get_format

    fmt = get_format(weight_format)
    # Dequantizing in the kernel slows the weights' stream (WeightFormat.dequant_efficiency).
    weight_bytes_per_element = fmt.bits_per_weight / 8 / fmt.dequant_efficiency
    shapes = serving_shapes(spec, projections)
    moe = spec.moe
    share = moe.experts_per_token / moe.num_experts if moe is not None else 1.0
    common = {
        "shapes": shapes,
        "num_layers": spec.num_layers,
        "hidden": spec.hidden_size,
        "vocab": spec.vocab_size if spec.is_decoder else 0,
        "tp": tp,
        "weight_bytes": weight_bytes_per_element,
        "peak_flops": device.peak_flops,
        "bandwidth_bytes_per_s": device.memory_bytes_per_s,
        "model": device.gemm_model,
        "op_bytes": serving_op_bytes(spec, tp, kernels=kernels),
        "expert_share": share,
        "num_experts": moe.num_experts if moe is not None else 1,
        # fp8 W8A8 and fp4 W4A4 quantize each linear layer's input on the fly (an amax pass and
        # a cast: the fp4 cast writes half the bytes, a small part of the pass).
        "activation_cast_bytes": (
            FP8_CAST_BYTES["dynamic"] if fmt.gemm_dtype in ("fp8", "fp4") else 0.0
        ),
        "head_bytes": fmt.lm_head_bytes,
        "maximum": maximum,
        "ceil": ceil,
    }
    core = forward_flops_per_token(spec, prompt, causal=True)["attention_core"]
    head_dim = spec.attention.head_dim
    measured = device.gemm_model.prefill_attention
    floor: float | None = None
    if measured is not None:
        # The engine's kernel as measured at head dim 128, moved to this head dim the way the
        # FlashAttention tables move (a larger head does more work per loaded tile).
        ratio = device.attention_efficiency(prompt, head_dim, True, False) / (
            device.attention_efficiency(prompt, 128, True, False)
        )
        rate = measured.rate(prompt) * ratio
        floor = measured.floor_s
    else:
        # Attention stays in 16 bits with fp8 weights: half the fp8 tensor rate.
        bf16_peak = device.peak_flops / low_precision_speedup(device.precision)
        rate = bf16_peak * device.attention_efficiency(prompt, head_dim, True, False)
    linear_share, attention_share = prefill_shares(prompt, cached)
    prefill = serve_forward(
        rows=batch * prompt * linear_share,
        sequences=batch,
        attention_flops=core * prompt * batch * attention_share,
        attention_flops_per_s=rate,
        attention_floor_s=floor,
        **common,
    )
    touched = 1 - (1 - share) ** (batch * verify) if moe is not None else 1.0
    decode = serve_forward(
        rows=batch * verify,
        sequences=batch * verify,  # a verify pass takes logits at every position
        kv_bytes=kv_bytes_per_seq * batch,
        kv_efficiency=kv_efficiency,
        touched_share=touched,
        **common,
    )
    return prefill, decode


def inference_perf(
    spec: ModelSpec, work: InferWork, device: Device, prompt: int, output: int
) -> InferPerf:
    """Prefill ``prompt`` tokens, then decode ``output`` tokens, for ``work.batch`` sequences."""
    tp = work.tp
    b = 2
    # Prefill: compute-bound matmuls over the prompt's uncached tokens (causal attention).
    cached = cached_tokens(prompt, work.prefix_hit)
    prefill_flops = prefill_flops_per_sequence(spec, prompt, cached) * work.batch
    new_tokens = prompt - cached
    prefill_compute = prefill_flops / tp / device.matmul_flops
    weights = weight_bytes(spec, work)
    prefill_memory = weights / device.bandwidth
    net = device.network
    link = net.link_for(tp)
    tp_comm = (
        2
        * spec.num_layers
        * tp_all_reduce_s(work.batch * new_tokens * spec.hidden_size * b, tp, link)
        if tp > 1
        else 0.0
    )
    # Pipeline stages run in turn for every token (no micro-batch overlap, as llama.cpp's layer
    # split): the pass costs what one GPU holding every layer would, plus one activation hop
    # between neighbouring stages.
    hops = work.pp - 1
    pp_link = net.point_to_point_link(work.pp, tp) if hops else link
    pp_prefill = hops * p2p_s(work.batch * new_tokens * spec.hidden_size * b / tp, pp_link)
    # Speculative decoding: each decode pass runs the drafts and the next token per sequence.
    verify = work.spec_tokens + 1
    pp_decode = hops * p2p_s(work.batch * verify * spec.hidden_size * b / tp, pp_link)
    tp_comm += pp_prefill
    context = prompt + output / 2
    kv_token = kv_bytes_per_token(spec, work.kv_bytes, int(context), tp)
    per_seq_kv = kv_token * context
    # Repeated KV heads: the attention reads the g-times larger copy (suanli.estimate.kv_traffic).
    read = attention_read_factor(spec, work)
    token_bytes = kv_token * read / max(spec.num_layers, 1)  # per layer: what the lookup reads
    kv_eff = (
        device.decode_attention(work.batch, int(context), token_bytes)
        if device.decode_attention is not None
        else None
    )
    prefill_k, decode_k = serve_kernels(
        spec,
        work.weight_format,
        per_seq_kv * read,
        work.batch,
        tp,
        prompt,
        device,
        kv_efficiency=kv_eff,
        projections=work.projections,
        kernels=work.kernels,
        cached=cached,
        verify=verify,
    )
    # Kernel by kernel (GEMMs by shape, attention, element-wise floors), never faster than the
    # roofline of the whole pass, nor than the host can launch it (Python dispatch).
    host = host_step_s(spec, work.dispatch)
    # A GPU runs kernels while the host launches the next (a floor); a CPU runs each op on the
    # thread that dispatched it (the two add).
    synchronous = device.gemm is None
    ttft = max(prefill_compute, prefill_memory, prefill_k.total_s, 0 if synchronous else host)
    ttft += tp_comm + (host if synchronous else 0)
    # Decode: one token per sequence per step, attending to the average context.
    decode_per_token = sum(forward_flops_per_token(spec, int(context), causal=False).values())
    decode_flops = decode_per_token * work.batch * verify
    kv = per_seq_kv * work.batch
    # The cache's copies (transformers' concatenating update, repeated KV heads): serial
    # streaming kernels after the attention's own read.
    copy_bytes = kv * copy_factor(spec, work)
    copy_s = copy_seconds(
        copy_bytes,
        copy_kernels(spec, work),
        spec.num_layers,
        device.memory_bytes_per_s,
        device.gemm_model,
    )
    step_bytes = active_weight_bytes(spec, work, work.batch * verify) + kv * read + copy_bytes
    dequant_s = kv_dequant_seconds(device.name, work, kv)
    decode_compute = decode_flops / tp / device.matmul_flops
    decode_memory = step_bytes / device.bandwidth
    decode_comm = (
        2 * spec.num_layers * tp_all_reduce_s(work.batch * verify * spec.hidden_size * b, tp, link)
        if tp > 1
        else 0.0
    ) + pp_decode
    decode_kernels = decode_k.total_s + copy_s + dequant_s
    tpot = max(decode_compute, decode_memory, decode_kernels, 0 if synchronous else host)
    tpot += decode_comm + (host if synchronous else 0)
    draft_s = 0.0
    if work.spec_tokens:
        # One pass yields accepted_tokens() tokens per sequence, after the drafter's work.
        draft_s = draft_seconds(spec, work, device, prompt, output)
        acceptance = work.spec_acceptance or 0.0  # set whenever spec_tokens is (InferWork)
        tpot = (tpot + draft_s) / accepted_tokens(work.spec_tokens, acceptance)
    bound = "compute" if decode_compute >= decode_memory else "memory"
    if host > max(decode_compute, decode_memory, decode_kernels) and not synchronous:
        bound = "host"  # Python's dispatch, not the GPU, sets the pace
    # Smallest batch where compute time per step reaches memory time.
    per_seq_flops = decode_per_token / tp / device.matmul_flops
    per_seq_mem = per_seq_kv * (read + copy_factor(spec, work)) / device.bandwidth
    weights_s = weights / device.bandwidth
    crossover = (
        math.inf if per_seq_flops <= per_seq_mem else weights_s / (per_seq_flops - per_seq_mem)
    )
    compute_bound_batch = int(min(math.ceil(crossover), 1 << 20)) if math.isfinite(crossover) else 0
    tokens_per_s = work.batch / tpot
    # A static batch (offline benchmarks such as TensorRT-LLM's gptSessionBenchmark or vLLM's
    # benchmark_latency) prefills every prompt, then decodes: its rate counts the prefill too.
    request_s = ttft + max(output - 1, 0) * tpot
    return InferPerf(
        prefill_flops=prefill_flops,
        decode_flops_per_token=decode_per_token,
        ttft_s=ttft,
        tpot_s=tpot,
        tokens_per_s=tokens_per_s,
        bound=bound,
        decode_bytes_per_step=step_bytes,
        compute_bound_batch=compute_bound_batch,
        breakdown_s={
            "prefill_compute": prefill_compute,
            "prefill_memory": prefill_memory,
            "decode_compute": decode_compute,
            "decode_memory": decode_memory,
            "communication": tp_comm + decode_comm,
            "prefill_kernels": prefill_k.total_s,
            "decode_gemms": decode_k.gemm_s,
            "decode_attention": decode_k.attention_s,
            "decode_small_ops": decode_k.small_ops_s,
            "decode_cache_copy": copy_s,
            "decode_kv_dequant": dequant_s,
            "spec_draft": draft_s,
            "host_dispatch": host,
        },
        request_s=request_s,
        batch_tokens_per_s=work.batch * output / request_s,
        kv_token_bytes=token_bytes,
    )
