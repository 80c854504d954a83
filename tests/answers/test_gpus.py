"""``gpus`` and ``gpu``, as ``suanli gpus --json`` and ``suanli gpu NAME --json``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.gpus import (
    GpuAnswer,
    GpuListAnswer,
    GpuListRequest,
    GpuRequest,
    gpu_detail,
    gpu_list,
)
from suanli.cli.gpus import gpu_cmd, gpus_cmd
from suanli.units import GiB


def cli_json(command: Any, *args: str) -> Any:
    result = CliRunner().invoke(command, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cli_list_json_equals_the_answer() -> None:
    args = ("--vendor", "nvidia", "--min-memory", "40", "--sort", "memory", "--ascending")
    answer = gpu_list(
        GpuListRequest(vendors=("nvidia",), min_memory=40, sort="memory", ascending=True)
    )
    doc = cli_json(gpus_cmd, *args)
    assert doc == answer.to_json()
    assert list(doc) == ["schema_version", "gpus", "sort", "ascending"]
    assert doc["sort"] == "memory" and doc["ascending"] is True
    assert [g["id"] for g in doc["gpus"]] == [g.id for g in answer.devices]


def test_filters_and_order() -> None:
    answer = gpu_list(GpuListRequest(min_memory=100, sort="memory"))
    memory = [g["memory_bytes"] for g in answer.gpus]
    assert memory and all(m >= 100 * GiB for m in memory)
    assert memory == sorted(memory, reverse=True)
    amd = gpu_list(GpuListRequest(vendors=("amd",)))
    assert amd.gpus and all(g["vendor"] == "amd" for g in amd.gpus)


def test_cli_detail_json_equals_the_answer() -> None:
    doc = cli_json(gpu_cmd, "H100 SXM")
    answer = gpu_detail(GpuRequest("H100 SXM"))
    assert doc == answer.to_json()
    assert list(doc)[:2] == ["schema_version", "id"] and doc["schema_version"] == SCHEMA_VERSION
    # NVIDIA's datasheet: 80 GB of HBM3, which the catalog stores as 80 GiB.
    assert answer.id == "h100-sxm-80gb" and answer.memory_bytes == 80 * GiB
    assert doc["sources"] and doc["aliases"]


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown GPU"):
        gpu_detail(GpuRequest("H1000"))
    with pytest.raises(ValueError, match="cannot sort by"):
        gpu_list(GpuListRequest(sort="speed"))


def test_json_schemas() -> None:
    assert "gpus" in json_schema(GpuListAnswer)["properties"]
    assert "memory_bytes" in json_schema(GpuAnswer)["required"]
