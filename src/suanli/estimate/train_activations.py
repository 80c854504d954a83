"""Saved activations of a training step under the memory techniques frameworks use.

The per-layer terms come from :mod:`suanli.estimate.activations` (checked against transformers
on the CPU). This module decides how many of them live on the GPU at the start of the backward
pass: recomputation policies (attention core, per-op, whole layer, every K-th layer), pipeline
micro-batches in flight, activation offloading to the CPU, and how the loss meets the
vocabulary. The functions take floats or numpy arrays (``ceil``/``minimum`` passed in), so the
vectorized planner (:mod:`suanli.estimate.vector`) uses the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from suanli.estimate.activations import ActivationSettings
from suanli.estimate.checkpointing import op_saved_bytes_per_token
from suanli.estimate.workload import LOSS_CHUNKS, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

#: Terms the attention-core ("selective") recomputation drops (Korthikanti et al. 2022).
#: Named by their "attention: " prefix: the MoE router's fp32 softmax is not the attention core's.
DROP_SELECTIVE = ("attention: softmax", "attention: tanh soft-cap", "dropped probabilities")
#: What each of Megatron-Core's ``--recompute-modules`` stops a layer keeping: the attention core
#: (above); the routed experts' activation function, whose output (the fc2 input) is dropped and
#: recomputed from the fc1 output (``moe_act``: experts.py ``activation_recompute``); the norms
#: not fused into a linear, in a MoE layer the pre-MLP norm whose output the router keeps
#: (``layernorm``: transformer_layer.py ``recompute_pre_mlp_layernorm``; the attention's input
#: norm is fused into Transformer Engine's LayerNormLinear and not recomputed).
DROP_MODULES = {
    "core_attn": DROP_SELECTIVE,
    "moe_act": ("experts: fc2 input",),
    "layernorm": ("router: input",),
}
#: The loss term a fused linear-cross-entropy never materializes.
DROP_FUSED_LOSS = ("loss: log-softmax",)
#: Layers whose activations an offloading hook keeps on the GPU at once: the one being
#: computed and the one being copied (torchtune's OffloadActivations with streams).
OFFLOAD_LAYERS_ON_GPU = 2
SRC_OFFLOAD = N_(
    "torchtune OffloadActivations (torchtune/training/_activation_offloading.py): saved tensors "
    "go to pinned CPU memory on a side stream and come back just before their backward"
)
SRC_CHUNKED = N_(
    "torchtune CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py): the "
    "output projection in {chunks} chunks, each upcast to fp32 only inside the loss"
).format(chunks=LOSS_CHUNKS)
SRC_KERNEL_CE = (
    "Dao-AILab/flash-attention flash_attn/ops/triton/cross_entropy.py at 058ad35a "
    "(CrossEntropyLoss: save_for_backward(logits, lse, labels); dlogits = "
    "torch.empty_like(logits)); mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py at "
    "5e85bd62 (loss_fn defaults to fused_crossentropy)"
)
SRC_MEGATRON_CE = (
    "NVIDIA/Megatron-LM megatron/core/tensor_parallel/cross_entropy.py (calculate_logits_max: "
    "logits.float(); save_for_backward(exp_logits, ...); the gradient computed in place in the "
    "saved softmax) and fusions/fused_cross_entropy.py (grad_input.to(torch.bfloat16)) at "
    "d98e8a64"
)
SRC_FUSED = N_(
    "fused linear cross-entropy (Apple's Cut Cross-Entropy, Wijmans et al. 2024, "
    "arXiv:2411.09009, used by Unsloth; Liger Kernel's LigerFusedLinearCrossEntropyLoss): the "
    "logits are never stored whole; the hidden-state gradient is kept"
)


def activation_settings(spec: ModelSpec, work: TrainWork) -> ActivationSettings:
    """The settings the activation terms of a training step depend on, from the model and the
    workload (dropout: the workload's, else the model's)."""
    dropout = work.dropout if work.dropout is not None else spec.dropout
    return ActivationSettings(
        dtype_bytes=work.tensor_bytes,  # fp8 training saves bf16 activations
        seq=work.seq,
        attention=work.attention,
        dropout=dropout,
        mask_bytes=1 if work.device == "cuda" else work.tensor_bytes,
        train_weights=not work.is_lora,
        frozen_linear_saves_input=work.task == "qlora",
        lora_targets=work.lora_targets if work.is_lora else (),
        lora_rank=work.lora_rank if work.is_lora else 0,
        logits_fp32=work.logits_fp32,
        batch=work.batch,
        saved_tensors=work.saved_tensors,
        fp8_inputs=work.dtype == "fp8" and work.saved_tensors == "megatron",
        fused=work.fused_kernels,
    )


def selective_drop(work: TrainWork) -> tuple[str, ...]:
    """Names of the per-layer terms that ``--recompute selective`` does not keep: those of the
    work's ``recompute_modules`` (:data:`DROP_MODULES`)."""
    if work.recompute != "selective":
        return ()
    return tuple(name for module in work.recompute_modules for name in DROP_MODULES[module])


