"""Speed against published runs (shared/reference/throughput-examples.csv, copied to fixtures).

With the published layout and our default efficiencies (measured matmul ceilings, never fitted
here), the predicted throughput is within 20% for most rows. The rows and their outcome are
listed in docs/accuracy.md; the misses are asserted as misses so a change that fixes or breaks
them is noticed.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.config import spec_from_config
from suanli.models.resolve import load_model
from suanli.models.spec import ModelSpec

FIXTURES = Path(__file__).parent.parent / "fixtures"
ROWS = list(csv.DictReader((FIXTURES / "throughput-examples.csv").read_text().splitlines()))
GPUS = bundled_gpus()
A100 = device_for(find_gpu("a100-sxm-80gb", GPUS), "bf16")
RTX4090 = device_for(find_gpu("rtx4090", GPUS), "bf16")


def _row(model: str, metric: str, workload: str = "", num_gpus: str = "") -> float:
    for row in ROWS:
        if (
            row["model"].startswith(model)
            and row["metric"] == metric
            and row["workload"].startswith(workload)
            and (not num_gpus or row["num_gpus"] == num_gpus)
        ):
            return float(row["value"])
    raise LookupError(model)


def _gpt(hidden: int, layers: int, heads: int) -> ModelSpec:
    """Megatron GPT: vocab 51200, sequence 2048 (Korthikanti et al. 2022, Table 3)."""
    return spec_from_config(
        {
            "model_type": "gpt2",
            "n_embd": hidden,
            "n_layer": layers,
            "n_head": heads,
            "vocab_size": 51200,
            "n_positions": 2048,
        },
        "gpt",
    )


# Korthikanti et al. 2022, Table 3: heads, hidden, layers, TP, PP, GPUs, global batch; all with
# selective recomputation and sequence parallelism, micro-batch 1, data parallel 1.
MEGATRON = [
    ("GPT 22B", _gpt(6144, 48, 64), 8, 1, 4),
    ("GPT 175B", _gpt(12288, 96, 96), 8, 8, 64),
    ("MT-NLG 530B", _gpt(20480, 105, 128), 8, 35, 280),
    ("GPT 1T (Megatron)", _gpt(25600, 128, 160), 8, 64, 512),
]


def _megatron_work(tp: int, pp: int, batch: int) -> TrainWork:
    # Megatron 2022 computed the full masked s x s scores (no flash) with fused kernels.
    return TrainWork(
        task="pretrain",
        batch=1,
        seq=2048,
        grad_accum=batch,
        recompute="selective",
        attention="eager",
        kernels="fused",
        parallel=Parallelism(tp=tp, pp=pp, sp=True),
    )


@pytest.mark.parametrize(
    ("name", "spec", "tp", "pp", "batch"), MEGATRON, ids=[m[0] for m in MEGATRON]
)
def test_megatron_mfu_within_20_percent(
    name: str, spec: ModelSpec, tp: int, pp: int, batch: int
) -> None:
    published = _row(name, "MFU") / 100
    result = training_perf(spec, _megatron_work(tp, pp, batch), A100)
    assert result.mfu(312e12) == pytest.approx(published, rel=0.20)


GPT_1T = _gpt(25600, 128, 160)
GPT_1T_WORK = TrainWork(
    task="pretrain",
    batch=1,
    seq=2048,
    grad_accum=512,
    dtype="fp16",
    recompute="full",
    attention="eager",
    kernels="fused",
    parallel=Parallelism(tp=8, pp=64, dp=6),
)


def test_megatron_1t_on_3072_gpus_within_20_percent() -> None:
    """Narayanan et al. 2021: 502 PFLOP/s on 3072 A100s, TP8 x PP64 (DP 6), batch 3072, with
    full recomputation; their FLOP count includes the recomputation (so HFU)."""
    published_per_gpu = _row("GPT 1T", "aggregate throughput", num_gpus="3072") * 1e15 / 3072
    result = training_perf(GPT_1T, GPT_1T_WORK, A100)
    achieved = result.hardware_flops_per_step / result.step_time_s / 3072
    assert achieved == pytest.approx(published_per_gpu, rel=0.20)


LLAMA7 = load_model("llama-2-7b").spec
ALL = ("q", "k", "v", "o", "gate", "up", "down")


# torchtune README rows: batch 4, seq 2048, pure bf16, full activation checkpointing.
QLORA_COMPILED_WORK = TrainWork(
    task="qlora",
    batch=4,
    seq=2048,
    precision="pure",
    recompute="full",
    lora_rank=8,
    lora_targets=ALL,
    kernels="fused",
)  # the compile=True row
LORA_QV_WORK = TrainWork(
    task="lora",
    batch=4,
    seq=2048,
    precision="pure",
    recompute="full",
    lora_rank=8,
    lora_targets=("q", "v"),
)
FULL_FSDP4_WORK = TrainWork(
    task="full",
    batch=4,
    seq=2048,
    precision="pure",
    recompute="full",
    parallel=Parallelism(dp=4, zero=3),
)


def test_torchtune_single_gpu_rows_within_20_percent() -> None:
    """torchtune README (batch 4, seq 2048, pure bf16, full activation checkpointing)."""
    for work, workload in ((QLORA_COMPILED_WORK, "QLoRA"), (LORA_QV_WORK, "LoRA")):
        published = _row("Llama2-7B", "training speed", workload, "1")
        predicted = training_perf(LLAMA7, work, RTX4090).tokens_per_s
        assert predicted == pytest.approx(published, rel=0.20), workload


def test_known_miss_fsdp_on_geforce_without_p2p() -> None:
    """Documented miss: FSDP across 4 RTX 4090s measured 1,388 tokens/s; the model, with the
    all-gathers and reduce-scatters staged through host memory at the stock driver's measured
    3.3 GB/s, still predicts over 1.5x more. The measured rate implies about 1.7 GB/s of
    effective all-gather bandwidth, which no nccl-tests run of such a host shows
    (docs/accuracy.md)."""
    published = _row("Llama2-7B", "training speed", "Full FT", "4")
    assert training_perf(LLAMA7, FULL_FSDP4_WORK, RTX4090).tokens_per_s > 1.5 * published
