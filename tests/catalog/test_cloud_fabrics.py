"""Cloud providers' inter-node fabrics (AWS EFA, Google Cloud A2/A3, Azure ND) against the
nccl-tests figures published for them.

The published figures, written here from their sources (not from our data file):

- AWS p5.48xlarge (8 H100, 32 x 100 Gb/s EFA v2), all_reduce 8 GiB busbw: 2 nodes 477.71,
  4 nodes 356.99, 8 nodes 355.36 GB/s (crazyguitar/aws-gpu-communication-benchmark
  data/nccl_all_reduce.csv, commit a77f70d, 2025-10); 2 x p5, 16-128 B all_reduce 68.4-69.3 us
  (aws/aws-k8s-tester pull request #585, 2025-02).
- AWS p5en.48xlarge (8 H200, 16 x 200 Gb/s EFA v3), 4 nodes, 4 GiB ring: 364.87 GB/s busbw
  (stas00/ml-engineering network/README.md at 744d01e, 2026-08).
- AWS p6-b200 (8 B200, 8 x 400 Gb/s EFA v4), 4 nodes, 16 GiB: 381.80 GB/s busbw (same README);
  2 x p6-b200, 8 B all_reduce 50.58 us (dstackai/dstack pull request #3961, 2026-06).
- AWS p4d (8 A100, 4 x 100 Gb/s EFA v1): 'effective 340Gbps for all_reduce tests' (same README);
  2 x p4d, 1 GiB all_reduce 57.17 GB/s busbw (NVIDIA/nccl issue #527, 2022-07).
- Google Cloud a3-megagpu-8g (8 H100, 8 x 200 Gb/s GPUDirect-TCPXO), 2 nodes: 8 GiB all_reduce
  algbw 180.71, busbw 338.82 GB/s; 16-256 B all_reduce 122.3-123.6 us
  (lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result, commit 5f9e1dd, 2025-04).

On two nodes NCCL runs a tree (or NVLS-tree) that carries each byte across the network once, so
the 2-node busbw exceeds what the wire gives a ring; the model's ring must stay at or below it.
"""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import links, nics_per_gpu, node_layout_for, node_layouts
from suanli.estimate.comm import Network, all_reduce_s
from suanli.estimate.links import network_for
from tests.cli.test_cli import run

GPUS = bundled_gpus()
CLOUD_LINKS = (
    "efa-p4d",
    "efa-p5",
    "efa-p5en",
    "efa-p6-b200",
    "gcp-a3-tcpx",
    "gcp-a3-tcpxo",
    "gcp-a2-tcp",
)
CLOUD_NODES = {
    "aws-p4d": 4,
    "aws-p5": 8,  # 8 NCCL devices of 4 x 100 Gb/s
    "aws-p5en": 8,  # 8 NCCL devices of 2 x 200 Gb/s
    "aws-p6-b200": 8,
    "gcp-a3-high": 4,
    "gcp-a3-mega": 8,
    "gcp-a3-ultra": 8,
    "gcp-a2": 1,
    "azure-nd-a100-v4": 8,
    "azure-nd-h100-v5": 8,
}


def _net(gpu_id: str, inter: str) -> Network:
    return network_for(find_gpu(gpu_id, GPUS), inter=inter, stripe_nics=True)


@pytest.mark.parametrize("lid", CLOUD_LINKS)
def test_cloud_links_load_with_a_source_and_a_node(lid: str) -> None:
    spec = links()[lid]
    assert spec.tier == "inter-node"
    assert spec.source and spec.date
    carriers = [node for node in node_layouts().values() if node.inter == lid]
    assert carriers, f"{lid}: no [[node]] row carries it"
    for node in carriers:
        assert node.gpu_ids and node.source and node.date


@pytest.mark.parametrize(("nid", "nics"), CLOUD_NODES.items())
def test_cloud_node_rows(nid: str, nics: int) -> None:
    node = node_layouts()[nid]
    assert node.nics_per_node == nics and node.gpus_per_node == 8
    assert node.source and node.date


def test_unmeasured_figures_say_so() -> None:
    """Rows without their own measurement name the assumption."""
    for lid in ("efa-p4d", "efa-p5en", "gcp-a3-tcpx", "gcp-a2-tcp"):
        assert "ASSUMED" in links()[lid].source


@pytest.mark.parametrize(
    ("gpu_id", "inter", "published_busbw"),
    [
        ("h100-sxm-80gb", "efa-p5", 356.99e9),  # crazyguitar: 4 x p5, 8 GiB
        ("h200-sxm-141gb", "efa-p5en", 364.87e9),  # stas00: 4 x p5en, 4 GiB ring
        ("b200-sxm-180gb", "efa-p6-b200", 381.80e9),  # stas00: 4 x p6-b200, 16 GiB
        ("a100-sxm-40gb", "efa-p4d", 340e9 / 8),  # stas00: 'effective 340Gbps'
    ],
)
def test_whole_nodes_follow_the_published_ring_busbw(
    gpu_id: str, inter: str, published_busbw: float
) -> None:
    busbw = _net(gpu_id, inter).link_for(32).effective_bytes_per_s  # 4 nodes x 8 GPUs
    assert busbw == pytest.approx(published_busbw, rel=0.05)


