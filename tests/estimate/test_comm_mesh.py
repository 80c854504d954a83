"""Mesh fabrics without a switch (AMD's xGMI on MI300X, Gaudi's on-chip RoCE): a group of ``n``
GPUs reaches ``n - 1`` peer links, not the GPU's total (interconnect.toml's
per_peer_unidirectional_bytes_per_s, estimate/comm.py Link.group_bytes_per_s)."""

from __future__ import annotations

import numpy as np
import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu
from suanli.catalog.network import get_link, links
from suanli.estimate.comm import Network, all_reduce_s, p2p_s
from suanli.estimate.device import device_for

from ..catalog_patch import link_row_changed


def _network(gpu: str) -> Network:
    return device_for(find_gpu(gpu, bundled_gpus()), "bf16").network


def _bus_gb_s(nbytes: int, n: int, net: Network) -> float:
    """nccl-tests' bus bandwidth of the model's all-reduce."""
    return 2 * (n - 1) / n * nbytes / all_reduce_s(nbytes, n, net.link_for(n)) / 1e9


def test_two_mi300x_get_one_link_and_eight_get_seven() -> None:
    """stas00/ml-engineering network/README.md, all_reduce_bench on MI300X at 4 GiB: 2 GPUs
    47.671 GB/s, 8 GPUs 312.912 GB/s bus bandwidth (one 64 GB/s link against seven). Before the
    mesh was modelled a 2-GPU group got all seven links' 313 GB/s."""
    net = _network("mi300x")
    big = 4 * 2**30
    assert _bus_gb_s(big, 2, net) == pytest.approx(47.671, rel=0.10)
    assert _bus_gb_s(big, 8, net) == pytest.approx(312.912, rel=0.02)
    assert _bus_gb_s(big, 4, net) == pytest.approx(3 * 64 * 0.70, rel=0.01)
    # A pipeline send crosses one peer link inside the node.
    send = net.point_to_point_link(2)
    assert send.bandwidth_bytes_per_s == pytest.approx(64e9)
    assert p2p_s(2**30, send) > 6 * p2p_s(2**30, net.intra)


def test_gaudi_groups_scale_with_their_peers() -> None:
    net = _network("gaudi2")
    assert net.link_for(2).bandwidth_bytes_per_s == pytest.approx(37.5e9)
    assert net.link_for(8).bandwidth_bytes_per_s == pytest.approx(262.5e9)


@pytest.mark.parametrize("gpu", ["h100", "a100", "l40s"])
def test_switched_and_pcie_links_are_unchanged(gpu: str) -> None:
    net = _network(gpu)
    for n in (2, 4, 8):
        assert net.link_for(n) is net.intra
    assert net.intra.per_peer_bytes_per_s == 0


@pytest.mark.parametrize("gpu", ["mi300x", "gaudi2", "h100"])
def test_vectorized_bottleneck_equals_the_scalar_link(gpu: str) -> None:
    net = _network(gpu)
    groups = np.array([1, 2, 3, 4, 8, 16, 64, 2, 4])
    strides = np.array([1, 1, 1, 2, 1, 1, 8, 4, 2])
    bw, lat = net.bottleneck(
        groups, strides, where=np.where, minimum=np.minimum, maximum=np.maximum
    )
    for g, s, b, t in zip(groups, strides, bw, lat, strict=True):
        link = net.link_for(int(g), int(s))
        assert b == pytest.approx(link.effective_bytes_per_s, rel=1e-12), (g, s)
        assert t == link.latency_s


def test_a_per_peer_rate_above_the_total_is_one_sentence() -> None:
    too_fast = link_row_changed("infinity-fabric-mi300x", per_peer_unidirectional_bytes_per_s=1e12)
    with too_fast, pytest.raises(CatalogError, match="per_peer_unidirectional_bytes_per_s"):
        links()
    assert get_link("infinity-fabric-mi300x").per_peer_bytes_per_s == 64e9


def test_mi325x_is_on_the_same_board_and_mi250x_keeps_its_own_rate() -> None:
    """The xGMI link row describes the MI300X/MI325X 8-GPU board (stas00: 'AMD MI300X/MI325X are
    64GBps GPU-to-GPU ... 448GBps in total'). The MI325X entry has no fabric total of its own and
    fell back to PCIe (63 GB/s) before 2026-12; the MI250X (CDNA 2) keeps its catalog rate and no
    per-peer limit, its topology being another one."""
    mi325x = _network("mi325x").intra
    assert mi325x.bandwidth_bytes_per_s == pytest.approx(448e9)
    assert mi325x.for_group(2).bandwidth_bytes_per_s == pytest.approx(64e9)
    mi250x = _network("mi250x").intra
    assert mi250x.bandwidth_bytes_per_s == pytest.approx(400e9)
    assert mi250x.per_peer_bytes_per_s == 0
