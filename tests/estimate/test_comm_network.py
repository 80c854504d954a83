"""Catalog networks against published nccl-tests figures: multi-node NIC striping and GeForce
cards without peer-to-peer.

Multi-node all_reduce busbw, large messages, whole nodes in the group:

- DGX H100, 8x 400 Gb/s: 380 GB/s; DGX A100, 8x 200 Gb/s: 192 GB/s (NVIDIA GTC 2024 session
  S62129, slide "NCCL Tests Allreduce Bus Bandwidth": "NVL4 + 8x 400Gb RDMA (DGX H100)",
  "NVL3 + 8x 200Gb RDMA (DGX A100)");
- 4 x 8 B200 (AWS P6-B200, 8x 400 Gb/s EFA v4), 16 GiB: 381.80 GB/s; 4 x 8 H200 (p5en, 16x
  200 Gb/s EFA), 4 GiB ring: 364.87 GB/s (stas00/ml-engineering network/README.md at 744d01e,
  2026-08, "Inter-node speed depends on intra-node speed" and its footnote);
- one NIC: "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NVIDIA/nccl-tests issue #290).

GeForce without peer-to-peer (NCCL SHM transport), nccl-tests all_reduce_perf on 4x RTX 4090,
Duanyll/open-gpu-kernel-modules docs/48g-4090-p2p/hw-logs-2026-07: stock driver 3.48-3.55 GB/s
busbw at 16-256 MiB, 8-byte 23.4-24.9 us (node14-stock48g); SHM fallback 4.53-4.66 GB/s, 8-byte
22.3-24.4 us (node13-modded24g, default P2P level); 8 GPUs SHM 8-byte 34.2-36.8 us
(node32-modded48g-8x); 2 GPUs, P2P disabled, 8-byte alltoall 11.3-11.9 us
(tinygrad/open-gpu-kernel-modules issue #17).
"""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import has_peer_to_peer, nics_per_gpu, node_layouts
from suanli.estimate.comm import Network, all_gather_s, all_reduce_s, reduce_scatter_s
from suanli.estimate.links import intra_node_link, network_for

GPUS = bundled_gpus()


def _net(gpu_id: str, inter: str | None = None) -> Network:
    return network_for(find_gpu(gpu_id, GPUS), inter=inter, stripe_nics=True)


@pytest.mark.parametrize(
    ("gpu_id", "inter", "published", "rel"),
    [
        ("h100-sxm-80gb", "ib-ndr", 380e9, 0.05),  # GTC24: DGX H100 8x 400G
        ("h200-sxm-141gb", "ib-ndr", 364.87e9, 0.05),  # stas00: 4 x 8 H200, 16x 200G EFA
        ("b200-sxm-180gb", "ib-ndr", 381.80e9, 0.05),  # stas00: 4 x 8 B200, 8x 400G EFA
        ("a100-sxm-80gb", "ib-hdr", 192e9, 0.05),  # GTC24: DGX A100 8x 200G
    ],
)
def test_whole_nodes_stripe_over_all_nics(
    gpu_id: str, inter: str, published: float, rel: float
) -> None:
    net = _net(gpu_id, inter)
    busbw = net.link_for(32).effective_bytes_per_s  # 4 nodes x 8 GPUs
    assert busbw == pytest.approx(published, rel=rel)
    # before NIC striping the whole group crossed at one NIC's rate: 8x too slow
    assert network_for(find_gpu(gpu_id, GPUS), inter=inter).link_for(32).effective_bytes_per_s < (
        published / 4
    )


def test_one_rank_per_node_gets_one_nic() -> None:
    net = _net("h100-sxm-80gb", "ib-ndr")
    busbw = net.link_for(4, stride=8).effective_bytes_per_s  # DP across TP-8 nodes
    assert 46e9 <= busbw <= 48e9


def test_multi_node_all_reduce_time_follows_the_published_busbw() -> None:
    """4 GiB over 4 x 8 H200: stas00 measured 364.87 GB/s busbw, i.e. 4 GiB x 2 x 31/32 / busbw."""
    net = _net("h200-sxm-141gb", "ib-ndr")
    nbytes = 4 * 2**30
    measured = nbytes * 2 * 31 / 32 / 364.87e9
    assert all_reduce_s(nbytes, 32, net.link_for(32)) == pytest.approx(measured, rel=0.05)


