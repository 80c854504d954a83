"""The vocabulary of saved-activation terms: one saved tensor per :class:`Term`, and the
settings that decide their sizes (shared by :mod:`suanli.estimate.activations`, transformers'
modules, and :mod:`suanli.estimate.megatron_activations`, Megatron's fused kernels)."""

from __future__ import annotations

from dataclasses import dataclass

FP32 = 4
INDEX = 8  # int64 indices (embedding lookups, loss targets, top-k)


@dataclass(frozen=True, kw_only=True)
class Term:
    """One saved tensor (or group of them)."""

    name: str
    bytes_per_token: float
    """Bytes for each token of the micro-batch (``batch * seq`` tokens)."""
    formula: str
    """How the size is computed, in the symbols of docs/memory.md."""
    shardable: str = "tp"
    """How it divides under model parallelism: ``tp`` (split over the TP group), ``sp`` (only
    with sequence parallelism) or ``none``."""


@dataclass(frozen=True, kw_only=True)
class ActivationSettings:
    """What decides the saved bytes besides the architecture."""

    dtype_bytes: int = 2
    seq: int = 2048
    attention: str = "sdpa"
    dropout: float = 0.0
    mask_bytes: int = 1
    """Bytes per dropout-mask element: 1 on CUDA (bool), the dtype size on the CPU."""
    train_weights: bool = True
    """Base linear weights are trainable (False under LoRA/QLoRA: frozen layers save less)."""
    frozen_linear_saves_input: bool = False
    """bitsandbytes 4-bit linears (QLoRA) save their input even when frozen."""
    lora_targets: tuple[str, ...] = ()
    """Linears with LoRA adapters; their inputs are saved for the adapter's gradient."""
    lora_rank: int = 0
    logits_fp32: bool = True
    batch: int = 1
    """Micro-batch: with one sequence some head views need no copy (GPT-2 eager)."""
    saved_tensors: str = "hf"
    """``hf``: transformers' modules; ``megatron``: Megatron's fused kernels."""
    fp8_inputs: bool = False
    """Transformer Engine's fp8 linears (fp8 training under Megatron's saved tensors) keep the
    input they need for the weight gradient in fp8, one byte an element."""
    fused: bool = False
    """Fused norm and activation kernels (``--kernels fused``: torch.compile, Liger): they keep
    fewer tensors than transformers' eager modules."""
