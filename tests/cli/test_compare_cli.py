"""``suanli compare`` and ``--gpu local-cpu``: the CPU on the same roofline as the GPUs."""

from __future__ import annotations

import json

import pytest

from .test_cli import run

pytest.importorskip("torch")


def test_local_cpu_is_measured_and_usable() -> None:
    from suanli.live.localcpu import is_local_cpu, local_cpu

    cpu = local_cpu()
    assert cpu.form_factor == "cpu" and cpu.memory_bytes > 2**30
    assert (cpu.peak_flops("fp32") or 0) > 1e8
    assert cpu.memory_bandwidth_bytes_per_s > 1e8
    assert is_local_cpu("Local CPU") and not is_local_cpu("h100")


def test_compare_infer_cpu_against_gpus() -> None:
    out = run(
        "compare",
        "qwen2.5-0.5b",
        "--task",
        "infer",
        "--devices",
        "local-cpu,h100",
        "--prompt",
        "128",
        "--output",
        "16",
        "--dispatch",
        "engine",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    rows = {r["device"]: r for r in json.loads(out.stdout)["rows"]}
    cpu, gpu = rows["local-cpu"], rows["h100-sxm-80gb"]
    # The CPU's bandwidth is measured on this machine (it varies with the host and its load);
    # a 0.5B model's decode on an H100 is launch-bound (~460 tokens/s), so only a clear margin.
    # (An engine's launches: under transformers' Python dispatch both are host-bound.)
    assert gpu["tokens_per_s"] > 3 * cpu["tokens_per_s"]
    assert cpu["reason"] == "" and "GB/s" in gpu["reason"]
    assert gpu["speedup_vs_slowest"] == pytest.approx(gpu["tokens_per_s"] / cpu["tokens_per_s"])


def test_compare_training_and_bad_input() -> None:
    out = run(
        "compare",
        "qwen2.5-0.5b",
        "--task",
        "full",
        "--devices",
        "rtx4090,h100",
        "--batch",
        "1",
        "--seq",
        "512",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["rows"]) == 2
    bad = run("compare", "qwen2.5-0.5b", "--devices", "h100")
    assert bad.returncode == 2 and "at least two" in bad.stderr


def test_compare_shows_each_devices_band_or_that_it_has_none() -> None:
    """Each device's likely range (or the unvalidated sentence) under the table, as --json
    carries it, within 80 columns (issue 41)."""
    from rich.cells import cell_len

    args = ("compare", "qwen2.5-0.5b", "--task", "infer", "--devices", "epyc-9654-cpu,4090,h100")
    out = run(*args, env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    table_end = out.stdout.index("┘\n") + 2
    bands = out.stdout[table_end:].split(" faster than ")[0].splitlines()[:-1]
    assert bands and max(cell_len(line) for line in bands) <= 80
    text = " ".join(out.stdout.split())
    for row in json.loads(run(*args, "--json").stdout)["rows"]:
        if row["band"] is None:
            assert row["unvalidated"] and row["unvalidated"] in text
            assert row["device"] in text.split(row["unvalidated"])[0]
        else:
            low, high = row["band"]["tokens_per_s"]
            assert f"likely for {row['device']} (published runs): {low:,.0f}-{high:,.0f}" in text
    assert "epyc-9654-cpu" in text.split("no error band")[0]
