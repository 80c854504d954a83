"""Kernel-level time of a GEMM: the shape matters, not only its FLOPs.

A cuBLAS GEMM ``(M x K) @ (K x N)`` computes whole output tiles, reads its operands at least
once, and costs a launch however small it is::

    t_c = 2 · M' · N' · K / (peak · e_c),   t_m = bytes(M·K + K·N + M·N) / (bandwidth · e_m)
    t = (t_c^p + t_m^p)^(1/p) + t_0

with ``M'`` and ``N'`` rounded up to the tile (128: the M/N tile of cuBLAS's and CUTLASS's
tensor-core kernels on Ampere and Hopper), ``e_c`` the efficiency of the tensor cores on real
model shapes, ``e_m`` the share of the memory bandwidth a GEMM streams its operands at, and
``t_0`` the launch and tail. A 4096-token GEMM of a 70B model's MLP is compute-bound near
``e_c``; a decode GEMM (``M`` = batch) streams its weights and is memory-bound; a LoRA adapter
(``N`` = rank) costs little more than ``t_0``. The same formula at the best shape gives the
datasheet-style ceiling, which is why one efficiency for every matmul was optimistic.

``p`` (``blend``) is how the two overlap: ``p = inf`` is the plain roofline ``max(t_c, t_m)``;
the profiled kernels are fitted best by ``p = 2``, which costs a shape near the ridge (a prefill
of 64-256 tokens) up to 41% more than the larger of the two and changes little where one term
dominates (with ``max`` the fit was 8% too fast on 65-256-row GEMMs and 7% too slow at 1-16).

``e_c``, ``e_m``, ``t_0`` and ``p`` are fitted per profiled card to the kernel times Vidur measured
(``catalog/data/kernels.toml``, ``scripts/derive_kernel_profiles.py``); other cards take their
own measured matmul and bandwidth ceilings, scaled by the profiled card of their generation
(``kernel_model``). The formula works on floats and, with ``maximum``/``ceil`` from numpy, on
arrays (the vectorized planner).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from suanli.hashing import hash_once

#: Output-tile edge of the tensor-core GEMM kernels (M and N are rounded up to it).
TILE = 128
#: The narrow M tile of the kernels for fewer rows than one tile (decode, small batches).
SMALL_TILE = 16
#: The blend ``p`` the bundled profiles are fitted with, and a measured profile is fitted with
#: (scripts/derive_kernel_profiles.py, benchmarks/kernel_sweep.py): the value that leaves no range
#: of GEMM sizes biased by more than 4.4% on the A100, H100 and A40 profiles.
PROFILE_BLEND = 2.0


@dataclass(frozen=True, kw_only=True)
class ElementwiseEfficiency:
    """Shares of the peak memory bandwidth a serving engine's element-wise kernels reach on
    large tensors, by kind (measured op by op: ``catalog/data/kernels.toml``,
    ``scripts/derive_elementwise_profiles.py``). A fused RMSNorm reaches about a third of the
    peak, not the share a streaming copy or a GEMM reaches."""

    norm: float
    rope: float
    activation: float
    add: float


@dataclass(frozen=True, kw_only=True)
class TrainingElementwise:
    """How much longer a training step's element-wise kernels take than their counted bytes at
    the card's achievable bandwidth, by kind and pass, for one PyTorch kernel per op (``eager``),
    hand-fused kernels (``fused``) and torch.compile's generated ones (``compiled``): measured on
    the kernel benchmarks Liger-Kernel publishes with transformers', PyTorch's, torch.compile's
    and Megatron's kernels as baselines (``catalog/data/kernels.toml``,
    ``scripts/extract_liger_elementwise.py``). 1.0 everywhere: the bytes alone."""

    eager_norm: tuple[float, float] = (1.0, 1.0)
    """(forward, backward) of transformers' eager RMSNorm."""
    eager_rope: tuple[float, float] = (1.0, 1.0)
    eager_activation: tuple[float, float] = (1.0, 1.0)
    fused_norm: tuple[float, float] = (1.0, 1.0)
    fused_rope: tuple[float, float] = (1.0, 1.0)
    fused_activation: tuple[float, float] = (1.0, 1.0)
    compiled_norm: tuple[float, float] = (1.0, 1.0)
    compiled_rope: tuple[float, float] = (1.0, 1.0)
    compiled_activation: tuple[float, float] = (1.0, 1.0)

    def of(self, kind: str, kernels: str) -> tuple[float, float]:
        """(forward, backward) slowdown of ``kind`` (norm, rope, activation) for the ``kernels``
        class (eager, fused, compiled); other kinds (residual adds, softmax) stream at the
        achievable bandwidth: (1, 1)."""
        return getattr(self, f"{kernels}_{kind}", (1.0, 1.0))


