"""The wait for the slowest GPU (estimate/stragglers.py): the order statistic it uses, its
bounds, and where the training estimate charges it."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.estimate.perf import training_perf
from suanli.estimate.stragglers import CAP, SIGMA, slowest_share, straggler_wait_s
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_more_gpus_never_wait_less_and_never_beyond_the_drained_outliers(a: int, b: int) -> None:
    """The expected slowest of n draws grows with n, is 0 for one GPU and stops at the whisker."""
    low, high = sorted((a, b))
    assert 0.0 <= slowest_share(low) <= slowest_share(high) <= CAP
    assert slowest_share(1) == 0.0


@pytest.mark.parametrize("gpus", [8, 64])
def test_blom_approximation_matches_sampled_maxima(gpus: int) -> None:
    """The expected maximum of n normal draws (sampled here, 4,000 jobs) agrees with Blom's
    formula within 3% below the cap."""
    rng = random.Random(41)
    maxima = [max(rng.gauss(0.0, SIGMA) for _ in range(gpus)) for _ in range(4000)]
    assert slowest_share(gpus) == pytest.approx(statistics.fmean(maxima), rel=0.03)


def test_two_gpus_wait_near_the_exact_expected_maximum() -> None:
    """For two GPUs the expected maximum is exactly sigma / sqrt(pi); Blom is within 5%."""
    assert slowest_share(2) == pytest.approx(SIGMA / math.sqrt(math.pi), rel=0.05)


def test_the_array_path_gives_the_scalar_share_per_layout() -> None:
    """The planner's array path charges each layout its own GPU count's share."""
    import numpy as np

    gpus = np.array([1, 8, 1, 512, 8])
    busy = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    expected = [b * slowest_share(int(n)) for b, n in zip(busy, gpus, strict=True)]
    assert list(straggler_wait_s(busy, gpus)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("parallel", "gpus"),
    [(Parallelism(dp=1), 1), (Parallelism(dp=8), 8), (Parallelism(dp=64, tp=8, pp=2), 1024)],
)
def test_training_charges_the_wait_on_the_busy_time(parallel: Parallelism, gpus: int) -> None:
    """A training step's straggler wait is its compute and memory time times the share of its
    GPU count, none on one GPU."""
    spec = preset("llama-3.1-8b")
    work = TrainWork(task="pretrain", batch=1, seq=2048, grad_accum=4, parallel=parallel)
    result = training_perf(spec, work, device("h100-sxm-80gb", "ib-ndr", None))
    busy = result.breakdown_s["compute"] + result.breakdown_s["memory"]
    wait = result.comm_detail_s.get("straggler_wait", 0.0)
    assert wait == pytest.approx(busy * slowest_share(gpus))
    assert (wait > 0) == (gpus > 1)
