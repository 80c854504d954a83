"""The OOM remedy chain: order, stopping rule, and a final configuration that fits."""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import TrainWork
from suanli.models.resolve import load_model
from suanli.plan.fit import fit_chain

GPUS = bundled_gpus()
ORDER = ["batch", "recompute", "precision", "sharding", "offload"]


def _plan(model: str, work: TrainWork, gpu: str, gpus: int = 1):  # type: ignore[no-untyped-def]
    g = find_gpu(gpu, GPUS)
    return fit_chain(load_model(model).spec, work, g, device_for(g, work.dtype), gpus), g


def test_chain_follows_the_practitioners_order_and_stops_at_the_first_fit() -> None:
    plan, gpu = _plan("llama-3.1-8b", TrainWork(task="full", batch=8, seq=2048), "4090")
    stages = [s.stage for s in plan.steps]
    assert stages == sorted(stages, key=ORDER.index)
    assert plan.fits and plan.steps[-1].fits
    assert not any(s.fits for s in plan.steps[:-1])  # it stopped at the first fit
    assert (
        training_memory(load_model("llama-3.1-8b").spec, plan.final).total_bytes <= gpu.memory_bytes
    )


def test_global_batch_is_kept_while_shrinking_the_micro_batch() -> None:
    plan, _ = _plan("llama-3.1-8b", TrainWork(task="full", batch=8, grad_accum=1), "4090")
    assert plan.final.batch * plan.final.grad_accum == 8


def test_each_step_reports_savings_and_speed() -> None:
    plan, _ = _plan("llama-3.1-8b", TrainWork(task="full", batch=4, seq=2048), "4090")
    total_saved = sum(s.saved_bytes for s in plan.steps)
    assert total_saved == pytest.approx(plan.start_bytes - plan.steps[-1].memory_bytes, rel=1e-12)
    recompute = next(s for s in plan.steps if s.change.startswith("full"))
    assert recompute.speed_ratio < 1  # recomputation costs speed


def test_multi_gpu_chain_shards_before_offloading() -> None:
    plan, _ = _plan("llama-3.1-70b", TrainWork(task="full", batch=1, seq=4096), "h100", gpus=8)
    stages = [s.stage for s in plan.steps]
    assert "sharding" in stages
    assert plan.fits and plan.final.parallel.gpus == 8
    assert "offload" not in stages or stages.index("offload") > stages.index("sharding")


def test_already_fitting_work_needs_no_steps() -> None:
    plan, _ = _plan("llama-3.2-1b", TrainWork(task="lora", batch=1, seq=512), "h100")
    assert plan.fits and plan.steps == ()
