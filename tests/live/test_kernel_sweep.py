"""``benchmarks/kernel_sweep.py`` on this machine's CPU (``--device cpu --quick``): every group
runs, the files parse, and the rows are in the formats of the catalog's data files."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from suanli.catalog.attention import parse_attention
from suanli.catalog.decode_attention import parse_decode_attention
from suanli.catalog.toml_data import read_data

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernel_sweep.py"
#: A catalog id to put in place of "cpu" so that the catalog's own validators read the rows.
STAND_IN = "h100-sxm-80gb"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    cmd = [sys.executable, str(SCRIPT), "--out", str(out), "--device", "cpu", "--quick"]
    cmd += ["--budget-s", "25", "--peak-bw", "1e11"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gemm: start" in done.stderr  # a progress line per group
    return out


def _toml(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _stand_in(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "gpu_id": STAND_IN} for r in rows]


def test_writes_every_file(sweep: Path) -> None:
    names = {p.name for p in sweep.iterdir()}
    expected = {"kernels-cpu.toml", "attention-cpu.toml", "decode-cpu.toml"}
    assert expected | {"sweep.json", "sweep.md"} <= names
    assert not [n for n in names if n.endswith(".tmp")]
    assert "# Kernel sweep" in (sweep / "sweep.md").read_text(encoding="utf-8")


def test_gemm_row_and_fit(sweep: Path) -> None:
    rows = _toml(sweep / "kernels-cpu.toml")["gemm"]
    assert len(rows) == 1
    row = rows[0]
    bundled = read_data("kernels.toml")["gemm"][0]
    # The same fields as kernels.toml's rows, and the precision it was fitted at.
    # (The serving engines' element-wise shares are not swept: the card takes its generation's.)
    assert set(row) == (set(bundled) - {"elementwise"}) | {"precision"}
    assert row["precision"] in ("bf16", "fp16")
    assert row["gpu_id"] == "cpu"
    assert 0 < row["compute_efficiency"] <= 1
    assert 0 < row["memory_efficiency"] <= 1
    assert row["launch_s"] > 0 and row["small_op_s"] > 0
    assert math.isfinite(row["median_error"]) and row["median_error"] >= 0
    assert row["p90_error"] >= row["median_error"]
    assert "kernel_sweep.py" in row["source"]

    raw = json.loads((sweep / "sweep.json").read_text(encoding="utf-8"))
    gemms = raw["gemm"]
    assert gemms and all(g["seconds"] > 0 for g in gemms)
    assert {g["kind"] for g in gemms} >= {"qkv", "o", "gate_up", "down"}
    assert any(g["lora"] for g in gemms)
    assert {g["dtype"] for g in gemms} == {"bf16", "fp16"}  # fp8 needs CUDA: skipped cleanly
    assert any(s["what"] == "fp8" for s in raw["skipped"])
    for fit in raw["fits"].values():
        assert 0 < fit["compute_efficiency"] <= 1 and 0 < fit["memory_efficiency"] <= 1
        assert math.isfinite(fit["median_error"])
    assert raw["bandwidth"]["bytes_per_s"] > 0
    assert {r["op"] for r in raw["small_ops"]} == {"rmsnorm", "silu_mul", "add", "rotary"}
    assert raw["meta"]["device"] == "cpu"


def test_attention_rows_in_catalog_format(sweep: Path) -> None:
    rows = _toml(sweep / "attention-cpu.toml")["attention"]
    assert {r["pass"] for r in rows} == {"forward", "backward"}
    assert {r["causal"] for r in rows} == {True, False}
    points = parse_attention({"attention": _stand_in(rows)}, "attention-cpu.toml")
    assert all(p.tflops > 0 for p in points)


def test_decode_rows_in_catalog_format(sweep: Path) -> None:
    rows = _toml(sweep / "decode-cpu.toml")["decode"]
    points = parse_decode_attention({"decode": _stand_in(rows)}, "decode-cpu.toml")
    assert len(points) == 4  # 2 batches x 2 contexts
    assert all(0 < p.bandwidth_utilization <= 1 for p in points)
