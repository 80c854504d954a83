"""Against published peaks: torchtune's README table, Answer.AI's fsdp_qlora benchmarks and the
ZeRO paper's model-state figures.

Rows come from shared/reference/memory-examples.csv (copied to tests/fixtures) and
tests/fixtures/memory-fsdp-qlora.csv (its .md gives the source). The settings of each torchtune
row are from the recipe configs at torchtune commit 0217d44c2 (May 2024, where the table was
added), as recorded in docs/research/torchtune-memory-settings.md: pure bf16, full activation
checkpointing, SDPA, fp32 logits with a plain cross-entropy, batch 4.

Both tables report PyTorch's reserved memory, which does not see the CUDA context or NCCL's
buffers (allocated outside PyTorch's caching allocator): the estimate compared is the breakdown
without those two lines (:func:`_torch_reserved`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from suanli.estimate.memory import training_memory
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.config import spec_from_config
from suanli.models.presets import find_preset
from suanli.models.spec import ModelSpec

FIXTURES = Path(__file__).parent.parent / "fixtures"
ROWS = list(csv.DictReader((FIXTURES / "memory-examples.csv").read_text().splitlines()))
GB = 1e9  # the torchtune table and the ZeRO paper use 10^9 bytes


def _measured(workload: str, hardware: str) -> float:
    for row in ROWS:
        if row["workload"].startswith(workload) and row["hardware"].startswith(hardware):
            return float(row["measured_GB"]) * GB
    raise LookupError(workload)


def _torch_reserved(work: TrainWork, spec: ModelSpec) -> float:
    """The estimate of what PyTorch's allocator reserves: the total less the CUDA context and
    NCCL's communicator buffers."""
    memory = training_memory(spec, work)
    outside = ("CUDA context and kernels", "NCCL communicator buffers")
    return memory.total_bytes - sum(ln.bytes for ln in memory.lines if ln.label in outside)


def _spec(name: str) -> ModelSpec:
    preset = find_preset(name)
    assert preset is not None
    return spec_from_config(preset.config(), name)


ALL_LINEARS = ("q", "k", "v", "o", "gate", "up", "down")
TORCHTUNE = [
    # (csv workload prefix, csv hardware prefix, workload)
    (
        "QLoRA fine-tune",
        "1x RTX 4090",
        TrainWork(
            task="qlora",
            batch=4,
            seq=2048,
            precision="pure",
            recompute="full",
            lora_rank=8,
            lora_targets=ALL_LINEARS,
        ),
    ),
    (
        "LoRA fine-tune single device",
        "1x RTX 4090",
        TrainWork(
            task="lora",
            batch=4,
            seq=2048,
            precision="pure",
            recompute="full",
            lora_rank=8,
            lora_targets=("q", "v"),
        ),
    ),
    (
        "LoRA fine-tune distributed (FSDP)",
        "2x RTX 4090",
        TrainWork(
            task="lora",
            batch=4,
            seq=2048,
            precision="pure",
            recompute="full",
            lora_rank=8,
            lora_targets=("q", "v"),
            parallel=Parallelism(dp=2, zero=3),
        ),
    ),
    (
        "Full fine-tune distributed (FSDP)",
        "4x RTX 4090",
        TrainWork(
            task="full",
            batch=4,
            seq=2048,
            precision="pure",
            recompute="full",
            parallel=Parallelism(dp=4, zero=3),
        ),
    ),
]


@pytest.mark.parametrize(
    ("workload", "hardware", "work"), TORCHTUNE, ids=[f"{w} {h}" for w, h, _ in TORCHTUNE]
)
def test_torchtune_llama2_7b_peaks_within_15_percent(
    workload: str, hardware: str, work: TrainWork
) -> None:
    estimate = _torch_reserved(work, _spec("llama-2-7b"))
    assert estimate == pytest.approx(_measured(workload, hardware), rel=0.15)


FSDP_QLORA = list(csv.DictReader((FIXTURES / "memory-fsdp-qlora.csv").read_text().splitlines()))


def _fsdp_qlora_error(row: dict[str, str]) -> float:
    work = TrainWork(
        task=row["task"],
        batch=int(row["batch"]),
        seq=int(row["seq"]),
        precision="pure",
        recompute="full",
        lora_rank=64,
        lora_targets=("q", "k", "v", "gate", "up", "down"),
        offload_params=row["cpu_offload"] == "true",
        parallel=Parallelism(dp=2, zero=3 if row["sharding"] == "full_shard" else 0),
    )
    estimate = _torch_reserved(work, _spec(row["model"]))
    return estimate / (float(row["measured_GiB"]) * 2**30) - 1


def test_fsdp_qlora_peaks_on_two_geforce_cards() -> None:
    """13 runs: LoRA and QLoRA, FSDP full shard, its DDP mode and CPU offload, Llama-2 7B and
    70B. Each within 25%, ten within 15%, the median within 8% (the two smallest runs, one
    sequence of 512 tokens, are the worst: the source notes their reserved memory hardly
    moved with the context)."""
    errors = sorted(abs(_fsdp_qlora_error(row)) for row in FSDP_QLORA)
    assert len(errors) == 13
    assert errors[-1] < 0.25
    assert sum(e < 0.15 for e in errors) >= 10
    assert errors[len(errors) // 2] < 0.08


def _gpt_like_7_5b() -> ModelSpec:
    """A GPT-like model with Ψ ≈ 7.5B parameters, as in the ZeRO paper's Figure 1."""
    cfg = {
        "model_type": "gpt2",
        "n_embd": 4096,
        "n_layer": 36,
        "n_head": 32,
        "vocab_size": 50257,
        "n_positions": 2048,
    }
    return spec_from_config(cfg, "gpt-7.5b")


@pytest.mark.parametrize(
    ("stage", "figure"),
    [(0, "baseline DP"), (1, "ZeRO stage 1"), (2, "ZeRO stage 2"), (3, "ZeRO stage 3")],
)
def test_zero_paper_model_states(stage: int, figure: str) -> None:
    """Model states per GPU at N_d = 64 with mixed-precision Adam (K = 12)."""
    published = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}[stage] * GB  # ZeRO paper Figure 1
    spec = _gpt_like_7_5b()
    work = TrainWork(
        task="pretrain", dtype="fp16", precision="mixed", parallel=Parallelism(dp=64, zero=stage)
    )
    result = training_memory(spec, work)
    states = sum(
        ln.bytes
        for ln in result.lines
        if ln.key in ("weights", "master_weights", "gradients", "optimizer")
        and "all-gathered" not in ln.label
    )
    from suanli.models.params import count_params

    scale = 7.5e9 / count_params(spec).total  # the paper's Ψ is exactly 7.5B
    assert states * scale == pytest.approx(published, rel=0.03), figure
