"""The collective models against NVIDIA's aiconfigurator nccl-tests tables (2, 4 and 8 GPUs of
one node, NCCL 2.27-2.29; tests/fixtures/nccl-aiconfigurator.csv, out of sample: the links were
fitted on Vidur's, Azure's and stas00's curves with older NCCL builds)."""

from __future__ import annotations

import statistics

import pytest

from ..scripts import load_script

ak = load_script("benchmarks/accuracy_kernels.py")
ERRORS = ak.aic_nccl_errors()
NVSWITCH = ("a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-sxm-180gb")


def _median(gpu: str, collective: str, ranks: int, low: int, high: int) -> float:
    key = next(k for k in ERRORS if (k[0], k[2], k[3]) == (gpu, collective, ranks))
    return statistics.median(e for b, e in ERRORS[key] if low < b <= high)


def test_the_fixture_covers_three_collectives_and_three_group_sizes() -> None:
    assert {(k[0], k[2], k[3]) for k in ERRORS} == {
        (g, c, n)
        for g in (*NVSWITCH, "l40s-48gb")
        for c in ("all_reduce", "all_gather", "reduce_scatter")
        for n in (2, 4, 8)
    }
    assert all(len(v) >= 20 for v in ERRORS.values())


@pytest.mark.parametrize("gpu", NVSWITCH)
def test_large_all_reduces_of_eight_gpus_within_fifteen_percent(gpu: str) -> None:
    assert abs(_median(gpu, "all_reduce", 8, 2**25, 2**40)) < 0.15


@pytest.mark.parametrize("gpu", ["a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb"])
def test_small_messages_are_slower_in_the_model_than_in_current_nccl(gpu: str) -> None:
    # The known gap (docs/accuracy.md): the NVLink latencies were fitted on NCCL 2.18-2.20 and
    # torch-eager times (25-45 us for a 1 KiB all-reduce of 8 GPUs); NCCL 2.27-2.29 takes 15-22.
    for ranks in (2, 4, 8):
        assert -0.8 < _median(gpu, "all_reduce", ranks, 0, 2**15) < -0.3


def test_the_l40s_host_runs_its_larger_groups_through_host_memory() -> None:
    # Two L40S on one PCIe switch reach the PCIe model within a quarter; 4 and 8 of the same host
    # reach 5.1 and 1.5 GB/s of bus bandwidth (host-staged, across sockets), 3-16x below it. The
    # model keeps peer-to-peer PCIe for data-centre cards (other hosts reach it: Vidur's 4 A100
    # PCIe, 8 RTX PRO 6000), so it is that much too fast on such a host.
    assert abs(_median("l40s-48gb", "all_reduce", 2, 2**25, 2**40)) < 0.25
    assert _median("l40s-48gb", "all_reduce", 4, 2**25, 2**40) > 2
    assert _median("l40s-48gb", "all_reduce", 8, 2**25, 2**40) > 10
