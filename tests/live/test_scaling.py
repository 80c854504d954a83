"""Scaling on the CPU for real: two gloo processes on 127.0.0.1 against one."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from suanli.live.scaling import measure_scaling


def test_two_gloo_processes_against_one() -> None:
    result = measure_scaling(processes=2, hidden=256, layers=2, batch=8, steps=6)
    doc = result.as_dict()
    assert doc["backend"] in ("gloo", "nccl")
    assert doc["params"] == 2 * (256 * 256 + 256)
    assert doc["speedup"] == pytest.approx(2 * doc["step_1_s"] / doc["step_n_s"])
    assert 0 <= doc["communication_share"] < 1
    assert doc["allreduce_s"] > 0
    # The prediction adds the exposed all-reduce to the one-process step.
    assert doc["predicted_step_n_s"] >= doc["step_1_s"]


def test_needs_two_processes() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        measure_scaling(processes=1)
