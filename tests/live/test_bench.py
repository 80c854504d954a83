"""``suanli bench`` on this machine's CPU: quick-sized problems, gloo all-reduce on 2 processes,
the calibration file round trip, and the grading rules on synthetic numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for, read_calibration
from suanli.live import bench
from suanli.live.bench import (
    AllReduceResult,
    BandwidthResult,
    BenchResult,
    Health,
    MatmulResult,
    ShapeResult,
    grade_figure,
)

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def cpu_result() -> BenchResult:
    return bench.run_bench(quick=True, device="cpu", processes=2)


def test_module_imports_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import suanli.live.bench, suanli.live.bench_worker, suanli.cli.bench\n"
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cpu_matmul_is_positive_and_plausible(cpu_result: BenchResult) -> None:
    fp32 = next(m for m in cpu_result.matmul if m.dtype == "fp32")
    # 2 cores: well above 1 GFLOP/s, far below 100 TFLOP/s.
    assert 1e9 < fp32.best_flops_per_s < 1e14
    assert fp32.shapes and fp32.best_shape is not None
    best = max(fp32.shapes, key=lambda s: s.flops_per_s)
    assert (best.m, best.n, best.k) == fp32.best_shape
    for s in fp32.shapes:
        assert s.flops_per_s == pytest.approx(2 * s.m * s.n * s.k / s.median_s)
        assert s.iterations >= 3
    assert {m.dtype for m in cpu_result.matmul} == {"fp32", "bf16", "fp16"}
    for m in cpu_result.matmul:
        assert m.best_flops_per_s > 0
        assert m.grade.grade == "info" and "CPU" in m.grade.cause


def test_cpu_memory_bandwidth_positive(cpu_result: BenchResult) -> None:
    mem = cpu_result.memory
    assert mem.bytes_per_s is not None and 1e8 < mem.bytes_per_s < 1e13
    assert mem.bytes >= 2 * 128 * 2**20  # read + write of a tensor beyond the cache
    assert mem.grade.grade == "info"
    (transfer,) = cpu_result.host_transfer
    assert transfer.bytes_per_s is None and "not available" in transfer.note


def test_gloo_allreduce_two_processes(cpu_result: BenchResult) -> None:
    ar = cpu_result.allreduce
    assert ar.backend == "gloo" and ar.processes == 2, ar.note
    assert [s.bytes for s in ar.sizes] == list(bench.CPU_QUICK_SIZES)
    for s in ar.sizes:
        assert s.time_s > 0 and s.iterations >= 3
        assert s.algbw_bytes_per_s == pytest.approx(s.bytes / s.time_s)
        assert s.busbw_bytes_per_s == pytest.approx(s.algbw_bytes_per_s * 2 * (2 - 1) / 2)
    assert ar.best_busbw_bytes_per_s == max(s.busbw_bytes_per_s for s in ar.sizes)


def test_result_is_json_ready(cpu_result: BenchResult) -> None:
    doc = json.loads(json.dumps(cpu_result.as_dict()))
    assert doc["device"] == "cpu" and doc["gpu_id"].startswith("cpu-")
    assert doc["matmul"][0]["grade"]["grade"] == "info"
    assert doc["allreduce"]["sizes"][0]["busbw_bytes_per_s"] > 0


def test_calibration_reads_back(cpu_result: BenchResult, tmp_path: Path) -> None:
    path = bench.write_calibration(cpu_result, tmp_path / "sub" / "cal.toml")
    rows = read_calibration(path)
    gpu_id = cpu_result.gpu_id
    assert {p for (g, p) in rows if g == gpu_id} == {"fp32", "bf16", "fp16"}
    fp32 = rows[(gpu_id, "fp32")]
    best = next(m for m in cpu_result.matmul if m.dtype == "fp32").best_flops_per_s
    assert fp32["matmul_flops"] == pytest.approx(best)
    assert fp32["memory_bandwidth_bytes_per_s"] == pytest.approx(cpu_result.memory.bytes_per_s)


def test_calibration_feeds_device_for(cpu_result: BenchResult, tmp_path: Path) -> None:
    """A profile of an H100 (synthetic numbers) changes the speed model's ceilings."""
    h100 = find_gpu("h100-sxm-80gb", bundled_gpus())
    bf16 = MatmulResult("bf16", "bf16", 7.0e14, (8192, 8192, 8192), ())
    fake = replace(
        cpu_result,
        gpu_id=h100.id,
        matmul=(bf16,),
        memory=BandwidthResult("device memory (copy)", 3.0e12, 2**31, 1e-3, 10),
    )
    cal = read_calibration(bench.write_calibration(fake, tmp_path / "h100.toml"))
    device = device_for(h100, "bf16", calibration=cal)
    assert device.matmul_efficiency == pytest.approx(7.0e14 / h100.peak_flops("bf16"))
    assert device.memory_efficiency == pytest.approx(3.0e12 / h100.memory_bandwidth_bytes_per_s)
    assert device.efficiency_source == "calibration file"


