"""The non-matmul side of a training step: element-wise ops (eager or fused), the loss and the
optimizer step, as memory traffic with a floor per kernel (docs/speed.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.estimate.workload import TrainWork
from suanli.models.spec import ModelSpec


def eager_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """Forward memory traffic of one layer's non-matmul ops, one kernel per PyTorch op, per token.

    Counted op by op from the transformers modules (read + write of every operand):
    RMSNorm ``x.float(); pow; mean; mul rsqrt; to(dtype); mul weight`` = ``28h + 4bh``; RoPE on a
    width ``w`` (``mul cos; neg; cat; mul sin; add``) = ``10bw`` for q and k; gated activation
    ``act(gate) * up`` = ``5bI`` (plain: ``2bI``); two residual adds ``6bh``; eager attention adds
    the softmax passes over the scores (``14·n_q·s``).
    """
    h, b = spec.hidden_size, work.dtype_bytes
    att = spec.attention
    norm = 28 * h + 4 * b * h
    norms = spec.norm.per_layer * norm
    rope = (
        0.0
        if spec.architecture in ("gpt2", "bert")
        else 10 * b * (att.num_heads + att.num_kv_heads) * att.head_dim
    )
    width = spec.mlp.intermediate_size if spec.mlp else 0
    gated = spec.mlp.gated if spec.mlp else True
    if spec.moe is not None and spec.moe_layers:
        width = spec.moe.expert.intermediate_size * spec.moe.experts_per_token
    act = (5 if gated else 2) * b * width
    scores = 14 * att.num_heads * work.seq if work.attention == "eager" else 0
    return norms + rope + act + 6 * b * h + scores


def fused_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """Forward memory traffic of one layer's non-matmul ops in fused kernels (Megatron,
    torch.compile, Liger), per token: each kernel reads its inputs and writes its output once.

    RMSNorm/LayerNorm ``2bh``; RoPE on q and k ``2b·w``; gated activation ``3bI`` (read gate and
    up, write the product; plain ``2bI``); two residual adds ``3bh`` each; eager attention one
    fused softmax over the scores (``2b·n_q·s``). Every term is at most its eager counterpart
    (:func:`eager_bytes_per_token`), so fused kernels are never slower than eager ones.
    """
    h, b = spec.hidden_size, work.dtype_bytes
    att = spec.attention
    norms = spec.norm.per_layer * 2 * b * h
    rope = (
        0.0
        if spec.architecture in ("gpt2", "bert")
        else 2 * b * (att.num_heads + att.num_kv_heads) * att.head_dim
    )
    width = spec.mlp.intermediate_size if spec.mlp else 0
    gated = spec.mlp.gated if spec.mlp else True
    if spec.moe is not None and spec.moe_layers:
        width = spec.moe.expert.intermediate_size * spec.moe.experts_per_token
    act = (3 if gated else 2) * b * width
    scores = 2 * b * att.num_heads * work.seq if work.attention == "eager" else 0
    return norms + rope + act + 6 * b * h + scores


def elementwise_kernels_per_layer(spec: ModelSpec, work: TrainWork) -> int:
    """Non-matmul kernels of one layer's forward: eager PyTorch launches one per op (an RMSNorm
    is six, RoPE five for q and five for k, the gated activation two, two residual adds, eager
    attention four softmax passes); fused code one per group (norm, RoPE, activation, adds)."""
    gated = spec.mlp.gated if spec.mlp else True
    rope = spec.architecture not in ("gpt2", "bert")
    softmax = work.attention == "eager"
    if work.kernels == "eager":
        return (
            spec.norm.per_layer * 6
            + (10 if rope else 0)
            + (2 if gated else 1)
            + 2
            + (4 if softmax else 0)
        )
    return spec.norm.per_layer + (1 if rope else 0) + 1 + 2 + (1 if softmax else 0)


def elementwise_seconds(
    spec: ModelSpec,
    work: TrainWork,
    bandwidth_bytes_per_s: float,
    small_op_s: float,
    layers: Any,
    tokens: Any,
    tp: Any,
    *,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Seconds of the non-matmul ops of one micro-batch on one GPU (all passes): their traffic
    (eager op by op, or fused) at the achievable bandwidth, never below one kernel floor
    (``small_op_s``) each.

    Forward once, backward about twice (the gradient of each op reads its saved inputs and the
    incoming gradient, writes its own), once more with full recomputation."""
    # Checkpointed layers (full or per-op) re-run their element-wise ops once in backward.
    passes = 3 + (1 / work.recompute_every if work.checkpointed else 0)
    per_token = (
        eager_bytes_per_token(spec, work)
        if work.kernels == "eager"
        else fused_bytes_per_token(spec, work)
    )
    traffic = per_token * passes * layers * tokens / tp
    kernels = elementwise_kernels_per_layer(spec, work) * passes * layers
    return maximum(traffic / bandwidth_bytes_per_s, kernels * small_op_s)


def loss_bytes(spec: ModelSpec, work: TrainWork, tokens: int) -> float:
    """Cross-entropy over the vocabulary: the fp32 upcast, log-softmax and their backward read
    and write ``(4b + 28)`` bytes per logit."""
    if not spec.is_decoder:
        return 0.0
    return tokens * spec.vocab_size / work.parallel.tp * (4 * work.dtype_bytes + 28)


def optimizer_step_bytes(work: TrainWork, trainable: float) -> float:
    """Memory traffic of one optimizer step over ``trainable`` parameters on this GPU.

    AdamW reads the gradient, parameter and both moments and writes them back: in mixed
    precision ``b`` (grad) + 3 x 4 read and 3 x 4 + ``b`` written (fp32 master, moments, then the
    dtype copy); in pure precision ``7b``. One state (SGD momentum, Lion) saves a third.
    """
    b = work.dtype_bytes
    mixed = work.precision == "mixed" and not work.fp32_storage
    per_param = float(2 * b + 24) if mixed else float(7 * b)
    if work.optimizer in ("sgd",):
        per_param = float(3 * b)
    elif work.optimizer in ("sgd_momentum", "lion"):
        per_param *= 2 / 3
    elif work.optimizer in ("adamw8bit", "paged_adamw8bit", "adafactor"):
        per_param = float(3 * b + 4)
    return trainable * per_param