@dataclass(frozen=True, kw_only=True)
class PrefillAttention:
    """A serving engine's prefill attention kernel on one card, measured:
    ``t = floor_s + F / (rate_flops · s / (s + half_tokens))`` per call over prompts of ``s``
    tokens and ``F`` causal FLOPs. Short prompts leave most of the kernel's tiles masked and its
    pipeline unfilled, so the rate saturates with ``s``; the floor is the launch and the KV-cache
    write (``catalog/data/kernels.toml``, ``scripts/derive_prefill_attention.py``)."""

    floor_s: float
    rate_flops: float
    """The rate long prompts approach, FLOP/s (the causal forward's FLOPs)."""
    half_tokens: float
    """The prompt length at which the kernel reaches half of ``rate_flops``."""
    source: str = ""

    def rate(self, tokens: float) -> float:
        """FLOP/s over prompts of ``tokens`` tokens."""
        return self.rate_flops * tokens / (tokens + self.half_tokens)

    def seconds(self, flops: float, tokens: float) -> float:
        """One call: ``flops`` of causal attention over prompts of ``tokens`` tokens."""
        return self.floor_s + flops / self.rate(tokens)


@dataclass(frozen=True, kw_only=True)
class GemmModel:
    """The three fitted parameters of one card's GEMMs (and where they come from)."""

    compute_efficiency: float
    """Tensor-core efficiency on tile-padded real model shapes, of the dense peak."""
    memory_efficiency: float
    """Share of the peak memory bandwidth a GEMM streams its operands at."""
    launch_s: float
    """Launch and tail of one kernel, seconds."""
    tile: int = TILE
    source: str = ""
    small_op_s: float = 0.0
    """Floor of one small element-wise kernel (norm, rotary, activation, add), seconds."""
    blend: float = 0.0
    """``p`` of ``(t_c^p + t_m^p)^(1/p)``; 0 means ``max(t_c, t_m)`` (the plain roofline)."""
    elementwise: ElementwiseEfficiency | None = None
    """The serving engine's element-wise kernels, where measured (None: they stream at
    ``memory_efficiency``)."""
    training_elementwise: TrainingElementwise = TrainingElementwise()
    """A training step's element-wise kernels against their bytes (1.0: the bytes alone)."""
    prefill_attention: PrefillAttention | None = None
    """The serving engine's prefill attention kernel, where measured (None: the fused-attention
    rates of ``Device.attention`` and one launch per layer)."""

    def __hash__(self) -> int:
        return hash_once(self)

    def elementwise_efficiency(self) -> ElementwiseEfficiency:
        """The measured element-wise efficiencies, or ``memory_efficiency`` for every kind."""
        if self.elementwise is not None:
            return self.elementwise
        e = self.memory_efficiency
        return ElementwiseEfficiency(norm=e, rope=e, activation=e, add=e)


def gemm_seconds(
    m: Any,
    n: Any,
    k: Any,
    dtype_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    *,
    weight_bytes: float | None = None,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
) -> Any:
    """Seconds of one ``(m x k) @ (k x n)`` GEMM (see the module docstring for the formula).

    ``weight_bytes``: bytes per element of the ``k x n`` operand when it is stored in another
    format than the activations (weight-only quantization: 0.5 for 4-bit)."""
    tile = model.tile
    w_bytes = dtype_bytes if weight_bytes is None else weight_bytes
    if maximum is max:  # one GEMM (the scalar path): plain branches, a few times faster
        return gemm_timer(dtype_bytes, peak_flops, bandwidth_bytes_per_s, model, w_bytes)(m, n, k)
    # Below one tile the kernels switch to narrow tiles (GEMV-like, split-K): M pads to a
    # multiple of 16 only. Written with ``maximum`` and ``ceil`` alone so that arrays work.
    big_pad = ceil(m / tile) * tile
    small_pad = ceil(m / SMALL_TILE) * SMALL_TILE if tile > 1 else big_pad
    at_least_one_tile = -maximum(-1.0, ceil(-m / tile))  # min(1, floor(m / tile))
    m_pad = small_pad + (big_pad - small_pad) * at_least_one_tile
    n_pad = ceil(n / tile) * tile
    compute = 2.0 * m_pad * n_pad * k / (peak_flops * model.compute_efficiency)
    traffic = dtype_bytes * (m * k + m * n) + w_bytes * k * n
    memory = traffic / (bandwidth_bytes_per_s * model.memory_efficiency)
    if model.blend:
        p = model.blend
        return (compute**p + memory**p) ** (1 / p) + model.launch_s
    return maximum(compute, memory) + model.launch_s


