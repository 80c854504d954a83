"""The vectorized path computes exactly what the scalar estimators compute."""

from __future__ import annotations

import random

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")

SHAPES = [
    ("llama-3.1-8b", TrainWork(task="full", seq=2048)),
    ("llama-3.1-8b", TrainWork(task="lora", seq=1024, recompute="full", precision="pure")),
    ("qwen3-30b-a3b", TrainWork(task="qlora", seq=4096, attention="eager", recompute="selective")),
    (
        "mixtral-8x7b",
        TrainWork(
            task="pretrain",
            seq=2048,
            kernels="fused",
            optimizer="adafactor",
            parallel=Parallelism(ep=2),
        ),
    ),
    ("gpt2", TrainWork(task="full", seq=512, attention="eager", dtype="fp32")),
    ("deepseek-v2-lite", TrainWork(task="full", seq=2048, offload_optimizer=True)),
    # Framework techniques: per-op checkpointing, every 2nd layer, offloading, chunked and fused
    # loss, fp32 main grads, optimizer in backward.
    (
        "llama-3.1-8b",
        TrainWork(task="pretrain", seq=4096, recompute="op", loss="chunked", main_grads_fp32=True),
    ),
    (
        "qwen3-30b-a3b",
        TrainWork(task="full", seq=2048, recompute="op", recompute_every=2, loss="fused"),
    ),
    (
        "llama-3.1-8b",
        TrainWork(
            task="full",
            seq=2048,
            recompute="full",
            recompute_every=3,
            activation_offload=True,
            optimizer_in_backward=True,
        ),
    ),
    ("llama-3.1-8b", TrainWork(task="lora", seq=2048, activation_offload=True, loss="fused")),
    (
        "llama-3.1-8b",
        TrainWork(task="full", seq=2048, zero_buckets="deepspeed", saved_tensors="megatron"),
    ),
    ("llama-3.1-8b", TrainWork(task="full", seq=2048, parallel=Parallelism(shard=2))),
    ("llama-3.1-8b", TrainWork(task="full", seq=2048, offload_params=True)),
    # QLoRA's NF4 base gathered by FSDP and copied by CPU offload (fsdp_qlora).
    ("llama-3.1-8b", TrainWork(task="qlora", seq=2048, recompute="full")),
    ("llama-3.1-8b", TrainWork(task="qlora", seq=2048, offload_params=True)),
    ("llama-3.1-8b", TrainWork(task="lora", seq=2048, offload_params=True)),
    # fp8: the GEMMs in fp8, what flows between them (and every collective) in bf16.
    ("llama-3.1-8b", TrainWork(task="pretrain", seq=4096, dtype="fp8", kernels="compiled")),
    (
        "mixtral-8x7b",
        TrainWork(task="pretrain", seq=2048, dtype="fp8", parallel=Parallelism(ep=2)),
    ),
    # fp16 with dynamic loss scaling (GPT-NeoX: fused kernels, no flash attention), mixed and pure.
    (
        "llama-3.1-8b",
        TrainWork(task="pretrain", seq=2048, dtype="fp16", kernels="fused", attention="eager"),
    ),
    ("llama-3.1-8b", TrainWork(task="lora", seq=1024, dtype="fp16", precision="pure")),
    # Expert tensor parallelism below TP: whole experts (ETP 1), or split 2 ways (the common
    # divisor with each drawn TP).
    (
        "qwen3-30b-a3b",
        TrainWork(task="pretrain", seq=2048, dtype="fp8", parallel=Parallelism(ep=8, etp=1)),
    ),
    ("mixtral-8x7b", TrainWork(task="pretrain", seq=2048, parallel=Parallelism(ep=4, etp=2))),
    # The 2023 Triton FlashAttention kernel (llm-foundry's attn_impl triton) at a long sequence.
    ("llama-3.1-8b", TrainWork(task="pretrain", seq=16384, attention="triton", recompute="full")),
]


@pytest.mark.parametrize(
    ("model", "base"), SHAPES, ids=[f"{m}-{w.task}-{i}" for i, (m, w) in enumerate(SHAPES)]
)
# mi300x: a mesh without a switch (groups of 2-4 GPUs reach only their peers' links).
# rtx-4090: staged through host memory, gathers slower than all-reduces (Link.gather_share).
@pytest.mark.parametrize("gpu", ["h100", "l40s", "mi300x", "rtx-4090-24gb"])
def test_vector_equals_scalar(model: str, base: TrainWork, gpu: str) -> None:
    spec = load_model(model).spec
    device = device_for(find_gpu(gpu, bundled_gpus()), base.dtype)
    rng = random.Random(7)
    rows = []
    for _ in range(40):
        # Tensor parallelism splits attention by heads (gpt2 has 12: no TP 8).
        tp = rng.choice([t for t in (1, 2, 4, 8) if spec.attention.num_heads % t == 0])
        pp = rng.choice([1, 2, 4])
        dp = rng.choice([1, 2, 8, 16])
        zero = rng.choice([0, 1, 2, 3])
        rows.append(
            {
                "tp": tp,
                "pp": pp,
                "dp": dp,
                "zero": zero,
                "batch": rng.choice([1, 2, 4]),
                "grad_accum": rng.choice([1, 4, 16]),
                "sp": int(tp > 1 and rng.random() < 0.5),
            }
        )
    lay = vector.Layouts.of(**{k: [r[k] for r in rows] for k in rows[0]})
    memory = vector.train_memory(spec, base, lay)
    speed = vector.train_speed(spec, base, lay, device)
    for i, r in enumerate(rows):
        par = Parallelism(
            dp=r["dp"],
            tp=r["tp"],
            pp=r["pp"],
            zero=r["zero"],
            sp=bool(r["sp"]),
            ep=base.parallel.ep,
            etp=base.parallel.etp,
            shard=base.parallel.shard,
        )
        work = TrainWork(
            **{**base.__dict__, "parallel": par, "batch": r["batch"], "grad_accum": r["grad_accum"]}
        )
        assert memory[i] == pytest.approx(training_memory(spec, work).total_bytes, rel=1e-9)
        scalar = training_perf(spec, work, device)
        assert speed["step_time_s"][i] == pytest.approx(scalar.step_time_s, rel=1e-9)
        assert speed["mfu"][i] == pytest.approx(scalar.mfu(device.peak_flops), rel=1e-9)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("gpu", ["h100", "mi300x"])
def test_vector_inference_equals_scalar(model: str, gpu: str) -> None:
    from suanli.estimate.inference import inference_perf
    from suanli.estimate.workload import InferWork

    spec = load_model(model).spec
    device = device_for(find_gpu(gpu, bundled_gpus()), "bf16")
    batch = [1, 8, 32, 1, 64]
    tp = [1, 2, 8, 4, 8]
    result = vector.infer_speed(spec, "fp8", 2, batch, tp, 1024, 128, device)
    for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
        work = InferWork(batch=bval, tp=tval, weight_format="fp8", context=1024 + 128)
        scalar = inference_perf(spec, work, device, 1024, 128)
        assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
        assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)
