"""fp8 training holds its tensors in bf16: Transformer Engine and torchao cast only the linear
layers' operands to fp8, so weights, gradients, optimizer states and saved activations take a
bf16 run's bytes. Transformer Engine (the ``delayed`` recipe of Megatron and NeMo) also keeps
each linear weight's fp8 copy and its transpose for the whole step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.estimate.memory import training_memory
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

SPEC = load_model("llama-3.1-8b").spec

# Llama 3.1 8B's linear weights inside its 32 layers, from its config (hidden 4096, 32 query and
# 8 KV heads of 128, MLP 14,336): q, o 4096x4096; k, v 4096x1024; gate, up, down 4096x14336.
LINEAR_PER_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
LINEAR = 32 * LINEAR_PER_LAYER


def _weights(work: TrainWork) -> float:
    return sum(ln.bytes for ln in training_memory(SPEC, work).lines if ln.key == "weights")


@pytest.mark.parametrize("precision", ["pure", "mixed"])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_torchao_fp8_needs_what_bf16_needs(precision: str, recompute: str) -> None:
    """torchao's dynamic recipe keeps no fp8 copy between micro-batches: every byte is bf16's."""
    bf16 = TrainWork(task="full", seq=2048, batch=2, precision=precision, recompute=recompute)
    fp8 = replace(bf16, dtype="fp8", fp8_scaling="dynamic")
    assert training_memory(SPEC, fp8).breakdown == training_memory(SPEC, bf16).breakdown


def test_transformer_engine_adds_two_bytes_per_linear_weight() -> None:
    bf16 = TrainWork(task="pretrain", seq=4096, batch=1, precision="mixed")
    fp8 = replace(bf16, dtype="fp8", fp8_scaling="delayed")
    assert _weights(fp8) - _weights(bf16) == pytest.approx(2 * LINEAR, rel=1e-12)
    # Activations are bf16's (not the half an fp8 dtype would suggest).
    act_bf16 = training_memory(SPEC, bf16).breakdown["activations"]
    assert training_memory(SPEC, fp8).breakdown["activations"] == pytest.approx(act_bf16)


def test_the_cache_splits_with_the_layers_weights() -> None:
    """Tensor parallelism splits the cached copies with the weights; pipeline stages hold
    their own layers' copies."""
    work = TrainWork(task="pretrain", seq=4096, dtype="fp8", parallel=Parallelism(tp=4, pp=2))
    base = replace(work, dtype="bf16")
    assert _weights(work) - _weights(base) == pytest.approx(2 * LINEAR / 4 / 2, rel=1e-12)


def test_fp8_never_fits_where_bf16_does_not() -> None:
    """The weights, gradients and AdamW states of a pure fp8 run are bf16's: 8 bytes a parameter
    plus the cache, never the 4 an fp8 dtype would give."""
    for precision in ("pure", "mixed"):
        bf16 = TrainWork(task="full", seq=1024, precision=precision, recompute="full")
        fp8 = replace(bf16, dtype="fp8")
        assert training_memory(SPEC, fp8).total_bytes > training_memory(SPEC, bf16).total_bytes
    pure = training_memory(SPEC, TrainWork(task="full", dtype="fp8", precision="pure"))
    states = sum(ln.bytes for ln in pure.lines if ln.key in ("gradients", "optimizer"))
    params = 8_030_261_248  # Llama 3.1 8B
    assert states == pytest.approx(params * (2 + 2 * 2), rel=1e-12)


def test_explain_says_where_the_bytes_are() -> None:
    memory = training_memory(SPEC, TrainWork(task="pretrain", dtype="fp8"))
    labels = " ".join(ln.label for ln in memory.lines)
    assert "weights (bf16)" in labels and "fp8 copies of the linear weights" in labels
    assert any("held in bf16" in a for a in memory.assumptions)
