"""The GEMM and all-reduce models against Azure's published microbenchmarks of four 8-GPU VMs
(tests/fixtures/azure-kernel-benchmarks.csv; benchmarks/accuracy_kernels.py prints the table,
docs/accuracy-kernels.md keeps it). These are kernel-level measurements the models were not
fitted to (except the points the benchmark's docstring names), so the thresholds are what the
docs claim for each range, and a regression in either model fails here."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from ..scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "azure-kernel-benchmarks.csv"


ak = load_script("benchmarks/accuracy_kernels.py")
ALL_POINTS = ak.load_points()
#: Azure's VMs (ND A100 v4, ND H100 v5, ND H200 v5, ND MI300X v5).
POINTS = [p for p in ALL_POINTS if p.system.startswith("ND ")]
#: AMD's ROCm-blog run of an 8x MI300X board with RCCL 2.22.3.
ROCM_BLOG = [p for p in ALL_POINTS if "RCCL 2.22.3" in p.system]
NVIDIA = ("a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb")


def test_fixture_is_sourced_and_complete() -> None:
    with FIXTURE.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        assert "AI-benchmarking-guide" in row["source"] and "file commit" in row["source"]
    for gpu in (*NVIDIA, "mi300x-192gb"):
        reduces = [r for r in rows if r["gpu"] == gpu and r["kind"] == "all_reduce"]
        assert [int(r["bytes"]) for r in reduces] == [2**i for i in range(10, 34)]
        assert len([r for r in rows if r["gpu"] == gpu and r["kind"] == "gemm"]) >= 8


@pytest.mark.parametrize("gpu", NVIDIA)
def test_large_gemms_within_fifteen_percent_on_nvidia(gpu: str) -> None:
    """GEMMs of 8 GFLOP and more: the kernel model, fitted on Vidur's fp16 times of other shapes,
    holds within 15% on cuBLASLt fp16 (A100) and fp8 (H100, H200)."""
    large = [p for p in POINTS if p.gpu == gpu and p.kind == "gemm" and p.size >= 8e9]
    assert len(large) >= 6
    for p in large:
        assert abs(p.error) < 0.15, (p.label, p.error)
    assert statistics.median(abs(p.error) for p in large) < 0.08


def test_mi300x_gemms_within_fifteen_percent() -> None:
    """hipBLASLt fp8 on ND MI300X v5 as Azure last published it (ROCm 6.8.5, 2025-03): every
    shape within 15%, the small ones included. (The February run, ROCm 6.8.1, took about 40 us
    for every GEMM under 20 GFLOP: 53 TFLOP/s at 1024^3 against 278 a month later.)"""
    gemms = [p for p in POINTS if p.gpu == "mi300x-192gb" and p.kind == "gemm"]
    assert len(gemms) == 9
    for p in gemms:
        assert abs(p.error) < 0.15, (p.label, p.error)
    assert statistics.median(abs(p.error) for p in gemms) < 0.06


@pytest.mark.parametrize("gpu", (*NVIDIA, "mi300x-192gb"))
def test_large_all_reduces_within_ten_percent(gpu: str) -> None:
    """From 256 MiB the bus bandwidth is the link's efficiency (ring, or NVLS on H100/H200)."""
    big = [p for p in POINTS if p.gpu == gpu and p.kind == "all_reduce" and p.size >= 2**28]
    assert len(big) == 6
    for p in big:
        assert abs(p.error) < 0.10, (p.label, p.error)


@pytest.mark.parametrize("gpu", (*NVIDIA, "mi300x-192gb"))
def test_small_all_reduces_within_thirty_percent(gpu: str) -> None:
    """1-32 KiB: the base and per-step latencies (fitted on 1 KiB of three of these VMs and on
    Vidur's medians)."""
    small = [p for p in POINTS if p.gpu == gpu and p.kind == "all_reduce" and p.size <= 2**15]
    assert len(small) == 6
    for p in small:
        assert abs(p.error) < 0.30, (p.label, p.error)


def test_mid_size_all_reduces() -> None:
    """64 KiB-32 MiB is where NCCL switches protocols and channel counts. With NVLink 3's two
    protocols (fitted on Vidur's curve) the A100 is within 21% (one protocol: up to +61%), the
    H200 (NCCL 2.20.5) within 7%; the H100 (NCCL 2.18.5, 64 KiB-1 MiB) and the MI300X (RCCL,
    256 KiB-4 MiB) stay optimistic by more than 25%: documented, not hidden."""

    def mid(gpu: str) -> list[float]:
        return [
            p.error
            for p in POINTS
            if p.gpu == gpu and p.kind == "all_reduce" and 2**16 <= p.size <= 2**25
        ]

    assert all(abs(e) < 0.21 for e in mid("a100-sxm-80gb"))
    assert all(abs(e) < 0.07 for e in mid("h200-sxm-141gb"))
    for gpu in ("h100-sxm-80gb", "mi300x-192gb"):
        assert max(mid(gpu)) > 0.25


def test_two_rccl_builds_bracket_the_mi300x_mid_range() -> None:
    """The ROCm blog's RCCL 2.22.3 curve (1 KiB-16 GiB) is the second MI300X source: below
    256 KiB it is more than three times as fast as the model (and as Azure's build, which the
    model's latency comes from); from 16 MiB both builds agree with the model within 10%. In
    between the model sits between the two builds: faster than Azure's, slower than AMD's."""
    assert len(ROCM_BLOG) == 25
    assert all(p.error < -0.6 for p in ROCM_BLOG if p.size <= 2**17)
    assert all(abs(p.error) < 0.10 for p in ROCM_BLOG if p.size >= 2**24)
    azure = {p.size: p for p in POINTS if p.gpu == "mi300x-192gb" and p.kind == "all_reduce"}
    for p in ROCM_BLOG:
        if 2**18 <= p.size <= 2**22:
            assert p.error < 0 < azure[p.size].error, p.label


def test_report_has_every_point_and_a_summary() -> None:
    text = ak.report(ALL_POINTS)
    assert text.count("\n| ") >= len(ALL_POINTS)
    assert "RCCL 2.22.3" in text
    assert "### Summary" in text
