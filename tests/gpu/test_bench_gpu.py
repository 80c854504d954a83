"""On a CUDA host: the quick ``suanli bench`` measures every figure and grades it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for, read_calibration
from suanli.live import bench

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_result() -> bench.BenchResult:
    torch = pytest.importorskip("torch")
    processes = min(2, torch.cuda.device_count())
    return bench.run_bench(quick=True, device="cuda", processes=processes)


def test_quick_bench_on_cuda(cuda_result: bench.BenchResult) -> None:
    r = cuda_result
    assert r.device.startswith("cuda")
    dtypes = {m.dtype for m in r.matmul}
    assert {"fp32", "tf32", "bf16", "fp16"} <= dtypes
    by = {m.dtype: m for m in r.matmul}
    assert by["bf16"].best_flops_per_s > 1e12  # any tensor-core GPU of the last decade
    assert by["fp32"].best_flops_per_s > 1e11
    # TF32 and bf16 use tensor cores: faster than plain fp32 on every GPU since Ampere.
    assert by["bf16"].best_flops_per_s > by["fp32"].best_flops_per_s
    assert r.memory.bytes_per_s is not None and r.memory.bytes_per_s > 1e11
    names = {t.name for t in r.host_transfer}
    assert names == {
        "host->device pinned",
        "device->host pinned",
        "host->device pageable",
        "device->host pageable",
    }
    assert all(t.bytes_per_s and t.bytes_per_s > 1e8 for t in r.host_transfer)
    json.dumps(r.as_dict())


def test_grades_on_a_catalog_gpu(cuda_result: bench.BenchResult) -> None:
    if not cuda_result.in_catalog:
        pytest.skip(f"{cuda_result.device_name} is not in the catalog")
    for m in cuda_result.matmul:
        assert m.grade.grade in ("pass", "warn", "fail", "info")
        if m.grade.grade != "info":
            assert m.grade.percent_of_datasheet and m.grade.percent_of_ceiling
    assert cuda_result.memory.grade.grade in ("pass", "warn", "fail")
    pinned = next(t for t in cuda_result.host_transfer if t.name == "host->device pinned")
    assert pinned.grade.grade in ("pass", "warn", "fail")


def test_allreduce_on_two_gpus(cuda_result: bench.BenchResult) -> None:
    ar = cuda_result.allreduce
    if ar.processes < 2:
        assert ar.note.startswith("skipped")
        pytest.skip("needs two GPUs")
    assert ar.backend == "nccl" and ar.sizes, ar.note
    for s in ar.sizes:
        assert s.busbw_bytes_per_s == pytest.approx(s.algbw_bytes_per_s)  # n = 2


def test_calibration_from_the_gpu(cuda_result: bench.BenchResult, tmp_path: Path) -> None:
    path = bench.write_calibration(cuda_result, tmp_path / "gpu.toml")
    rows = read_calibration(path)
    assert (cuda_result.gpu_id, "bf16") in rows
    if cuda_result.in_catalog:
        gpu = find_gpu(cuda_result.gpu_id, bundled_gpus())
        device = device_for(gpu, "bf16", calibration=rows)
        assert device.efficiency_source == "calibration file"
        assert 0 < device.matmul_efficiency <= 1
