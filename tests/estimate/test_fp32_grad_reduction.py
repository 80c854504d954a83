"""Gradients reduced in fp32 (``main_grads_fp32``, Megatron's default with bf16): the
data-parallel reduction moves 4 bytes a parameter, the distributed optimizer gathers the
parameters back in 2 (docs/speed.md, "Gradients reduced in fp32")."""

from __future__ import annotations

import dataclasses

import pytest

from suanli import WorkRequest
from suanli.answers.request import apply_framework
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset

SPEC = preset("llama-3.1-8b")
#: Across nodes on a slow fabric, so the bandwidth term dominates each collective's latency.
DEVICE = device("a100-sxm-80gb", "roce-100g", None)


def _dp_s(zero: int, fp32: bool, lora: bool = False) -> float:
    work = TrainWork(
        task="lora" if lora else "pretrain",
        batch=1,
        seq=2048,
        recompute="full",
        parallel=Parallelism(dp=64, zero=zero),
        blocking_grad_reduce=True,  # nothing hidden: the whole reduction is charged
        main_grads_fp32=fp32,
    )
    return training_perf(SPEC, work, DEVICE).comm_detail_s["data_parallel"]


@pytest.mark.parametrize("zero", [1, 2])
def test_a_distributed_optimizer_moves_half_again_as_many_bytes(zero: int) -> None:
    """Reduce-scatter 4 bytes and all-gather 2 against 2 and 2: 1.5x the bandwidth term (a
    little less with the fixed latencies)."""
    ratio = _dp_s(zero, True) / _dp_s(zero, False)
    assert 1.35 < ratio <= 1.5 + 1e-9


def test_a_plain_all_reduce_moves_twice_the_bytes() -> None:
    ratio = _dp_s(0, True) / _dp_s(0, False)
    assert 1.8 < ratio <= 2.0 + 1e-9


def test_lora_adapters_reduce_in_fp32_either_way() -> None:
    reduced = _dp_s(0, True, lora=True)
    assert reduced > 0
    assert reduced == pytest.approx(_dp_s(0, False, lora=True))


def test_the_megatron_preset_reduces_in_fp32_and_fsdp_does_not() -> None:
    base = WorkRequest(task="pretrain", gpus=16, zero=1)
    assert apply_framework(dataclasses.replace(base, framework="megatron")).main_grads_fp32
    assert not apply_framework(dataclasses.replace(base, framework="torchtitan")).main_grads_fp32