def test_node_layouts_give_nics_per_gpu() -> None:
    layouts = node_layouts()
    assert layouts["dgx1-v100"].nics_per_node == 4
    assert nics_per_gpu(find_gpu("v100-sxm2-32gb", GPUS)) == 0.5
    assert nics_per_gpu(find_gpu("h100-sxm-80gb", GPUS)) == 1.0
    assert nics_per_gpu(find_gpu("l40s-48gb", GPUS)) == 0.25  # one NIC in a 4-GPU server
    for node in layouts.values():
        assert node.source and node.date


def test_stripe_nics_is_off_by_default() -> None:
    """Until estimate/vector.py mirrors it, the planner's networks are unchanged."""
    assert network_for(find_gpu("h100-sxm-80gb", GPUS)).nics_per_node == 0


# --- GeForce: no peer-to-peer ---------------------------------------------------------------


@pytest.mark.parametrize(
    "gpu_id", ["rtx-4090-24gb", "rtx-3090-24gb", "rtx-4080-16gb", "rtx-5090-32gb"]
)
def test_geforce_cards_have_no_peer_to_peer(gpu_id: str) -> None:
    gpu = find_gpu(gpu_id, GPUS)
    assert not has_peer_to_peer(gpu)
    link = intra_node_link(gpu)
    assert "without peer-to-peer" in link.name
    # The stock driver's all-reduce, and its all-gather and reduce-scatter, which lose more.
    assert link.efficiency == 0.11 and link.gather_efficiency == 0.104


@pytest.mark.parametrize(
    "gpu_id", ["rtx-a6000-48gb", "rtx-6000-ada-48gb", "l40s-48gb", "a100-pcie-80gb"]
)
def test_workstation_and_datacentre_cards_keep_peer_to_peer(gpu_id: str) -> None:
    gpu = find_gpu(gpu_id, GPUS)
    assert has_peer_to_peer(gpu)
    assert intra_node_link(gpu).efficiency == 0.76


def test_host_staged_bandwidth_matches_4x_rtx4090_without_p2p() -> None:
    link = intra_node_link(find_gpu("rtx-4090-24gb", GPUS))
    assert 3.48e9 * 0.85 <= link.effective_bytes_per_s <= 4.66e9 * 1.15
    nbytes = 256 * 2**20  # node14 stock driver: 117.9 ms out-of-place (3.42 GB/s busbw)
    assert all_reduce_s(nbytes, 4, link) == pytest.approx(117.9e-3, rel=0.25)
    # node14 stock driver, out-of-place at 256 MiB: all-gather 61.9 ms, reduce-scatter 62.6 ms.
    assert all_gather_s(nbytes, 4, link) == pytest.approx(61.9e-3, rel=0.10)
    assert reduce_scatter_s(nbytes, 4, link) == pytest.approx(62.6e-3, rel=0.10)
    # A seventh of a clean PCIe 4.0 x16 link's bus bandwidth (0.76 bus efficiency).
    assert 5 <= 0.76 / link.efficiency <= 8


@pytest.mark.parametrize(
    ("n", "low", "high"), [(2, 11.3e-6, 11.9e-6), (4, 22.3e-6, 24.9e-6), (8, 34.2e-6, 36.8e-6)]
)
def test_host_staged_small_message_latency(n: int, low: float, high: float) -> None:
    link = intra_node_link(find_gpu("rtx-4090-24gb", GPUS))
    assert low * 0.85 <= all_reduce_s(8, n, link) <= high * 1.15


def test_host_staged_scales_with_the_cards_pcie_link() -> None:
    gen5 = intra_node_link(find_gpu("rtx-5090-32gb", GPUS))
    x8 = intra_node_link(find_gpu("rtx-4060-ti-16gb", GPUS))
    assert gen5.bandwidth_bytes_per_s == 63e9
    assert x8.bandwidth_bytes_per_s == 31.5e9 / 2 and "x8" in x8.name
