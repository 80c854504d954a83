"""FSDP's root unit (embeddings, final norm, LM head) is gathered before each forward and each
backward, and its gradients reduced after the last layer: traffic nothing overlaps, however
long the compute (estimate/perf.py fsdp_root_s)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import find_gpu, load_catalog
from suanli.estimate.comm import all_gather_s, reduce_scatter_s
from suanli.estimate.data_parallel import fsdp_root_s
from suanli.estimate.device import device_for
from suanli.estimate.perf import training_perf
from suanli.estimate.sizes import param_split
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

SPEC = load_model("llama-3.1-8b").spec
DEVICE = device_for(find_gpu("h100-sxm-80gb", load_catalog()), "bf16", auto_calibration=False)
LINK = DEVICE.network.link_for(128, 1)
ROOT_BYTES = param_split(SPEC).other * 2


def test_the_root_floor_is_two_gathers_and_a_reduction_a_micro_batch() -> None:
    work = TrainWork(task="pretrain", batch=2, seq=8192, grad_accum=3)
    gather, scatter = all_gather_s(ROOT_BYTES, 128, LINK), reduce_scatter_s(ROOT_BYTES, 128, LINK)
    assert fsdp_root_s(ROOT_BYTES, work, 128, LINK) == pytest.approx(3 * (2 * gather + scatter))
    # With a pipeline the root is gathered once a step (kept across the micro-batches) and the
    # gradients are reduced once, after the last micro-batch.
    piped = replace(work, parallel=Parallelism(pp=2, dp=128, zero=3))
    assert fsdp_root_s(ROOT_BYTES, piped, 128, LINK) == pytest.approx(gather + scatter)
    # LoRA freezes the embeddings and the head: nothing of the root to reduce.
    lora = replace(work, task="lora")
    assert fsdp_root_s(ROOT_BYTES, lora, 128, LINK) == pytest.approx(2 * 3 * gather)


def test_long_compute_no_longer_hides_all_of_fsdp() -> None:
    """With 16 x 8K-token micro-batches the compute dwarfs the parameter traffic, which used to
    be hidden entirely; the root unit's share stays exposed, and only it."""
    work = TrainWork(
        task="pretrain",
        batch=16,
        seq=8192,
        recompute="full",
        parallel=Parallelism(dp=128, zero=3),
    )
    result = training_perf(SPEC, work, DEVICE)
    exposed = result.comm_detail_s["data_parallel"]
    assert exposed > 0
    assert exposed == pytest.approx(fsdp_root_s(ROOT_BYTES, work, 128, LINK))
    assert exposed < 0.05 * result.step_time_s
