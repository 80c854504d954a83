"""fp8 training multiplies the linear layers in fp8 and keeps everything else in bf16
(Transformer Engine's fp8 autocast, torchao's Float8Linear): the element-wise ops, the loss, the
optimizer step and every collective move the bytes of a bf16 run; only the GEMMs (and their
operand casts) change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import elementwise_seconds, loss_bytes, optimizer_step_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

SPEC = load_model("llama-3.1-8b").spec


def test_fp8_work_moves_bf16_tensors() -> None:
    fp8 = TrainWork(task="pretrain", dtype="fp8")
    assert fp8.dtype_bytes == 1 and fp8.tensor_bytes == 2
    for dtype, size in (("bf16", 2), ("fp16", 2), ("fp32", 4), ("tf32", 4)):
        work = TrainWork(task="pretrain", dtype=dtype)
        assert work.tensor_bytes == work.dtype_bytes == size


@pytest.mark.parametrize("kernels", ["eager", "fused", "compiled"])
def test_element_wise_loss_and_optimizer_cost_what_bf16_costs(kernels: str) -> None:
    device = device_for(find_gpu("h100", bundled_gpus()), "fp8")
    bf16 = TrainWork(task="pretrain", seq=4096, kernels=kernels, recompute="op")
    fp8 = replace(bf16, dtype="fp8")
    args = (device.memory_bytes_per_s, device.gemm_model, 32, 8192, 1)
    assert elementwise_seconds(SPEC, fp8, *args) == elementwise_seconds(SPEC, bf16, *args)
    assert loss_bytes(SPEC, fp8, 8192) == loss_bytes(SPEC, bf16, 8192)
    assert optimizer_step_bytes(fp8, 1e9) == optimizer_step_bytes(bf16, 1e9)


def test_collectives_carry_bf16_under_fp8() -> None:
    h100 = find_gpu("h100", bundled_gpus())
    layout = Parallelism(dp=8, tp=8, pp=2, zero=3, sp=True)
    bf16 = TrainWork(task="pretrain", seq=4096, batch=1, grad_accum=4, parallel=layout)
    fp8 = replace(bf16, dtype="fp8")
    slow = training_perf(SPEC, bf16, device_for(h100, "bf16"))
    fast = training_perf(SPEC, fp8, device_for(h100, "fp8"))
    for kind in ("tensor_parallel", "pipeline_p2p"):
        assert fast.comm_detail_s[kind] == pytest.approx(slow.comm_detail_s[kind], rel=1e-12)
    # The GEMMs are faster and the rest is not: fp8 wins, but by well under the 2x of its peak.
    assert slow.breakdown_s["memory"] == pytest.approx(fast.breakdown_s["memory"], rel=1e-12)
    assert 1.0 < slow.step_time_s / fast.step_time_s < 1.6


def test_transformer_engine_casts_the_weights_once_a_step() -> None:
    from suanli.estimate.casts import fp8_cast_seconds
    from suanli.estimate.perf import train_matmul_seconds
    from suanli.estimate.shapes import linear_shapes

    device = device_for(find_gpu("h100", bundled_gpus()), "fp8")
    shapes = linear_shapes(SPEC)
    args = (shapes, SPEC.num_layers, SPEC.hidden_size, 4096, 1, device.memory_bytes_per_s)
    every = fp8_cast_seconds(*args, device.gemm_model)
    once = fp8_cast_seconds(*args, device.gemm_model, weight_casts=1 / 16)
    # Of 2MK + MN + 2KN elements a GEMM casts, the weights' 2KN are paid a sixteenth as often.
    assert 0.3 * every < once < 0.8 * every
    te = TrainWork(task="pretrain", seq=4096, dtype="fp8", fp8_scaling="delayed")
    torchao = replace(te, fp8_scaling="dynamic")
    assert te.fp8_weight_cache and not torchao.fp8_weight_cache
    assert not replace(te, dtype="bf16").fp8_weight_cache

    def micro_s(work: TrainWork, grad_accum: int) -> float:
        work = replace(work, grad_accum=grad_accum)
        return float(train_matmul_seconds(SPEC, work, device, 4096, 1, SPEC.num_layers))

    assert micro_s(te, 16) < micro_s(te, 1)
    assert micro_s(torchao, 16) == micro_s(torchao, 1)
