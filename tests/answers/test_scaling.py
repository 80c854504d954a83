"""``scaling``: 1 against N ranks, as ``suanli doctor scaling --json`` (synthetic timings)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from suanli.answers import scaling as answers_scaling
from suanli.answers.base import SCHEMA_VERSION
from suanli.answers.scaling import ScalingRequest, scaling, scaling_answer
from suanli.cli.live import doctor_cmd
from suanli.live.scaling import ScalingResult

#: 4 ranks: 100 ms alone, 125 ms together, a 40 ms all-reduce, 110 ms predicted.
RESULT = ScalingResult(4, "gloo", 1_050_624, 0.100, 0.125, 0.040, 0.110)


def test_numbers_against_a_hand_computation() -> None:
    answer = scaling_answer(RESULT)
    assert answer.speedup == pytest.approx(4 * 0.100 / 0.125)  # 3.2x
    assert answer.efficiency == pytest.approx(0.8)
    assert answer.communication_share == pytest.approx(0.025 / 0.125)  # 20%
    assert answer.prediction_error == pytest.approx(0.110 / 0.125 - 1)
    assert answer.cause.startswith("scales well")
    doc = answer.to_json()
    assert json.dumps(doc) == json.dumps({"schema_version": SCHEMA_VERSION, **RESULT.as_dict()})


def test_cli_json_equals_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")  # the answer asks for PyTorch before it runs the ranks
    calls = []

    def fake(*args: int) -> ScalingResult:
        calls.append(args)
        return RESULT

    monkeypatch.setattr(answers_scaling, "measure_scaling", fake)
    out = CliRunner().invoke(doctor_cmd, ["scaling", "--procs", "4", "--hidden", "64", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == scaling(ScalingRequest(procs=4, hidden=64)).to_json()
    assert calls[0] == (4, 64, 4, 16, 12)
    table = CliRunner().invoke(doctor_cmd, ["scaling", "--procs", "4"], env={"COLUMNS": "120"})
    assert "3.20x (80% efficiency)" in table.stdout and "cause: scales well" in table.stdout
