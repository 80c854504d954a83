"""NCCL's in-switch (NVLS) all-reduce on NVLink 4: fitted on one VM's nccl-tests curve (ND H200
v5), checked on another's (ND H100 v5) and on where it must not apply."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.loader import CatalogError
from suanli.catalog.network import get_link, links
from suanli.estimate.comm import Network, all_reduce_s, tp_all_reduce_s
from suanli.estimate.device import device_for
from suanli.estimate.links import link_of
from suanli.estimate.vector_comm import all_reduce

from ..catalog_patch import link_row_changed
from ..scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "azure-kernel-benchmarks.csv"
NVLINK4 = link_of(get_link("nvlink4"))


def _curve(gpu: str) -> list[tuple[int, int, float]]:
    """(ranks, bytes, seconds) of one VM's all-reduce curve (time from nccl-tests' busbw)."""
    with FIXTURE.open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "all_reduce" and r["gpu"] == gpu]
    out = []
    for r in rows:
        n, size = int(r["ranks"]), int(r["bytes"])
        out.append((n, size, 2 * (n - 1) / n * size / (float(r["measured"]) * 1e9)))
    return out


def test_catalog_fields_are_what_the_research_fit_gives() -> None:
    module = load_script("docs/research/derive_collective_fits.py")
    base, bandwidth, median = module.fit_nvls(FIXTURE)
    nvls = NVLINK4.nvls
    assert nvls is not None
    assert nvls.base_s == pytest.approx(base, rel=0.01)
    assert nvls.bytes_per_s == pytest.approx(bandwidth, rel=0.01)
    assert median < 0.02


def test_out_of_sample_h100_curve_from_64_mib() -> None:
    """ND H100 v5 (NCCL 2.18.5) was not fitted: every size from 64 MiB to 8 GiB within 6%;
    without NVLS the ring model was 11-24% slow there."""
    points = [(n, s, t) for n, s, t in _curve("h100-sxm-80gb") if s >= 64 * 2**20]
    assert len(points) == 8
    for n, size, t in points:
        assert all_reduce_s(size, n, NVLINK4) == pytest.approx(t, rel=0.06)


def test_large_all_reduce_on_eight_gpus_beats_the_ring() -> None:
    one_gib = 2**30
    ring = 2 * 7 / 8 * one_gib / NVLINK4.effective_bytes_per_s
    assert all_reduce_s(one_gib, 8, NVLINK4) < 0.85 * ring
    # nccl-tests' bus bandwidth at 1 GiB: about 470 GB/s (Azure 466-468), not the ring's 365.
    bus = 2 * 7 / 8 * one_gib / all_reduce_s(one_gib, 8, NVLINK4) / 1e9
    assert 440 < bus < 490


@pytest.mark.parametrize(
    ("link_id", "measured_bus_gb_s"),
    [("nvlink5", 838.0), ("nvlink4-h800", 215.0)],  # 8x B200 (stas00), 8x H800 (nccl#1374)
)
def test_b200_and_h800_reach_their_measured_nvls_plateau(
    link_id: str, measured_bus_gb_s: float
) -> None:
    link = link_of(get_link(link_id))
    size = 8 * 2**30
    bus = 2 * 7 / 8 * size / all_reduce_s(size, 8, link) / 1e9
    assert bus == pytest.approx(measured_bus_gb_s, rel=0.02)


def test_h800_plateau_agrees_with_the_h200_fit_scaled_by_the_link_rate() -> None:
    """The H800's measured 215 GB/s is within 3% of nvlink4's fitted NVLS bandwidth scaled by
    the two links' rates (200 / 450 GB/s): the fit carries over to a narrower NVLink 4."""
    nvlink4, h800 = get_link("nvlink4"), get_link("nvlink4-h800")
    assert nvlink4.nvls is not None and h800.nvls is not None
    scaled = (
        nvlink4.nvls.bytes_per_s
        * h800.unidirectional_bytes_per_s
        / (nvlink4.unidirectional_bytes_per_s)
    )
    assert h800.nvls.bytes_per_s == pytest.approx(scaled, rel=0.03)


def test_not_used_for_small_groups_small_messages_or_other_links() -> None:
    big = 256 * 2**20
    nvls = NVLINK4.nvls
    assert nvls is not None
    # Four GPUs or fewer: ring/tree only (NCCL's NVLS needs more ranks).
    without = replace(NVLINK4, nvls=None)
    for n in (2, 3, 4):
        assert all_reduce_s(big, n, NVLINK4) == all_reduce_s(big, n, without)
    assert all_reduce_s(big, 8, NVLINK4) < all_reduce_s(big, 8, without)
    # Small messages: NVLS's 72 us base loses to the tree.
    assert all_reduce_s(16384, 8, NVLINK4) < float(nvls.seconds(16384))
    # A100's NVSwitch has no SHARP; PCIe and the network have none either.
    for lid in ("nvlink3", "pcie5-x16", "ib-ndr"):
        assert link_of(get_link(lid)).nvls is None


def test_groups_across_nodes_use_the_network() -> None:
    net: Network = device_for(find_gpu("h100", bundled_gpus()), "bf16").network
    assert net.link_for(8).nvls is not None
    assert net.link_for(16).nvls is None
    assert net.link_for(8, 2).nvls is None  # 8 ranks spaced 2 apart span two nodes


@pytest.mark.parametrize("gpu", ["h100", "h200", "a100"])
def test_vectorized_equals_scalar(gpu: str) -> None:
    net: Network = device_for(find_gpu(gpu, bundled_gpus()), "bf16").network
    group = np.array([2, 4, 5, 8, 8, 8, 16, 8])
    stride = np.array([1, 1, 1, 1, 1, 1, 1, 2])
    nbytes = np.array([2**30, 2**30, 2**30, 2**30, 16384, 64 * 2**20, 2**30, 2**30], dtype=float)
    vector = all_reduce(net, nbytes, group, stride)
    for i in range(len(group)):
        link = net.link_for(int(group[i]), int(stride[i]))
        assert vector[i] == pytest.approx(all_reduce_s(float(nbytes[i]), int(group[i]), link))


def test_serving_all_reduce_takes_it_for_large_prefill_messages() -> None:
    """A tensor-parallel prefill over 8 H100s (4096 tokens x 8192 hidden x 2 bytes = 64 MiB)."""
    nbytes = 4096 * 8192 * 2
    assert tp_all_reduce_s(nbytes, 8, NVLINK4) == all_reduce_s(nbytes, 8, NVLINK4)
    nvls = NVLINK4.nvls
    assert nvls is not None
    assert all_reduce_s(nbytes, 8, NVLINK4) == pytest.approx(float(nvls.seconds(nbytes)))


@pytest.mark.parametrize(
    "fields",
    [
        {"nvls_base_s": "fast"},  # not a number
        {"nvls_bytes_per_s": 5.0},  # 5 bytes/s
        {"nvls_min_ranks": 1},
        {"nvls_source": ""},
    ],
)
def test_a_bad_nvls_row_is_one_catalog_error(fields: dict[str, object]) -> None:
    with link_row_changed("nvlink4", **fields), pytest.raises(CatalogError, match="NVLS"):
        links()
