"""Verdict rules on recorded step timings, with golden verdicts."""

from __future__ import annotations

import pytest

from suanli.live.diagnosis import StepRecord, diagnose_steps


def _steps(n: int = 10, **phases: float) -> list[StepRecord]:
    return [StepRecord(**phases) for _ in range(n)]


GOLDEN = [
    ({"data": 0.040, "forward": 0.010, "backward": 0.020, "optimizer": 0.005}, "input-bound"),
    (
        {
            "data": 0.001,
            "forward": 0.030,
            "backward": 0.060,
            "optimizer": 0.010,
            "communication": 0.060,
        },
        "communication-bound",
    ),
    (
        {
            "data": 0.001,
            "forward": 0.030,
            "backward": 0.060,
            "optimizer": 0.010,
            "other": 0.02,
            "syncs": 12,
        },
        "sync-bound",
    ),
    ({"data": 0.0001, "forward": 0.002, "backward": 0.003, "optimizer": 0.001}, "launch-bound"),
    ({"data": 0.002, "forward": 0.100, "backward": 0.200, "optimizer": 0.020}, "compute-bound"),
]


@pytest.mark.parametrize(("phases", "verdict"), GOLDEN, ids=[g[1] for g in GOLDEN])
def test_golden_verdicts(phases: dict[str, float], verdict: str) -> None:
    report = diagnose_steps(_steps(**phases), multi_process=True)
    assert report.verdict == verdict
    assert sum(report.shares.values()) == pytest.approx(1.0)
    if verdict != "compute-bound":
        assert report.fixes and all(f.expected_speedup > 1 for f in report.fixes)


def test_input_bound_gain_uses_the_measured_data_free_time() -> None:
    steps = _steps(data=0.030, forward=0.005, backward=0.010, optimizer=0.005)
    report = diagnose_steps(steps, data_free_step_s=0.025)
    assert report.fixes[0].expected_speedup == pytest.approx(0.050 / 0.025)
    assert report.fixes[0].basis.startswith("measured")
    estimated = diagnose_steps(steps)
    assert estimated.fixes[0].expected_speedup == pytest.approx(0.050 / 0.020)


def test_a_data_fix_never_claims_more_than_amdahls_law() -> None:
    """Data is 73% of the step: removing it entirely gives at most 1 / 0.27 = 3.7x, even when
    the replayed steps ran 275x faster (warm caches, no host decode)."""
    steps = _steps(data=0.073, forward=0.010, backward=0.012, optimizer=0.005)
    report = diagnose_steps(steps, data_free_step_s=0.100 / 275.5)
    assert report.shares["data"] == pytest.approx(0.73)
    assert report.fixes[0].expected_speedup == pytest.approx(1 / 0.27)
    assert "Amdahl" in report.fixes[0].basis
    modest = diagnose_steps(steps, data_free_step_s=0.050)  # under the bound: measured as is
    assert modest.fixes[0].expected_speedup == pytest.approx(0.100 / 0.050)


def test_warmup_steps_are_ignored_and_thresholds_hold_at_the_edge() -> None:
    slow_first = [StepRecord(data=5.0, forward=0.1), *_steps(data=0.01, forward=0.1, backward=0.2)]
    assert diagnose_steps(slow_first, warmup=1).verdict == "compute-bound"
    edge = _steps(data=0.29, forward=0.31, backward=0.4)
    assert diagnose_steps(edge).verdict == "compute-bound"  # 29% < 30% threshold
    over = _steps(data=0.31, forward=0.29, backward=0.4)
    assert diagnose_steps(over).verdict == "input-bound"


def test_single_process_communication_is_not_blamed() -> None:
    phases = {"forward": 0.030, "backward": 0.060, "optimizer": 0.010, "communication": 0.06}
    assert diagnose_steps(_steps(**phases), multi_process=False).verdict == "compute-bound"


def test_no_steps_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no steps"):
        diagnose_steps([])
