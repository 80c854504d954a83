"""Dropout's kernels in the training step (docs/speed.md, "Dropout kernels"): the bytes
aten::native_dropout moves, where the job has dropout, and only there."""

from __future__ import annotations

import dataclasses

import pytest

from suanli.estimate.elementwise import elementwise_kernels_per_layer, training_op_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset

GPT2 = preset("gpt2")  # config dropout 0.1


def _work(**changes: object) -> TrainWork:
    base = TrainWork(task="pretrain", batch=4, seq=1024, dtype="fp16", attention="eager")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_eager_dropout_reads_input_writes_output_and_a_byte_mask() -> None:
    h, heads, s, b = GPT2.hidden_size, GPT2.attention.num_heads, 1024, 2
    # two residual dropouts of width h, and the attention probabilities (eager attention)
    expected = 2 * (2 * b + 1) * h + (2 * b + 1) * heads * s
    assert training_op_bytes(GPT2, _work(), fused=False)["dropout"] == expected


def test_fused_code_pays_only_the_residual_masks_and_flash_drops_inside() -> None:
    h, heads, s, b = GPT2.hidden_size, GPT2.attention.num_heads, 1024, 2
    fused = training_op_bytes(GPT2, _work(kernels="fused"), fused=True)["dropout"]
    assert fused == 2 * h + (2 * b + 1) * heads * s
    flash = training_op_bytes(GPT2, _work(attention="flash"), fused=False)["dropout"]
    assert flash == 2 * (2 * b + 1) * h


def test_no_dropout_no_kernels_and_no_bytes() -> None:
    work = _work(dropout=0.0)
    assert training_op_bytes(GPT2, work, fused=False)["dropout"] == 0
    with_drop = elementwise_kernels_per_layer(GPT2, _work())
    assert with_drop - elementwise_kernels_per_layer(GPT2, work) == 3
    llama = preset("llama-3.1-8b")  # config dropout 0
    assert training_op_bytes(llama, _work(), fused=False)["dropout"] == 0


def test_a_step_with_dropout_is_slower_by_its_memory_time_only() -> None:
    dev = device("v100-sxm2-16gb", "ib-edr", None)
    on = training_perf(GPT2, _work(parallel=Parallelism()), dev)
    off = training_perf(GPT2, _work(dropout=0.0, parallel=Parallelism()), dev)
    assert on.breakdown_s["memory"] > off.breakdown_s["memory"]
    assert on.breakdown_s["compute"] == pytest.approx(off.breakdown_s["compute"])
