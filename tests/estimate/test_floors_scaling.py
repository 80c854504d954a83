"""Invariants of the training answer's headline figures (issue 41), over random models, layouts,
cards and networks: the speed-up over one GPU is never above the GPU count and is absent, with
its reason, when one GPU cannot hold the job; MFU is never above the card's measured GEMM
ceiling."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings

from suanli.estimate.advice import scaling
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism
from tests.estimate.floors import FLOORS, Case, cases, gpu_memory


@settings(FLOORS, max_examples=1500)
@given(cases())
def test_speedup_never_above_the_gpu_count_and_only_where_one_gpu_fits(case: Case) -> None:
    """Against one GPU running the same global batch, a layout adds GPUs and communication, never
    work taken away: speed-up <= GPUs. Where that one GPU would not hold the job there is no
    speed-up at all (the issue's '9.26x on 8 GPUs (116%)' was against a one-GPU ZeRO-3 job of
    a model that does not fit one GPU), and the answer says why."""
    memory = gpu_memory(case.card)
    result = scaling(case.spec, case.work, case.device, memory)
    single = replace(
        case.work,
        parallel=Parallelism(),
        grad_accum=case.work.grad_accum * case.work.parallel.dp,
    )
    speedup = result["speedup"]
    if case.work.parallel.gpus > 1 and training_memory(case.spec, single).total_bytes > memory:
        assert speedup is None and result["efficiency"] is None
        assert isinstance(result["reason"], str) and "one GPU" in result["reason"]
    else:
        assert isinstance(speedup, float)
        assert 0 < speedup <= case.work.parallel.gpus * (1 + 1e-9)


@settings(FLOORS, max_examples=2500)
@given(cases())
def test_mfu_never_above_the_measured_gemm_ceiling(case: Case) -> None:
    """Model FLOPs per second per GPU never exceed the card's measured matmul ceiling (the
    maximum achievable matmul FLOP/s, device matmul efficiency x peak): everything else in
    the step (attention, memory-bound ops, communication) only adds time."""
    result = training_perf(case.spec, case.work, case.device)
    assert result.mfu(case.device.peak_flops) <= case.device.matmul_efficiency * (1 + 1e-9)
