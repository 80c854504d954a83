"""Sharded gradients are reduced after every micro-batch: DeepSpeed ZeRO-3 reduce-scatters in
each backward (it refuses ``no_sync``) and FSDP2 does unless told otherwise, so gradient
accumulation does not amortise the reduce-scatter the way DDP's ``no_sync`` amortises its
all-reduce. A pipeline schedule syncs only its last backward."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.data_parallel import fsdp_syncs
from suanli.estimate.device import device_for
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

SPEC = load_model("llama-2-7b").spec
# Four GeForce cards without peer-to-peer: the collectives, not the matmuls, set the step.
DEVICE = device_for(find_gpu("rtx-4090-24gb", bundled_gpus()), "bf16")
WORK = TrainWork(
    task="full", batch=1, seq=2048, precision="pure", recompute="full",
    parallel=Parallelism(dp=4, zero=3),
)  # fmt: skip


def test_one_sync_per_micro_batch_without_a_pipeline() -> None:
    assert fsdp_syncs(replace(WORK, grad_accum=8)) == 8
    piped = replace(WORK, grad_accum=8, parallel=Parallelism(dp=2, pp=2, zero=3))
    assert fsdp_syncs(piped) == 1


@pytest.mark.parametrize("micro_batches", [2, 4, 8])
def test_accumulation_repeats_all_of_fsdps_traffic(micro_batches: int) -> None:
    """Every collective of a ZeRO-3 step (gathers and reduce-scatters) happens once per
    micro-batch and hides only behind that micro-batch's forward or backward (never behind the
    optimizer step, which runs once a step), so where the link is the bottleneck in every phase
    the exposed traffic is exactly m times one micro-batch's."""
    one = training_perf(SPEC, WORK, DEVICE)
    many = training_perf(SPEC, replace(WORK, grad_accum=micro_batches), DEVICE)
    assert one.bound == "communication"
    exposed = many.comm_detail_s["data_parallel"]
    assert exposed == pytest.approx(micro_batches * one.comm_detail_s["data_parallel"], rel=1e-9)