def test_nothing_measured_is_not_a_calibration(cpu_result: BenchResult) -> None:
    empty = replace(cpu_result, matmul=(MatmulResult("fp32", "fp32", 0.0, None, ()),))
    with pytest.raises(ValueError, match="nothing to calibrate"):
        bench.calibration_toml(empty)


def test_local_calibration_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert bench.local_calibration_path("h100-sxm-80gb") == (
        tmp_path / "suanli" / "calibration" / "h100-sxm-80gb.toml"
    )
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert bench.local_calibration_path("cpu-x") == (
        Path.home() / ".config" / "suanli" / "calibration" / "cpu-x.toml"
    )


# ---------------------------------------------------------------------- grading, synthetic


def test_busbw_nccl_tests_convention() -> None:
    assert bench.busbw(100.0, 2) == pytest.approx(100.0)
    assert bench.busbw(100.0, 8) == pytest.approx(175.0)
    assert bench.busbw(100.0, 1) == 0.0


def test_half_the_ceiling_fails_with_a_cause() -> None:
    g = grade_figure(0.5 * 0.8 * 1e15, 1e15, 0.8, "matmul")
    assert g.grade == "fail"
    assert g.percent_of_ceiling == pytest.approx(50.0)
    assert g.percent_of_datasheet == pytest.approx(40.0)
    assert g.ceiling == pytest.approx(0.8e15)
    assert "throttling" in g.cause and "busy GPU" in g.cause


def test_grade_bands() -> None:
    assert grade_figure(0.95, 1.0, 1.0, "memory").grade == "pass"
    assert grade_figure(0.90, 1.0, 1.0, "memory").grade == "pass"
    assert grade_figure(0.80, 1.0, 1.0, "memory").grade == "warn"
    assert grade_figure(0.74, 1.0, 1.0, "memory").grade == "fail"
    above = grade_figure(1.2, 1.0, 0.8, "matmul")
    assert above.grade == "pass" and "boost" in above.cause
    info = grade_figure(1e11, None, None, "matmul", no_datasheet="CPU: no datasheet")
    assert info.grade == "info" and info.cause == "CPU: no datasheet"
    assert info.percent_of_ceiling is None


def test_nvml_causes_are_specific() -> None:
    hot = Health(throttle_reasons=("hardware thermal slowdown",), other_processes=2)
    g = grade_figure(0.5, 1.0, 1.0, "matmul", health=hot)
    assert g.cause.startswith("throttling (hardware thermal slowdown)")
    assert "busy GPU: 2 other process(es)" in g.cause
    link = Health(pcie_gen=3, pcie_width=8, max_pcie_gen=5, max_pcie_width=16)
    h2d = grade_figure(10e9, 63e9, 0.85, "host", health=link)
    assert h2d.grade == "fail"
    assert "slow link: PCIe Gen3 x8 (the GPU supports Gen5 x16)" in h2d.cause
    nvlink = grade_figure(100e9, 450e9, 0.8, "allreduce", small_problem=True)
    assert "slow link" in nvlink.cause and "too small" in nvlink.cause


