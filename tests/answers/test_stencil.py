"""``stencil``: an FDTD simulation on one GPU or every GPU, as ``suanli stencil --json``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema, jsonable
from suanli.answers.stencil import StencilAnswer, StencilRequest, gpu_report, stencil
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.stencil import stencil_cmd
from suanli.estimate.device import device_for
from suanli.estimate.stencil import StencilWork, stencil_report


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(stencil_cmd, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def test_cli_one_gpu_json_equals_the_answer() -> None:
    args = ("--grid", "1024", "1024", "1024", "--gpu", "a100-sxm-80gb", "--gpus", "4")
    doc = cli_json(*args)
    answer = stencil(StencilRequest(grid=(1024, 1024, 1024), gpu="a100-sxm-80gb", gpus=4))
    assert doc == answer.to_json()
    assert list(doc)[:3] == ["schema_version", "gpu", "device"] and "rows" not in doc
    assert doc["schema_version"] == SCHEMA_VERSION
    # 72 bytes per cell (6 fields + 12 coefficients, fp32) over a quarter of 1024^3 cells.
    breakdown = doc["memory"]["breakdown_bytes"]
    assert breakdown["fields"] + breakdown["coefficients"] == 72 * 1024**3 / 4
    # Yee fp32 traffic: 6 fields x 3 accesses x 4 B + 12 coefficients x 4 B (Taflove & Hagness).
    assert doc["throughput"]["bytes_per_cell_step"] == 6 * 3 * 4 + 12 * 4


def test_cli_ranking_json_equals_the_answer() -> None:
    doc = cli_json("--grid", "2048", "2048", "2048", "--steps", "100")
    answer = stencil(StencilRequest(grid=(2048, 2048, 2048), steps=100))
    assert doc == answer.to_json() and list(doc) == ["schema_version", "rows"]
    fitting = [r for r in answer.reports if r.memory.fits]
    assert [r.time.total_s for r in fitting] == sorted(r.time.total_s for r in fitting)
    assert answer.reports[: len(fitting)] == tuple(fitting)  # those that fit come first


def test_report_is_the_estimators_document() -> None:
    gpu = find_gpu("h100", bundled_gpus())
    device = device_for(gpu, "fp32")
    work = StencilWork(nx=512, ny=512, nz=512, time_steps=10, gpus=2, dtype="fp64")
    assert jsonable(gpu_report(gpu, work, device)) == stencil_report(gpu, work, device)


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="cannot cut"):
        stencil(StencilRequest(grid=(4, 4, 4), gpus=8))
    with pytest.raises(ValueError, match="unknown GPU"):
        stencil(StencilRequest(gpu="h1000"))


def test_json_schema() -> None:
    schema = json_schema(StencilAnswer)
    assert schema["required"] == ["schema_version"]  # either the report's keys or rows
    assert {"rows", "gpu", "memory", "fit"} <= set(schema["properties"])
