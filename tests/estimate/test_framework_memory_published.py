"""``--framework`` against the frameworks' own published memory figures.

Peaks come from tests/fixtures/framework-memory.csv (each row with its source). Frameworks
report different things, and each row is compared with the same thing: ``active`` (PyTorch's
peak active or allocated bytes: suanli's tensors, without the CUDA context and the allocator's
reserve) or ``reserved`` (the caching allocator's peak: everything but the CUDA context).
Tolerances are the issue's: torchtune within 10%, the other frameworks within 15%.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from suanli.answers.request import WorkRequest, build_work
from suanli.estimate.breakdown import MemoryBreakdown
from suanli.estimate.fitting import fit_inference, fit_training
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import TrainWork
from suanli.models.config import spec_from_config
from suanli.models.resolve import load_model
from suanli.models.spec import ModelSpec

GiB = 2**30
ROWS = {
    r["id"]: r
    for r in csv.DictReader(
        (Path(__file__).parent.parent / "fixtures" / "framework-memory.csv")
        .read_text()
        .splitlines()
    )
}
TOLERANCE = {"torchtune": 0.10}

TUNE_3B = {"task": "full", "batch": 2, "seq": 4096, "framework": "torchtune", "kernels": "fused"}
WORK = {
    "tt-3b-ac": WorkRequest(**TUNE_3B),
    "tt-3b-optbwd": WorkRequest(**TUNE_3B, optimizer_in_backward=True),
    "tt-3b-offload": WorkRequest(**TUNE_3B, optimizer_in_backward=True, activation_offload=True),
    "tt-3b-lora": WorkRequest(**{**TUNE_3B, "task": "lora"}, activation_offload=True),
    "tt-3b-8bit": WorkRequest(
        **TUNE_3B, optimizer_in_backward=True, activation_offload=True, optimizer="adamw8bit"
    ),
    "tt-70b-full-offload": WorkRequest(
        task="full",
        batch=2,
        seq=2048,
        gpus=8,
        zero=3,
        framework="torchtune",
        kernels="fused",
        offload_params=True,
        offload_optimizer=True,
        optimizer_in_backward=True,
    ),
    "titan-8b-fsdp8": WorkRequest(
        task="pretrain", batch=2, seq=8192, gpus=8, framework="torchtitan"
    ),
    "titan-8b-fsdp128": WorkRequest(
        task="pretrain", batch=2, seq=8192, gpus=128, framework="torchtitan"
    ),
    "titan-8b-cp1-32k": WorkRequest(
        task="pretrain", batch=1, seq=32768, gpus=8, framework="torchtitan", recompute="full"
    ),
    "ds-6.86b-zero3": WorkRequest(
        task="pretrain", batch=1, seq=512, gpus=4, zero=3, framework="deepspeed"
    ),
}


def _spec(name: str) -> ModelSpec:
    if name == "gpt-6.86b":
        # DeepSpeedExamples' custom model: hidden 4096, 32 layers, 32 heads, 4x GELU MLP, an
        # untied 50,000-token vocabulary (6.86B parameters, as its README says).
        cfg = {
            "model_type": "gpt2",
            "n_embd": 4096,
            "n_layer": 32,
            "n_head": 32,
            "n_positions": 2048,
            "vocab_size": 50000,
            "tie_word_embeddings": False,
        }
        return spec_from_config(cfg, name)
    return load_model(name).spec


def _measure(mem: MemoryBreakdown, metric: str) -> float:
    context = sum(ln.bytes for ln in mem.lines if ln.label.startswith("CUDA context"))
    reserve = sum(ln.bytes for ln in mem.lines if ln.label.startswith("allocator reserve"))
    if metric == "active":
        return mem.total_bytes - context - reserve
    return mem.total_bytes - context


@pytest.mark.parametrize("row_id", list(WORK))
def test_published_peak(row_id: str) -> None:
    row = ROWS[row_id]
    work = build_work(WORK[row_id])
    assert isinstance(work, TrainWork)
    estimate = _measure(training_memory(_spec(row["model"]), work), row["metric"])
    tolerance = TOLERANCE.get(row["framework"], 0.15)
    assert estimate == pytest.approx(float(row["measured_gib"]) * GiB, rel=tolerance)


# Unsloth README at 0acd1c7e (2026-03-17), context-length table: "Llama 3.1 (8B) Instruct ... 4bit
# QLoRA on all linear layers (Q, K, V, O, gate, up and down) with rank = 32 with a batch size of
# 1"; the longest sequence that fits a card of each size (GiB, as cards are sold).
UNSLOTH_MAX_SEQ = [(8, 2_972), (12, 21_848), (16, 40_724), (24, 78_475)]


@pytest.mark.parametrize(("card_gib", "published"), UNSLOTH_MAX_SEQ)
def test_unsloth_longest_context(card_gib: int, published: int) -> None:
    work = build_work(
        WorkRequest(
            task="qlora",
            batch=1,
            framework="unsloth",
            lora_rank=32,
            lora_targets="q,k,v,o,gate,up,down",
        )
    )
    assert isinstance(work, TrainWork)
    fit = fit_training(load_model("llama-3.1-8b").spec, work, "card", card_gib * GiB)
    assert fit.max_seq == pytest.approx(published, rel=0.15)


def test_vllm_kv_cache_capacity() -> None:
    """vLLM PR #10511 (comment of 2024-12-13): Meta-Llama-3-8B on a card reporting 79.22 GiB at
    gpu_memory_utilization 0.90 leaves 'available_kv_cache_memory 53.29GiB': 436,551 tokens of
    128 KiB (bf16, 8 KV heads x 128 x 32 layers x 2)."""
    published_tokens = 53.29 * GiB / (2 * 8 * 128 * 32 * 2)
    context = 4096
    work = build_work(
        WorkRequest(task="infer", framework="vllm", gpu_memory_utilization=0.9, context=context)
    )
    fit = fit_inference(load_model("llama-3-8b").spec, work, "h100", int(79.22 * GiB))
    assert fit.max_batch * context == pytest.approx(published_tokens, rel=0.15)
