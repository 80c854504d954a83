"""``doctor_run``: the training-loop verdict, as ``suanli doctor run SCRIPT --json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.doctor_run import (
    DoctorRunAnswer,
    DoctorRunRequest,
    doctor_run,
    run_answer,
)
from suanli.cli.live import doctor_cmd
from suanli.live.diagnosis import StepRecord, diagnose_steps

#: Steps that wait 60 ms for data and compute 30 ms: input-bound.
SLOW_DATA = [StepRecord(data=0.060, forward=0.010, backward=0.015, optimizer=0.005)] * 6

SCRIPT = """
import torch
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(512, 16), torch.randn(512, 1))
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_answer_keeps_the_report_document() -> None:
    report = diagnose_steps(SLOW_DATA, warmup=1)
    report.extras.update(
        instrumentation_errors=[],
        memory_bytes={"weights": 68, "process_resident": 1.5e8},
        sync_sites={"train.py:9": 4},
    )
    answer = run_answer(report, "RuntimeError: boom", 1)
    expected = {"schema_version": SCHEMA_VERSION, **report.as_dict()}
    expected["script_error"] = "RuntimeError: boom"
    expected["script_exit_code"] = 1
    assert json.dumps(answer.to_json()) == json.dumps(expected)
    assert answer.verdict == "input-bound" and answer.steps == 5
    assert answer.step_time_s == pytest.approx(0.090)
    # Free data leaves the 30 ms of compute: a 3x faster step.
    assert answer.fixes[0].expected_speedup == pytest.approx(0.090 / 0.030)
    plain = run_answer(diagnose_steps(SLOW_DATA, warmup=1)).to_json()
    assert "script_error" not in plain and "sync_sites" not in plain


def test_cli_json_equals_the_answer_on_a_real_script(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    args = ["--steps", "10", "--replay", "2", "--warmup", "1"]
    out = CliRunner().invoke(doctor_cmd, ["run", *args, "--json", str(script)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    answer = doctor_run(DoctorRunRequest(str(script), steps=10, replay=2, warmup=1)).to_json()
    assert list(doc) == list(answer)  # the timings differ between two runs; the shape does not
    assert doc["steps"] == answer["steps"] == 10 - 2 - 1  # replayed and warm-up steps left out
    assert set(doc["shares"]) >= {"data", "forward", "backward", "optimizer"}


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such script"):
        doctor_run(DoctorRunRequest(str(tmp_path / "missing.py")))
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("print('no training here')\n")
    with pytest.raises(ValueError, match="--replay must leave steps"):
        doctor_run(DoctorRunRequest(str(script), steps=10, replay=8, warmup=2))
    with pytest.raises(ValueError, match="optimizer steps"):
        doctor_run(DoctorRunRequest(str(script)))
    assert "script_error" in json_schema(DoctorRunAnswer)["properties"]
