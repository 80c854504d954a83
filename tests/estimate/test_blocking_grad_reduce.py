"""A gradient reduction that blocks the backward pass (DeepSpeed below ZeRO 3,
``--blocking-grad-reduce``): charged whole, where DDP's overlaps the last backward."""

from __future__ import annotations

import dataclasses

import pytest

from suanli import PerfRequest, WorkRequest, perf
from suanli.answers.request import apply_framework
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset

SPEC = preset("llama-3.1-8b")
DEVICE = device("a100-sxm-80gb", "ib-hdr", None)


def _dp_s(batch: int, blocking: bool, zero: int = 1) -> float:
    work = TrainWork(
        task="pretrain",
        batch=batch,
        seq=2048,
        recompute="full",
        parallel=Parallelism(dp=32, zero=zero),
        blocking_grad_reduce=blocking,
    )
    return training_perf(SPEC, work, DEVICE).comm_detail_s["data_parallel"]


def test_a_blocking_reduction_costs_the_same_whatever_the_compute() -> None:
    """The bytes reduced do not depend on the batch; with nothing to hide behind neither does
    the time."""
    assert _dp_s(1, True) == pytest.approx(_dp_s(8, True)) and _dp_s(1, True) > 0


def test_an_overlapped_reduction_is_never_dearer_and_hides_behind_a_long_backward() -> None:
    for batch in (1, 2, 8):
        assert _dp_s(batch, False) <= _dp_s(batch, True)
    assert _dp_s(8, False) == 0.0 < _dp_s(8, True)


def test_zero3_gathers_keep_their_own_overlap() -> None:
    """FSDP/ZeRO-3's per-unit collectives are modelled phase by phase; the flag is for ZeRO 0-2."""
    assert _dp_s(2, True, zero=3) == pytest.approx(_dp_s(2, False, zero=3))


def test_the_deepspeed_preset_blocks_and_gpt_neox_and_hf_overlap() -> None:
    base = WorkRequest(task="pretrain", gpus=16, zero=1, dtype="fp16")
    assert apply_framework(dataclasses.replace(base, framework="deepspeed")).blocking_grad_reduce
    assert not apply_framework(dataclasses.replace(base, framework="gpt-neox")).blocking_grad_reduce
    assert not apply_framework(base).blocking_grad_reduce


def test_the_answer_says_the_reduction_blocks() -> None:
    answer = perf(
        PerfRequest(
            model="gpt2",
            work=WorkRequest(
                task="pretrain", gpus=16, batch=4, dtype="fp16", framework="deepspeed"
            ),
            gpu="v100-sxm2-16gb",
            inter_node="ib-edr",
        )
    )
    assert any("blocks the backward pass" in str(a) for a in answer.assumptions)
    assert not any("overlaps 90%" in str(a) for a in answer.assumptions)