@pytest.mark.parametrize(
    ("gpu_id", "inter", "published_2node_busbw", "nbytes"),
    [
        ("h100-sxm-80gb", "efa-p5", 477.71e9, 8 * 2**30),  # crazyguitar: 2 x p5
        ("a100-sxm-40gb", "efa-p4d", 57.17e9, 2**30),  # NVIDIA/nccl#527: 2 x p4d
        ("h100-sxm-80gb", "gcp-a3-tcpxo", 338.82e9, 8 * 2**30),  # 2 x a3-megagpu-8g
    ],
)
def test_two_node_all_reduce_is_within_the_published_busbw(
    gpu_id: str, inter: str, published_2node_busbw: float, nbytes: int
) -> None:
    """The model's 2-node all-reduce is never faster than measured, nor absurdly slower."""
    link = _net(gpu_id, inter).link_for(16)
    assert 0.35 * published_2node_busbw <= link.effective_bytes_per_s <= published_2node_busbw
    measured_s = nbytes * 2 * 15 / 16 / published_2node_busbw
    assert all_reduce_s(nbytes, 16, link) >= measured_s


def test_a3_mega_reaches_the_wire_share_its_two_node_algbw_shows() -> None:
    """2 x a3-megagpu-8g, 8 GiB: algbw 180.71 GB/s with each node's payload crossing once."""
    busbw = _net("h100-sxm-80gb", "gcp-a3-tcpxo").link_for(32).effective_bytes_per_s
    assert busbw == pytest.approx(180.71e9, rel=0.05)


@pytest.mark.parametrize(
    ("gpu_id", "inter", "measured_s"),
    [
        ("h100-sxm-80gb", "efa-p5", 69.0e-6),  # aws-k8s-tester#585, 16-128 B
        ("b200-sxm-180gb", "efa-p6-b200", 50.58e-6),  # dstack#3961, 8 B
        ("h100-sxm-80gb", "gcp-a3-tcpxo", 123.0e-6),  # a3mega fork, 16-256 B
    ],
)
def test_small_two_node_all_reduce_follows_the_measured_latency(
    gpu_id: str, inter: str, measured_s: float
) -> None:
    link = _net(gpu_id, inter).link_for(16)
    assert all_reduce_s(8, 16, link) == pytest.approx(measured_s, rel=0.15)


def test_efa_and_tcpxo_steps_cost_more_than_infiniband() -> None:
    ib = links()["ib-ndr"].latency_s
    for lid in ("efa-p4d", "efa-p5", "efa-p5en", "efa-p6-b200", "gcp-a3-tcpxo"):
        assert links()[lid].latency_s > ib


def test_the_chosen_link_picks_its_node_row() -> None:
    a100 = find_gpu("a100-sxm-40gb", GPUS)
    h100 = find_gpu("h100-sxm-80gb", GPUS)
    assert nics_per_gpu(a100, "efa-p4d") == 0.5  # 4 EFA interfaces for 8 A100
    assert nics_per_gpu(h100, "gcp-a3-tcpx") == 0.5
    assert nics_per_gpu(a100, "gcp-a2-tcp") == 1 / 8
    # a GPU's usual layout is unchanged; its usual link may name the Azure VM, with the same NICs
    for gpu, usual, azure, link in [
        (h100, "dgx-h100", "azure-nd-h100-v5", "ib-ndr"),
        (a100, "dgx-a100", "azure-nd-a100-v4", "ib-hdr"),
    ]:
        assert node_layout_for(gpu).id == usual  # type: ignore[union-attr]
        assert node_layout_for(gpu, link).id == azure  # type: ignore[union-attr]
        assert nics_per_gpu(gpu) == nics_per_gpu(gpu, link) == 1.0
    # a link no instance row lists for this GPU keeps the GPU's usual NIC count
    v100 = find_gpu("v100-sxm2-32gb", GPUS)
    assert nics_per_gpu(v100, "efa-p5") == nics_per_gpu(v100) == 0.5
    # generic rows are never picked by their link: an A40 stays in its 4-GPU server, not the
    # 2-GPU workstation that also names eth-25g
    a40 = find_gpu("a40-48gb", GPUS)
    assert nics_per_gpu(a40, "eth-25g") == nics_per_gpu(a40) == 0.25


def test_no_existing_link_changes_any_gpus_nic_count() -> None:
    """Only the cloud links pick another node row; every other link keeps what it gave."""
    for gpu in GPUS:
        for lid in links():
            if lid not in CLOUD_LINKS:
                assert nics_per_gpu(gpu, lid) == nics_per_gpu(gpu), (gpu.id, lid)


def _communication_s(gpu: str, inter: str) -> float:
    import json

    out = run(
        "perf", "llama-3.1-8b", "--task", "pretrain", "--gpu", gpu, "--gpus", "32", "--zero",
        "3", "--batch", "1", "--seq", "4096", "--inter-node", inter, "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return float(json.loads(out.stdout)["breakdown_s"]["communication"])


def test_perf_cli_takes_a_cloud_fabric() -> None:
    """ZeRO-3 over 4 nodes: p4d's 4 EFA interfaces are slower than DGX A100's 8 HDR ports."""
    assert _communication_s("a100-sxm-40gb", "efa-p4d") > 2 * _communication_s(
        "a100-sxm-40gb", "ib-hdr"
    )


def test_perf_cli_refuses_a_misspelt_fabric_in_one_sentence() -> None:
    out = run("perf", "llama-3.1-8b", "--gpu", "h100", "--inter-node", "efa-p55")
    assert out.returncode == 2
    assert "unknown interconnect 'efa-p55'" in out.stderr and "efa-p5," in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