def gemm_timer(
    dtype_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    weight_bytes: float | None = None,
) -> Callable[[float, float, float], float]:
    """:func:`gemm_seconds` on plain numbers for one card and dtype, as a function of ``(m, n,
    k)`` alone: the scalar path of an estimate times dozens of GEMMs with the same card, so the
    constants are looked up once (the same arithmetic, in the same order)."""
    tile = model.tile
    narrow = tile > 1
    w_bytes = dtype_bytes if weight_bytes is None else weight_bytes
    compute_rate = peak_flops * model.compute_efficiency
    memory_rate = bandwidth_bytes_per_s * model.memory_efficiency
    p = model.blend
    inverse_p = 1 / p if p else 0.0
    launch = model.launch_s
    ceil = math.ceil

    def seconds(m: float, n: float, k: float) -> float:
        # Below one tile the kernels switch to narrow tiles: M pads to a multiple of 16 only.
        m_pad = ceil(m / SMALL_TILE) * SMALL_TILE if narrow and m < tile else ceil(m / tile) * tile
        flops_time = 2.0 * m_pad * (ceil(n / tile) * tile) * k / compute_rate
        bytes_time = (dtype_bytes * (m * k + m * n) + w_bytes * k * n) / memory_rate
        if p:
            blended: float = (flops_time**p + bytes_time**p) ** inverse_p
            return blended + launch
        return (flops_time if flops_time > bytes_time else bytes_time) + launch

    return seconds


def gemm_time_fn(
    dtype_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
    *,
    weight_bytes: float | None = None,
) -> Callable[[Any, Any, Any], Any]:
    """:func:`gemm_seconds` as a function of ``(m, n, k)``: :func:`gemm_timer` on plain numbers,
    the array form with numpy's ``maximum`` and ``ceil``."""
    if maximum is max:
        return gemm_timer(dtype_bytes, peak_flops, bandwidth_bytes_per_s, model, weight_bytes)

    def seconds(m: Any, n: Any, k: Any) -> Any:
        return gemm_seconds(
            m, n, k, dtype_bytes, peak_flops, bandwidth_bytes_per_s, model,
            weight_bytes=weight_bytes, maximum=maximum, ceil=ceil,
        )  # fmt: skip

    return seconds


#: Linear kinds split along their input (row-parallel in Megatron): the others split their output.
ROW_PARALLEL = ("o", "down")


def shard_dims(s: Any, hidden: int, tp: Any, expert_tp: Any = None) -> tuple[Any, Any]:
    """``(n_in, n_out)`` of one linear shape on one GPU of ``tp``: Megatron splits ``n_out`` of
    column-parallel layers and ``n_in`` of the row-parallel ``o``, ``down`` and the experts'
    down projections back to ``hidden``; routed experts over ``expert_tp`` where given."""
    if expert_tp is not None and s.kind == "experts":
        tp = expert_tp
    down = s.kind in ROW_PARALLEL or (
        s.kind in ("experts", "shared") and s.n_out == hidden and s.n_in != hidden
    )
    return (s.n_in / tp, s.n_out) if down else (s.n_in, s.n_out / tp)


@dataclass(frozen=True, kw_only=True)
class LayerGemms:
    """Seconds of the GEMMs of one average layer for one micro-batch, by pass."""

    forward_s: Any
    backward_s: Any
    gemms: int
    """GEMM kernels per layer, forward and backward."""


