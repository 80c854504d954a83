"""fp16 dynamic loss scaling's cost (estimate/loss_scaling.py, docs/speed.md 'fp16 loss
scaling'): the overflow check and unscale as memory passes over this GPU's gradient partition,
the skipped steps as a share of the step, nothing outside fp16."""

from __future__ import annotations

import dataclasses

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate import loss_scaling, perf
from suanli.estimate.device import device_for
from suanli.estimate.loss_scaling import (
    loss_scaling_bytes,
    loss_scaling_s,
    skipped_step_fraction,
)
from suanli.estimate.perf import training_perf
from suanli.estimate.stragglers import slowest_share
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model


@pytest.mark.parametrize("dtype", ["bf16", "fp32", "tf32", "fp8"])
def test_no_loss_scaling_outside_fp16(dtype: str) -> None:
    work = TrainWork(task="pretrain", dtype=dtype)
    assert loss_scaling_bytes(work, 1e9) == 0.0
    assert skipped_step_fraction(work) == 0.0
    assert loss_scaling_s(work, 1e9, 2e12, 10.0) == 0.0


def test_bytes_per_gradient_element() -> None:
    """Check: read the fp16 gradient, write and read its fp32 copy (2 + 8); unscale: read and
    write the fp32 gradient (8), or the fp16 one in pure precision (4)."""
    mixed = TrainWork(task="pretrain", dtype="fp16")
    pure = TrainWork(task="pretrain", dtype="fp16", precision="pure")
    assert loss_scaling_bytes(mixed, 1.0) == 2 + 8 + 8
    assert loss_scaling_bytes(pure, 1.0) == 2 + 8 + 4
    assert loss_scaling_bytes(mixed, 3e9) == pytest.approx(3e9 * 18)


def test_skipped_steps_follow_window_and_hysteresis(monkeypatch: pytest.MonkeyPatch) -> None:
    work = TrainWork(task="pretrain", dtype="fp16")
    assert skipped_step_fraction(work) == pytest.approx(2 / 1000)
    # A longer window overflows less often; more hysteresis skips more steps per halving.
    monkeypatch.setattr(loss_scaling, "SCALE_WINDOW", 2000)
    assert skipped_step_fraction(work) == pytest.approx(1 / 1000)
    monkeypatch.setattr(loss_scaling, "HYSTERESIS", 4)
    assert skipped_step_fraction(work) == pytest.approx(2 / 1000)


def test_cost_grows_with_params_and_busy_time_and_falls_with_bandwidth() -> None:
    work = TrainWork(task="pretrain", dtype="fp16")
    base = loss_scaling_s(work, 1e9, 2e12, 10.0)
    assert loss_scaling_s(work, 2e9, 2e12, 10.0) > base
    assert loss_scaling_s(work, 1e9, 2e12, 20.0) > base
    assert loss_scaling_s(work, 1e9, 4e12, 10.0) < base
    assert base == pytest.approx(1e9 * 18 / 2e12 + 0.002 * 10.0)


def _fp16_work(zero: int = 1, dp: int = 8) -> TrainWork:
    return TrainWork(
        task="pretrain",
        seq=2048,
        batch=2,
        grad_accum=4,
        dtype="fp16",
        kernels="fused",
        attention="eager",
        parallel=Parallelism(dp=dp, tp=2, pp=2, zero=zero),
    )


def test_the_step_pays_exactly_the_loss_scaling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scalar path adds the check and unscale over this GPU's ZeRO partition and the skipped
    steps' share of compute + memory, and nothing else."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("a100-sxm-40gb", bundled_gpus()), "fp16")
    work = _fp16_work()
    charged = training_perf(spec, work, device)
    monkeypatch.setattr(perf, "loss_scaling_s", lambda w, p, bw, busy: 0.0 * busy)
    free = training_perf(spec, work, device)
    busy = free.breakdown_s["compute"] + free.breakdown_s["memory"]
    params = perf.param_split(spec, 2, 2, 1).total / work.parallel.zero_group
    expected = loss_scaling_s(work, params, device.bandwidth, busy)
    charged_memory = charged.breakdown_s["memory"] - free.breakdown_s["memory"]
    assert charged_memory == pytest.approx(expected, rel=1e-6)
    # The step pays it, and the wait for the slowest of the 32 GPUs on it (estimate/stragglers).
    waited = expected * (1 + slowest_share(work.parallel.gpus))
    assert charged.step_time_s - free.step_time_s == pytest.approx(waited, rel=1e-6)
    assert 0.0 < expected < 0.01 * free.step_time_s


def test_zero_sharding_shrinks_the_check() -> None:
    """ZeRO-1 checks only this rank's gradient partition: more data-parallel ranks, less
    traffic per GPU."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("a100-sxm-40gb", bundled_gpus()), "fp16")
    unsharded = training_perf(spec, _fp16_work(zero=0), device)
    sharded = training_perf(spec, _fp16_work(zero=1), device)
    bf16 = training_perf(spec, dataclasses.replace(_fp16_work(zero=1), dtype="bf16"), device)
    assert sharded.breakdown_s["memory"] < unsharded.breakdown_s["memory"]
    assert sharded.breakdown_s["memory"] > bf16.breakdown_s["memory"]