def test_grading_against_the_catalog() -> None:
    """An H100 matmul at half its measured ceiling fails; at the ceiling it passes."""
    from suanli.catalog.network import ceiling_for

    h100 = find_gpu("h100-sxm-80gb", bundled_gpus())
    peak = h100.peak_flops("bf16")
    ceiling = ceiling_for(h100, "bf16").matmul_fraction * peak
    half = MatmulResult("bf16", "bf16", 0.5 * ceiling, (8192, 8192, 8192), ())
    g = bench.grade_matmul(half, h100, Health(), quick=False, why="")
    assert g.grade == "fail" and g.percent_of_ceiling == pytest.approx(50.0)
    assert g.datasheet == peak and "measured" in g.ceiling_source
    full = replace(half, best_flops_per_s=ceiling)
    assert bench.grade_matmul(full, h100, Health(), quick=False, why="").grade == "pass"

    mem = BandwidthResult("device memory (copy)", 0.6 * h100.memory_bandwidth_bytes_per_s)
    assert bench.grade_memory(mem, h100, Health(), why="").grade == "fail"
    pinned = BandwidthResult("host->device pinned", 55e9)
    assert bench.grade_host(pinned, h100, Health(), why="").grade == "pass"  # Gen5 x16
    pageable = BandwidthResult("host->device pageable", 10e9)
    assert bench.grade_host(pageable, h100, Health(), why="").grade == "info"
    rows = (bench.AllReduceSize(2**30, 10, 1e-3, 2**30 / 1e-3, 360e9),)
    ar = AllReduceResult("nccl", 8, rows, 360e9)
    assert bench.grade_allreduce(ar, h100, Health(), quick=False, why="").grade in (
        "pass",
        "warn",
    )
    slow = replace(ar, best_busbw_bytes_per_s=40e9)
    graded = bench.grade_allreduce(slow, h100, Health(), quick=False, why="")
    assert graded.grade == "fail" and "slow link" in graded.cause


def test_busy_cpu_note() -> None:
    assert bench.busy_cpu_note(Health(cpu_busy_percent=5.0, cpu_count=2)) == ""
    note = bench.busy_cpu_note(Health(cpu_busy_percent=80.0, cpu_count=2))
    assert note.startswith("busy CPU: other processes used 80% of 2 cores")
    sample = bench.cpu_health(0.05)
    assert sample.cpu_count and sample.cpu_count >= 1
    if sample.cpu_busy_percent is not None:
        assert 0 <= sample.cpu_busy_percent <= 100


def test_parse_sizes() -> None:
    assert bench.parse_sizes("64K,1M, 1G") == (65536, 2**20, 2**30)
    assert bench.parse_sizes("4096,4096") == (4096,)
    with pytest.raises(ValueError, match="bad message size"):
        bench.parse_sizes("lots")


def test_bad_device_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown device"):
        bench.resolve_device("tpu")


def test_allreduce_under_torchrun() -> None:
    """The worker also runs under torchrun, as a user would launch it by hand."""
    ar = bench.bench_allreduce(2, "cpu", sizes=(2**20,), use_torchrun=True, timeout_s=120)
    assert ar.note == "" and len(ar.sizes) == 1
    assert ar.sizes[0].busbw_bytes_per_s == pytest.approx(ar.sizes[0].algbw_bytes_per_s)


def test_allreduce_one_process_is_skipped() -> None:
    ar = bench.bench_allreduce(1, "cpu")
    assert ar.sizes == () and ar.note.startswith("skipped")


# ---------------------------------------------------------------------- the command


