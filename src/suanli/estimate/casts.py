"""Casting tensors between formats around the GEMMs of a training step: fp8 inputs, weights and
gradients (Transformer Engine, torchao float8) and QLoRA's NF4 weights dequantized to bf16
(docs/speed.md). The serving engines' per-GEMM activation cast is
:func:`suanli.estimate.kernels.activation_cast_seconds`, which takes :data:`FP8_CAST_BYTES`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.estimate.kernels import GemmModel, shard_dims

#: Bytes moved per element cast from bf16 to fp8, by scaling recipe: read 2 and write 1 with a
#: delayed scale; dynamic scaling first reads the tensor for its amax (2 more). With 5 bytes the
#: model gives torchao's measured float8 linear speedup on H100 at M, K, N = 4096, 8192, 16384
#: (fwd + bwd, compiled: 1.39x; torchao/float8/README.md, "Performance").
FP8_CAST_BYTES = {"delayed": 3.0, "dynamic": 5.0}


#: Bytes moved per weight dequantized from NF4 to bf16: read 4 bits and the double-quantized
#: scales (4.127 bits in all, catalog/data/quant.toml nf4-dq), write 2 bytes.
NF4_DEQUANT_BYTES = 4.127 / 8 + 2.0


def fp8_cast_seconds(
    shapes: Any,
    num_layers: int,
    hidden: int,
    tokens: Any,
    tp: Any,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    *,
    expert_share: float = 1.0,
    scaling: str = "delayed",
    weight_casts: Any = 1.0,
    maximum: Callable[[Any, Any], Any] = max,
    expert_tp: Any = None,
) -> Any:
    """Casting every linear GEMM's operands to fp8, per average layer and micro-batch.

    With dynamic scaling (Transformer Engine, torchao float8) each GEMM casts its input and its
    weight for the forward pass, the output gradient for the backward, and the transposed copies
    of weight and input for the two backward GEMMs: ``3 bytes x (2·M·K + M·N + 2·K·N)`` (read bf16,
    write fp8) with delayed scaling, 5 bytes with dynamic ``scaling`` (an amax pass first; see
    :data:`FP8_CAST_BYTES`), five cast kernels, each at least one element-wise floor. This is why
    fp8 training is 1.3-1.5x bf16 end to end, not 2x (Micikevicius et al. 2022, "FP8 formats for
    deep learning", and the torchao float8 README's per-shape speedup tables).

    ``weight_casts``: the share of micro-batches that cast the weights (their two casts of the
    five): 1, or ``1 / grad_accum`` where the recipe keeps them for the step
    (:attr:`suanli.estimate.workload.TrainWork.fp8_weight_cache`)."""
    memory_bw = bandwidth_bytes_per_s * model.memory_efficiency
    total: Any = 0.0
    for s in shapes:
        per_layer = s.count / num_layers
        rows = tokens * expert_share if s.kind == "experts" else tokens
        k, n = shard_dims(s, hidden, tp, expert_tp)
        elements = 2 * rows * k + rows * n + 2 * k * n * weight_casts
        total = total + per_layer * maximum(
            FP8_CAST_BYTES[scaling] * elements / memory_bw,
            (3 + 2 * weight_casts) * model.small_op_s,
        )
    return total


def nf4_dequant_seconds(
    shapes: Any,
    num_layers: int,
    hidden: int,
    tp: Any,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    *,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Dequantizing every frozen NF4 weight of one average layer to bf16, once.

    QLoRA (Dettmers et al. 2023, §3: "we dequantize the storage data type to the computation
    data type to perform the forward and backward pass") runs a dequantize kernel before each
    GEMM that uses a frozen weight: forward, the backward's input gradient, and the recomputed
    forward. Each reads the packed weight and writes it in bf16 (``NF4_DEQUANT_BYTES`` a weight)."""
    memory_bw = bandwidth_bytes_per_s * model.memory_efficiency
    total: Any = 0.0
    for s in shapes:
        k, n = shard_dims(s, hidden, tp)
        total = total + s.count / num_layers * maximum(
            NF4_DEQUANT_BYTES * k * n / memory_bw, model.small_op_s
        )
    return total