def layer_gemms(
    shapes: Any,
    num_layers: int,
    hidden: int,
    tokens: Any,
    tp: Any,
    dtype_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    *,
    frozen: bool = False,
    lora_rank: int = 0,
    lora_targets: tuple[str, ...] = (),
    expert_share: float = 1.0,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
    expert_tp: Any = None,
) -> LayerGemms:
    """The linear layers of one average layer (``shapes``: :func:`suanli.estimate.shapes.
    linear_shapes`) as GEMMs: forward ``(tokens x n_in) @ (n_in x n_out)``, backward the input
    gradient ``(tokens x n_out) @ (n_out x n_in)`` and, for trained weights, the weight gradient
    ``(n_in x tokens) @ (tokens x n_out)``. Tensor parallelism splits ``n_out`` (``n_in`` for the
    row-parallel ``o``, ``down`` and the experts' down projections back to ``hidden``). Experts
    see ``tokens x expert_share`` tokens each (``top_k / experts``), split over ``expert_tp``
    GPUs where given (else ``tp``). LoRA adds two rank-``r`` GEMMs per adapted weight, all trained.

    The last answers are kept (arrays included, compared by value): a layout search asks the
    same of every recomputation setting of a card, and half the start-up of ``suanli plan`` was
    these GEMMs. The arrays of a kept answer are shared: read them, never write."""
    args = (
        shapes, num_layers, hidden, tokens, tp, dtype_bytes, peak_flops, bandwidth_bytes_per_s,
        model, frozen, lora_rank, lora_targets, expert_share, maximum, ceil, expert_tp,
    )  # fmt: skip
    return _kept_layer_gemms(_GemmsQuestion(key=tuple(map(_by_value, args)), args=args))


def _by_value(value: Any) -> Any:
    """A hashable stand-in for ``value``: an array's type, shape and bytes, else itself."""
    if hasattr(value, "tobytes"):
        return (value.dtype.str, value.shape, value.tobytes())
    return value


@dataclass(frozen=True, kw_only=True)
class _GemmsQuestion:
    """The arguments of :func:`layer_gemms`, compared and hashed by value."""

    key: tuple[Any, ...]
    args: tuple[Any, ...] = field(compare=False, hash=False)


@lru_cache(maxsize=64)
def _kept_layer_gemms(question: _GemmsQuestion) -> LayerGemms:
    return _layer_gemms(*question.args)


def _layer_gemms(
    shapes: Any,
    num_layers: int,
    hidden: int,
    tokens: Any,
    tp: Any,
    dtype_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    frozen: bool,
    lora_rank: int,
    lora_targets: tuple[str, ...],
    expert_share: float,
    maximum: Callable[[Any, Any], Any],
    ceil: Callable[[Any], Any],
    expert_tp: Any = None,
) -> LayerGemms:
    t = gemm_time_fn(dtype_bytes, peak_flops, bandwidth_bytes_per_s, model, maximum, ceil)
    forward: Any = 0.0
    backward: Any = 0.0
    kernels = 0.0
    for s in shapes:
        per_layer = s.count / num_layers
        rows = tokens * expert_share if s.kind in ("experts",) else tokens
        n_in, n_out = shard_dims(s, hidden, tp, expert_tp)
        forward = forward + per_layer * t(rows, n_out, n_in)
        backward = backward + per_layer * t(rows, n_in, n_out)
        kernels += per_layer * 2
        if not frozen:
            backward = backward + per_layer * t(n_in, n_out, rows)
            kernels += per_layer
        if lora_rank and s.targeted_by(lora_targets):
            r = lora_rank
            forward = forward + per_layer * (t(rows, r, n_in) + t(rows, n_out, r))
            backward = backward + per_layer * (
                t(rows, n_in, r) + t(n_in, r, rows) + t(rows, r, n_out) + t(r, n_out, rows)
            )
            kernels += per_layer * 6
    return LayerGemms(forward_s=forward, backward_s=backward, gemms=round(kernels))


