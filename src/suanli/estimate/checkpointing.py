"""Activation checkpointing policies beyond "none / attention core / whole layer".

``--recompute op`` is torchtitan's per-op selective activation checkpointing (SAC): every layer
runs under ``torch.utils.checkpoint`` with a policy that keeps the outputs of the expensive ops
(matmuls, SDPA/flash attention, reductions and collectives) and recomputes everything else in the
backward pass, except that every second matmul is recomputed too, so the saved bytes stay about
half of the matmul outputs (torchtitan ``_apply_ac_to_transformer_block``, ``_save_list`` and
``_custom_policy``; pytorch/torchtitan torchtitan/models/llama3/infra/parallelize.py, 2025).

What a layer keeps through the forward pass is then the checkpoint's input plus the outputs of
the ops the policy saves: the odd-numbered matmuls in forward order (q, v, gate, down for a Llama
layer), the attention kernel's output and its fp32 log-sum-exp. The backward pass re-runs the
even-numbered matmuls (k, o, up) and the element-wise ops of one layer at a time.

``--recompute-every K`` (with ``--recompute full``) checkpoints every K-th layer only, as
torchtitan's ``selective_ac_option = "K"`` (layer SAC) and Megatron's ``--recompute-method
uniform`` with ``--recompute-num-layers`` do: the other layers keep all their activations.
"""

from __future__ import annotations

from functools import lru_cache

from suanli.estimate.shapes import LinearShape, linear_shapes
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

FP32 = 4
#: torchtitan's policy for per-op SAC, as the docs and --explain quote it.
OP_POLICY = N_(
    "per-op selective checkpointing (torchtitan): keep the outputs of every other matmul, of "
    "attention and of reductions; recompute the rest in backward"
)


def _layer_matmuls(spec: ModelSpec) -> list[tuple[int, int, float]]:
    """One average layer's matmuls in forward order: (n_in, n_out, calls per token).

    Dense MLP layers and routed experts are averaged over the layers; a token runs its top-k
    experts (``calls`` = k) and the shared expert once.
    """
    layers = max(spec.num_layers, 1)
    out: list[tuple[int, int, float]] = []
    for shape in linear_shapes(spec):
        out.append((shape.n_in, shape.n_out, _calls_per_layer(spec, shape, layers)))
    return out


def _calls_per_layer(spec: ModelSpec, shape: LinearShape, layers: int) -> float:
    moe = spec.moe
    if shape.kind == "experts" and moe is not None:
        per_layer = shape.count / moe.num_experts / layers
        return per_layer * moe.experts_per_token
    return shape.count / layers


def op_saved_bytes_per_token(spec: ModelSpec, dtype_bytes: int, tp: int = 1) -> float:
    """Bytes one layer keeps per token under per-op SAC: its input, the outputs of the odd
    matmuls (split over ``tp`` like the matmuls), the attention output and log-sum-exp."""
    h = spec.hidden_size
    att = spec.attention
    saved = float(dtype_bytes * h)  # the checkpointed layer input (the residual stream)
    for i, (_n_in, n_out, calls) in enumerate(_layer_matmuls(spec)):
        if i % 2 == 0:  # the 1st, 3rd, ... matmul: saved
            saved += dtype_bytes * n_out * calls / tp
    saved += dtype_bytes * att.num_heads * att.v_head_dim / tp  # attention output
    saved += FP32 * att.num_heads / tp  # log-sum-exp
    return saved


@lru_cache(maxsize=256)
def op_recompute_share(spec: ModelSpec) -> float:
    """Share of one layer's forward matmul FLOPs that per-op SAC re-runs in backward (the
    even-numbered matmuls)."""
    total = again = 0.0
    for i, (n_in, n_out, calls) in enumerate(_layer_matmuls(spec)):
        flops = n_in * n_out * calls
        total += flops
        if i % 2 == 1:
            again += flops
    return again / total if total else 0.0


def checkpointed_share(layers: int, every: int) -> float:
    """Share of ``layers`` that are checkpointed when every ``every``-th one is."""
    if layers <= 0:
        return 0.0
    return (layers // every) / layers if every > 1 else 1.0