def test_cli_json_and_calibration(tmp_path: Path) -> None:
    from suanli.cli.bench import bench_cmd

    out_file = tmp_path / "cal.toml"
    result = CliRunner().invoke(
        bench_cmd,
        ["--quick", "--device", "cpu", "--processes", "1", "--json", "--output", str(out_file)],
        env={"XDG_CONFIG_HOME": str(tmp_path / "config")},
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["calibration_path"] == str(out_file)
    assert doc["allreduce"]["note"].startswith("skipped")
    rows = read_calibration(out_file)
    assert (doc["gpu_id"], "fp32") in rows
    assert not (tmp_path / "config").exists()


def test_cli_table_saves_to_the_profile(tmp_path: Path) -> None:
    from suanli.cli.bench import bench_cmd

    result = CliRunner().invoke(
        bench_cmd,
        ["--quick", "--device", "cpu", "--processes", "1"],
        env={"XDG_CONFIG_HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "matmul fp32" in result.stdout and "host memory" in result.stdout
    assert "info" in result.stdout
    saved = list((tmp_path / "suanli" / "calibration").glob("cpu-*.toml"))
    assert len(saved) == 1 and str(saved[0]) in result.stdout
    read_calibration(saved[0])


def test_cli_cuda_without_a_gpu_is_a_value_error() -> None:
    import torch

    from suanli.cli.bench import bench_cmd

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = CliRunner().invoke(bench_cmd, ["--device", "cuda", "--no-save"])
    assert isinstance(result.exception, ValueError)
    assert "CUDA is not available" in str(result.exception)


def test_cli_bad_sizes_and_missing_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.cli import bench as cli_bench
    from suanli.cli.main import MissingExtra

    bad = CliRunner().invoke(cli_bench.bench_cmd, ["--sizes", "lots", "--no-save"])
    assert isinstance(bad.exception, ValueError)
    monkeypatch.setattr(cli_bench, "_torch_available", lambda: False)
    missing = CliRunner().invoke(cli_bench.bench_cmd, ["--quick"])
    assert isinstance(missing.exception, MissingExtra)
    assert "pip install 'suanli[torch]'" in str(missing.exception)


def test_shape_result_in_matmul_result_is_frozen() -> None:
    s = ShapeResult(1, 1, 1, 1.0, 1.0, 1)
    with pytest.raises(AttributeError):
        s.m = 2  # type: ignore[misc]


def _fake_h100_result() -> BenchResult:
    """A graded H100 run built from synthetic numbers (no GPU needed)."""
    h100 = find_gpu("h100-sxm-80gb", bundled_gpus())
    health = Health(throttle_reasons=("software power cap",))
    bf16 = MatmulResult(
        "bf16",
        "bf16",
        4.0e14,
        (8192, 8192, 8192),
        (ShapeResult(8192, 8192, 8192, 4.0e14, 2.7e-3, 50),),
    )
    memory = BandwidthResult("device memory (copy)", 2.9e12, 2**30, 1e-3, 50)
    pinned = BandwidthResult("host->device pinned", 54e9, 2**28, 5e-3, 5)
    rows = (bench.AllReduceSize(2**28, 20, 1e-3, 2**28 / 1e-3, 360e9),)
    ar = AllReduceResult("nccl", 8, rows, 360e9)
    return BenchResult(
        device="cuda:0",
        device_name="NVIDIA H100 80GB HBM3",
        gpu_id=h100.id,
        in_catalog=True,
        quick=False,
        torch_version="2.13.0",
        date="2026-11-30T00:00:00+00:00",
        matmul=(replace(bf16, grade=bench.grade_matmul(bf16, h100, health, False, "")),),
        memory=replace(memory, grade=bench.grade_memory(memory, h100, health, "")),
        host_transfer=(replace(pinned, grade=bench.grade_host(pinned, h100, health, "")),),
        allreduce=replace(ar, grade=bench.grade_allreduce(ar, h100, health, False, "")),
        health=health,
    )


def test_cli_table_for_a_graded_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from suanli.cli.bench import bench_cmd

    fake = _fake_h100_result()
    monkeypatch.setattr(bench, "run_bench", lambda **kwargs: fake)
    result = CliRunner().invoke(
        bench_cmd,
        ["--output", str(tmp_path / "h100.toml")],
        env={"COLUMNS": "250"},
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "fail" in out and "throttling (software power cap)" in out  # bf16 at ~50% of ceiling
    assert "of ceiling" in out and "989.4 TFLOP/s" in out
    assert "use it: suanli perf MODEL --gpu h100-sxm-80gb" in out
    cal = read_calibration(tmp_path / "h100.toml")
    assert cal[("h100-sxm-80gb", "bf16")]["host_to_device_bytes_per_s"] == pytest.approx(54e9)
