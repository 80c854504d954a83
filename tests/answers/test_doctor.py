"""``doctor``: environment verdicts, ``healthy`` and the ``suanli doctor --json`` document."""

from __future__ import annotations

import json

from suanli.answers.base import json_schema
from suanli.answers.doctor import DoctorAnswer, doctor
from suanli.live.devices import DriverInfo
from suanli.live.environment import Environment
from tests.cli.test_cli import run

DRIVER_124 = DriverInfo("nvml", driver_version="550.54.15", cuda_driver_version="12.4")


def test_cli_json_equals_the_answer_on_this_machine() -> None:
    out = run("doctor", "--json")
    doc = json.loads(out.stdout)
    assert doc == doctor().to_json()
    assert list(doc) == ["schema_version", "healthy", "verdicts"]
    assert out.returncode == (0 if doc["healthy"] else 1)
    assert all(list(v) == ["check", "status", "detail", "fix"] for v in doc["verdicts"])


def test_cpu_only_build_on_a_gpu_machine_is_unhealthy() -> None:
    env = Environment(
        driver=DRIVER_124, gpu_names=("NVIDIA H100 80GB HBM3",), torch_version="2.5.1"
    )
    answer = doctor(env)
    failed = [v.check for v in answer.verdicts if v.status == "fail"]
    assert "cpu-only-build" in failed and answer.healthy is False
    fix = next(v.fix for v in answer.verdicts if v.check == "cpu-only-build")
    assert "download.pytorch.org/whl/cu124" in fix  # the wheel for the driver's CUDA 12.4
    assert json_schema(DoctorAnswer)["required"] == ["schema_version", "healthy", "verdicts"]