def first_dense_layer(spec: ModelSpec) -> int:
    """Index of the first layer without experts (0 when every layer is MoE)."""
    moe = set(spec.moe_layers)
    return next((i for i in range(spec.num_layers) if i not in moe), 0)


def checkpoint_bytes_per_token(spec: ModelSpec, work: TrainWork, tp: Any, sp: Any) -> Any:
    """Bytes per token one checkpointed layer keeps: its input (``full``; split by ``sp``) or
    its input and the saved op outputs (``op``, :mod:`suanli.estimate.checkpointing`)."""
    b = work.tensor_bytes
    h_bytes = spec.hidden_size * b / sp
    if work.recompute == "op":
        return op_saved_bytes_per_token(spec, b, tp) - spec.hidden_size * b + h_bytes
    return h_bytes


def layers_saved(
    work: TrainWork,
    layers: Any,
    full_layer: Any,
    kept_layer: Any,
    checkpoint_layer: Any,
    ceil: Callable[[Any], Any] = math.ceil,
) -> Any:
    """Bytes the stage's layers keep through the forward pass: each layer's kept terms, or
    under ``op``/``full`` its checkpoint, with every ``recompute_every``-th layer checkpointed
    and the others keeping everything (``full_layer``)."""
    if not work.checkpointed:
        return layers * kept_layer
    checkpointed = ceil(layers / work.recompute_every)
    return checkpointed * checkpoint_layer + (layers - checkpointed) * full_layer


def offload_split(
    work: TrainWork, saved: Any, layers: Any, minimum: Callable[[Any, Any], Any] = min
) -> tuple[Any, Any]:
    """(bytes on the GPU, bytes in CPU memory) of ``saved`` activations of ``layers`` layers:
    with offloading the GPU keeps :data:`OFFLOAD_LAYERS_ON_GPU` layers' worth."""
    if not work.activation_offload:
        return saved, 0.0 * saved
    on_gpu = minimum(saved, saved / layers * OFFLOAD_LAYERS_ON_GPU)
    return on_gpu, saved - on_gpu