@dataclass(frozen=True, kw_only=True)
class ServingOpBytes:
    """Bytes one token moves through each element-wise kernel of one layer of a serving engine,
    on one GPU of the tensor-parallel group (floats, or arrays over layouts): an RMSNorm reads and
    writes the hidden state, a residual add reads two and writes one, rotary rewrites q and k in
    place, the activation reads gate and up and writes their product (:func:`serving_op_bytes`
    in :mod:`suanli.estimate.elementwise`)."""

    norm: Any
    """One of the two norms of a layer."""
    rope: Any
    """0 for a model without rotary embeddings."""
    activation: Any
    add: Any
    """One of the two residual adds of a layer."""
    residual_fused: bool = False
    """Each residual add runs inside the next RMSNorm, one kernel for both (vLLM's and SGLang's
    ``fused_add_rms_norm``; torch.compile fuses the add into the norm's reduction): a layer
    launches four element-wise kernels instead of six."""


def serving_ops_seconds(
    ops: ServingOpBytes,
    rows: Any,
    num_layers: int,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    *,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Seconds of the element-wise kernels of ``num_layers`` layers over ``rows`` tokens: each
    kernel its bytes at its measured share of the peak bandwidth, never below one kernel floor
    (``model.small_op_s``); a model without rotary embeddings runs no rotary kernel. Where the
    engine fuses each residual add into the next norm (``ops.residual_fused``) the pair is one
    kernel: one floor, and the bandwidth time of the two parts (no fused kernel is measured, so
    the fusion is credited with the launch it saves, not with a better bandwidth)."""
    eff = model.elementwise_efficiency()
    floor = model.small_op_s

    def streaming(nbytes: Any, efficiency: float) -> Any:
        return rows * nbytes / (bandwidth_bytes_per_s * efficiency)

    def one(nbytes: Any, efficiency: float) -> Any:
        return maximum(floor, streaming(nbytes, efficiency))

    if ops.residual_fused:
        norms_and_adds = 2 * maximum(
            floor, streaming(ops.norm, eff.norm) + streaming(ops.add, eff.add)
        )
    else:
        norms_and_adds = 2 * one(ops.norm, eff.norm) + 2 * one(ops.add, eff.add)
    per_layer = (
        norms_and_adds
        + one(ops.rope, eff.rope) * (ops.rope > 0)
        + one(ops.activation, eff.activation)
    )
    return num_layers * per_layer


@dataclass(frozen=True, kw_only=True)
class ServeKernels:
    """Seconds of one forward pass of a serving engine, by kind of kernel."""

    gemm_s: Any
    """The linear layers and the LM head."""
    attention_s: Any
    """The attention core: scores and values (prefill), the KV-cache read (decode)."""
    small_ops_s: Any
    """Norms, rotary, activation, residual adds: bandwidth-bound with a floor per kernel."""

    @property
    def total_s(self) -> Any:
        """All of it, one kernel after another."""
        return self.gemm_s + self.attention_s + self.small_ops_s


def serve_forward(
    shapes: Any,
    num_layers: int,
    hidden: int,
    vocab: int,
    rows: Any,
    sequences: Any,
    tp: Any,
    weight_bytes: float,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    op_bytes: ServingOpBytes,
    *,
    attention_flops: Any = 0.0,
    attention_flops_per_s: float = 0.0,
    attention_floor_s: float | None = None,
    kv_bytes: Any = 0.0,
    kv_efficiency: Any = None,
    touched_share: Any = 1.0,
    expert_share: float = 1.0,
    num_experts: int = 1,
    activation_cast_bytes: float = 0.0,
    head_bytes: float = 2.0,
    maximum: Callable[[Any, Any], Any] = max,
    ceil: Callable[[Any], Any] = math.ceil,
) -> ServeKernels:
    """One forward pass over ``rows`` tokens of ``sequences`` sequences on one GPU of ``tp``.

    Prefill: ``rows`` = sequences x prompt, ``attention_flops`` the scores and values at
    ``attention_flops_per_s`` (the fused kernel's measured rate; default the GEMM model's), each
    layer's call costing at least ``attention_floor_s`` (default one launch); decode:
    ``rows`` = sequences, ``kv_bytes`` the KV cache read at ``kv_efficiency`` of the peak bandwidth
    (a measured paged decode-attention kernel; default the GEMMs' streaming efficiency and a
    launch per layer). Linear weights are read in
    ``weight_bytes`` per element (the format's), activations in 16 bits; MoE layers run only the
    experts the tokens touch (a ``touched_share`` of them, ``rows x expert_share`` tokens each on
    average), as one grouped kernel per projection and layer (vLLM's fused_moe, llama.cpp's
    mul_mat_id): one launch per group, not per expert. The LM head runs on the last token of each
    sequence, as serving engines do, its weights in ``head_bytes`` each (16 bits; a GGUF file's
    Q6_K: ``WeightFormat.lm_head_bytes``). The element-wise kernels move ``op_bytes`` per token each
    (:func:`serving_ops_seconds`).

    ``activation_cast_bytes`` (fp8 W8A8: ``FP8_CAST_BYTES["dynamic"]`` of
    :mod:`suanli.estimate.casts`) quantizes each linear layer's input on the fly before its
    GEMM, as the engines' fp8 Linear layers do: an amax pass and a cast over rows x K, two
    kernels, each at least one element-wise floor (:func:`activation_cast_seconds`); the LM
    head casts nothing."""
    b = 2.0
    timers: dict[float, Callable[[Any, Any, Any], Any]] = {}

    def t(m: Any, n: Any, k: Any, w: float) -> Any:
        # One timer per weight format (the linears' and the 16-bit LM head's).
        timer = timers.get(w)
        if timer is None:
            timer = timers[w] = gemm_time_fn(
                b, peak_flops, bandwidth_bytes_per_s, model, maximum, ceil, weight_bytes=w
            )
        return timer(m, n, k)

    gemm: Any = 0.0
    for s in shapes:
        n_in, n_out = shard_dims(s, hidden, tp)
        if s.kind == "experts":
            # Only the touched experts run (and are read), each on its share of the tokens, in
            # one grouped kernel per layer: its launch is paid once, not once per expert.
            count = s.count * touched_share
            m = rows * expert_share / maximum(touched_share, 1e-9)
            groups = s.count / num_experts
            gemm = gemm + count * (t(m, n_out, n_in, weight_bytes) - model.launch_s)
            gemm = gemm + groups * model.launch_s
            if activation_cast_bytes:
                # One cast of the routed tokens' inputs per grouped kernel.
                routed = rows * expert_share * num_experts
                gemm = gemm + groups * activation_cast_seconds(
                    routed * n_in, activation_cast_bytes, bandwidth_bytes_per_s, model, maximum
                )
            continue
        gemm = gemm + s.count * t(rows, n_out, n_in, weight_bytes)
        if activation_cast_bytes:
            gemm = gemm + s.count * activation_cast_seconds(
                rows * n_in, activation_cast_bytes, bandwidth_bytes_per_s, model, maximum
            )
    gemm = gemm + t(sequences, vocab / tp, hidden, head_bytes)
    memory_bw = bandwidth_bytes_per_s * model.memory_efficiency
    attention_rate = attention_flops_per_s or peak_flops * model.compute_efficiency
    floor = model.launch_s if attention_floor_s is None else attention_floor_s
    if kv_efficiency is None:
        kv_s = kv_bytes / memory_bw + num_layers * floor
    else:
        # A measured decode-attention kernel: its bandwidth utilization includes its launch.
        kv_s = kv_bytes / (bandwidth_bytes_per_s * kv_efficiency)
    attention = attention_flops / tp / attention_rate + kv_s
    small = serving_ops_seconds(
        op_bytes, rows, num_layers, bandwidth_bytes_per_s, model, maximum=maximum
    )
    return ServeKernels(gemm_s=gemm, attention_s=attention, small_ops_s=small)


def activation_cast_seconds(
    elements: Any,
    cast_bytes: float,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Quantizing one GEMM input of ``elements`` to fp8 on the fly: ``cast_bytes`` per element
    (``FP8_CAST_BYTES`` of :mod:`suanli.estimate.casts`) at the GEMMs' streaming efficiency,
    never below two element-wise floors (the amax pass and the cast). The same cost
    benchmarks/accuracy_kernels.py adds to the model when it scores aiconfigurator's fp8 Linear
    layers, which time the quantization with the GEMM (median error at 1-16 rows: +0.2% on the
    H100, -3.0% on the H200)."""
    streaming = cast_bytes * elements / (bandwidth_bytes_per_s * model.memory_efficiency)
    return maximum(streaming, 2 * model.small_op_s)
