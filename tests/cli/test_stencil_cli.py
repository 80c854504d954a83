"""``suanli stencil`` as a user runs it."""

from __future__ import annotations

import json

from .test_cli import run


def test_stencil_one_gpu_json() -> None:
    out = run(
        "stencil",
        "--grid",
        "1024",
        "1024",
        "1024",
        "--gpu",
        "a100-sxm-80gb",
        "--gpus",
        "4",
        "--steps",
        "10000",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["bound"] == "memory"
    assert doc["memory"]["fits"] is True
    # 72 bytes per cell (6 fields + 12 coefficients, fp32) over a quarter of 1024^3 cells.
    assert (
        doc["memory"]["breakdown_bytes"]["fields"]
        + doc["memory"]["breakdown_bytes"]["coefficients"]
        == 72 * 1024**3 / 4
    )


def test_stencil_ranks_gpus_and_reports_gpus_needed() -> None:
    out = run("stencil", "--grid", "2048", "2048", "2048", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    fitting = [r for r in rows if r["memory"]["fits"]]
    times = [r["time"]["total_s"] for r in fitting]
    assert times == sorted(times)
    assert all(
        r["fit"]["gpus_needed"] and r["fit"]["gpus_needed"] > 1
        for r in rows
        if not r["memory"]["fits"]
    )


def test_stencil_bad_input() -> None:
    out = run("stencil", "--grid", "10", "10")
    assert out.returncode == 2 and "Traceback" not in out.stderr