def logits_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """Bytes per token (before splitting the vocabulary over TP) of the logits and their fp32
    gradient at the start of the backward pass, by how the loss is computed."""
    if not spec.is_decoder:
        return 0.0
    vocab, b = spec.vocab_size, work.tensor_bytes
    if _compiled_chunked(work):
        # Compiled (torchtune compiles the loss with the model): the dtype logits are the saved
        # input, the softmax is recomputed in backward, one chunk's gradient at a time.
        return vocab * (b + b / LOSS_CHUNKS)
    if work.loss == "chunked":
        # The dtype logits of every chunk stay; the fp32 upcast and gradient of one chunk.
        return vocab * (b + 4 / LOSS_CHUNKS)
    if work.loss == "full" and work.saved_tensors == "megatron":
        # Megatron's vocab-parallel cross-entropy upcasts the logits and keeps the fp32 softmax
        # (the model-level 4·V term), computes the gradient in place in it and hands back a
        # dtype copy; the dtype logits are not saved (SRC_MEGATRON_CE).
        return vocab * b
    if work.loss == "kernel":
        # One kernel over the whole logits (flash-attn's CrossEntropyLoss): it keeps them in
        # the dtype and writes their gradient in the dtype; no fp32 copy (SRC_KERNEL_CE).
        return vocab * 2 * b
    if work.loss == "fused":
        # Logits are computed block by block in on-chip memory and never stored (Cut Cross
        # Entropy, Liger's chunked fused linear-cross-entropy keeps a small chunk).
        return 0.0
    return vocab * (b + 4)


def logits_text(work: TrainWork) -> tuple[str, str, str]:
    """Label, formula and source of the logits line, by how the loss is computed."""
    if work.loss == "full" and work.saved_tensors == "megatron":
        return (
            N_("the logits' gradient in the dtype at backward start"),
            N_("tokens x V x b (beside the fp32 softmax, counted with the activations)"),
            SRC_MEGATRON_CE,
        )
    if work.loss == "kernel":
        return (
            N_("logits and their gradient, both in the dtype, at backward start"),
            "tokens x V x (b + b)",
            SRC_KERNEL_CE,
        )
    label = N_("logits (dtype) and their fp32 gradient at backward start")
    if work.loss == "chunked":
        compiled = N_("tokens x V x (b + b / 8): compiled")
        return label, compiled if work.fused_kernels else "tokens x V x (b + 4 / 8)", SRC_CHUNKED
    if work.loss == "fused":
        return label, N_("none: computed block by block, never stored"), SRC_FUSED
    return label, "tokens x V x (b + 4)", "transformers ForCausalLMLoss"


def fused_loss_extra_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """What a fused loss keeps instead of the fp32 log-softmax: a fused linear-cross-entropy
    the hidden state's gradient; a compiled chunked loss one fp32 log-sum-exp per token."""
    if work.loss == "fused":
        return float(spec.hidden_size * work.tensor_bytes)
    if work.loss == "kernel":
        return 8.0  # the kernel's fp32 log-sum-exp and per-token loss
    if _compiled_chunked(work):
        return 4.0
    return 0.0


def edge_drop(work: TrainWork) -> tuple[str, ...]:
    """Model-level terms (outside the layers) that the loss implementation does not keep."""
    dropped = work.loss in ("fused", "kernel") or _compiled_chunked(work)
    return DROP_FUSED_LOSS if dropped else ()


def _compiled_chunked(work: TrainWork) -> bool:
    return work.loss == "chunked" and work.fused_kernels


def backward_transient_bytes_per_token(spec: ModelSpec, work: TrainWork, tp: Any) -> Any:
    """Gradients a layer's MLP backward holds at once besides the saved tensors: eager, for a
    gated MLP the gradient of ``act(gate) * up`` and those of gate and up (3·b·I), for a plain
    one the gradients of the activation's output and input (2·b·I); a fused kernel (Liger,
    Unsloth, Inductor) writes the gate and up gradients over its saved inputs, leaving the one
    incoming gradient (b·I). Split over ``tp``. With recomputation this transient sits on top
    of the one layer being recomputed."""
    b = work.tensor_bytes
    if spec.mlp is not None:
        width, gated = spec.mlp.intermediate_size, spec.mlp.gated
    elif spec.moe is not None:
        width = spec.moe.expert.intermediate_size * spec.moe.experts_per_token
        gated = True
    else:
        return 0.0 * tp
    if work.fused_kernels:
        return b * width / tp
    return (3 if gated else 2) * b * width / tp
