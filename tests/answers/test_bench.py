"""``bench``: the graded measurements and the calibration file, as ``suanli bench --json``.

The measurements are replaced by a synthetic graded H100 run, so no GPU (or PyTorch) is needed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.answers import bench as answers_bench
from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.bench import BenchAnswer, BenchRequest, bench
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli import bench as cli_bench
from suanli.estimate.device import read_calibration
from suanli.live import bench as live_bench
from suanli.live.bench import (
    AllReduceResult,
    AllReduceSize,
    BandwidthResult,
    BenchResult,
    Health,
    MatmulResult,
    ShapeResult,
    grade_matmul,
)


def _h100_run() -> BenchResult:
    h100 = find_gpu("h100-sxm-80gb", bundled_gpus())
    bf16 = MatmulResult(
        "bf16",
        "bf16",
        6.0e14,
        (8192, 8192, 8192),
        (ShapeResult(8192, 8192, 8192, 6.0e14, 2e-3, 9),),
    )
    return BenchResult(
        device="cuda:0",
        device_name="NVIDIA H100 80GB HBM3",
        gpu_id=h100.id,
        in_catalog=True,
        quick=True,
        torch_version="2.5.1",
        date="2026-01-02T00:00:00+00:00",
        matmul=(replace(bf16, grade=grade_matmul(bf16, h100, Health(), True, "")),),
        memory=BandwidthResult("device memory (copy)", 2.9e12, 2**30, 1e-3, 20),
        host_transfer=(BandwidthResult("host->device pinned", 50e9, 2**28, 5e-3, 5),),
        allreduce=AllReduceResult(
            "nccl", 8, (AllReduceSize(2**28, 20, 1e-3, 2.7e11, 4.7e11),), 4.7e11
        ),
        seconds=12.5,
    )


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> BenchResult:
    result = _h100_run()
    monkeypatch.setattr(live_bench, "run_bench", lambda **kwargs: result)
    monkeypatch.setattr(answers_bench, "torch_available", lambda: True)
    monkeypatch.setattr(cli_bench, "_torch_available", lambda: True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return result


def test_cli_json_equals_the_answer(fake_run: BenchResult, tmp_path: Path) -> None:
    out = CliRunner().invoke(cli_bench.bench_cmd, ["--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    answer = bench(BenchRequest())
    assert doc == answer.to_json()
    # The document is the run's own dict after schema_version, then where the calibration went.
    path = tmp_path / "suanli" / "calibration" / "h100-sxm-80gb.toml"
    assert json.dumps(doc) == json.dumps(
        {"schema_version": SCHEMA_VERSION, **fake_run.as_dict(), "calibration_path": str(path)}
    )


def test_calibration_file_and_grade(fake_run: BenchResult, tmp_path: Path) -> None:
    answer = bench(BenchRequest(output=str(tmp_path / "cal.toml"), save=False))
    assert answer.calibration_path == str(tmp_path / "cal.toml")
    rows = read_calibration(tmp_path / "cal.toml")
    assert rows[("h100-sxm-80gb", "bf16")]["matmul_flops"] == pytest.approx(6.0e14)
    # Graded against the datasheet: 600 of 989.4 dense bf16 TFLOP/s.
    grade = answer.to_json()["matmul"][0]["grade"]
    assert grade["datasheet"] == pytest.approx(989.4e12, rel=1e-3)
    assert grade["percent_of_datasheet"] == pytest.approx(100 * 6.0e14 / 989.4e12, rel=1e-3)
    assert bench(BenchRequest(save=False)).to_json()["calibration_path"] is None


def test_bad_sizes_and_schema(fake_run: BenchResult) -> None:
    with pytest.raises(ValueError):
        bench(BenchRequest(sizes="lots", save=False))
    schema = json_schema(BenchAnswer)
    assert "calibration_path" in schema["properties"] and "result" not in schema["properties"]
    assert "matmul" in schema["required"]
