"""Collectives: the alpha-beta formulas (Thakur et al. 2005; NCCL's bus-bandwidth notes)."""

from __future__ import annotations

import pytest

from suanli.estimate.comm import (
    Link,
    Network,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    p2p_s,
    reduce_scatter_s,
)

NVLINK = Link(name="nvlink4", bandwidth_bytes_per_s=450e9, latency_s=2e-6, efficiency=0.8)
IB = Link(name="ib-ndr", bandwidth_bytes_per_s=50e9, latency_s=5e-6, efficiency=0.94)


def test_ring_all_reduce_moves_2_n_minus_1_over_n() -> None:
    nbytes, n = 1e9, 8
    bw = 450e9 * 0.8
    expected = 2 * 7 / 8 * nbytes / bw + 2 * 7 * 2e-6
    assert all_reduce_s(nbytes, n, NVLINK) == pytest.approx(expected)


def test_tree_wins_for_small_messages() -> None:
    n = 64
    small = all_reduce_s(1024, n, NVLINK)
    ring_latency = 2 * (n - 1) * NVLINK.latency_s
    assert small < ring_latency  # the log2(n) tree latency is used


def test_one_rank_or_empty_costs_nothing() -> None:
    assert all_reduce_s(1e9, 1, NVLINK) == 0
    assert reduce_scatter_s(0, 8, NVLINK) == 0
    assert p2p_s(0, NVLINK) == 0


def test_reduce_scatter_plus_all_gather_equals_ring_all_reduce_bandwidth() -> None:
    nbytes, n = 4e9, 8
    combined = reduce_scatter_s(nbytes, n, IB) + all_gather_s(nbytes, n, IB)
    assert combined == pytest.approx(all_reduce_s(nbytes, n, IB), rel=1e-6)
    assert all_to_all_s(nbytes, n, IB) == pytest.approx(reduce_scatter_s(nbytes, n, IB))


def test_groups_beyond_a_node_use_the_inter_node_link() -> None:
    net = Network(intra=NVLINK, inter=IB, gpus_per_node=8)
    assert net.link_for(8) is NVLINK
    assert net.link_for(16) is IB
    assert net.link_for(2, stride=8) is IB  # data parallel across tp=8 groups
    assert net.link_for(1) is NVLINK


# --- multi-node: NCCL stripes a collective over every NIC of the node ---------------------------

STRIPED = Network(intra=NVLINK, inter=IB, gpus_per_node=8, nics_per_node=8)


def test_without_a_nic_count_every_spanning_group_gets_the_inter_link_as_is() -> None:
    net = Network(intra=NVLINK, inter=IB, gpus_per_node=8)
    assert net.nics_per_node == 0
    assert net.link_for(64) is IB and net.link_for(4, stride=8) is IB


def test_a_group_with_one_rank_per_node_gets_its_gpus_nic() -> None:
    assert STRIPED.link_for(4, stride=8) is IB  # data parallel across tensor-parallel nodes
    assert STRIPED.link_for(16, stride=16).effective_bytes_per_s == IB.effective_bytes_per_s


def test_a_group_with_m_ranks_per_node_drives_m_nics_up_to_the_intra_rate() -> None:
    share = IB.effective_bytes_per_s  # 8 NICs for 8 GPUs: one per GPU
    assert STRIPED.link_for(8, stride=4).effective_bytes_per_s == pytest.approx(2 * share)
    assert STRIPED.link_for(16, stride=2).effective_bytes_per_s == pytest.approx(4 * share)
    whole_nodes = STRIPED.link_for(64)  # 8 ranks per node: 8 x 47 = 376 > NVLink's 360
    assert whole_nodes.effective_bytes_per_s == pytest.approx(NVLINK.effective_bytes_per_s)
    assert whole_nodes.latency_s == IB.latency_s


def test_fewer_nics_than_gpus_share_them() -> None:
    dgx1 = Network(
        intra=NVLINK, inter=IB, gpus_per_node=8, nics_per_node=4
    )  # DGX-1: 4 NICs for 8 GPUs
    assert dgx1.link_for(4, stride=8).effective_bytes_per_s == pytest.approx(
        IB.effective_bytes_per_s / 2
    )
    assert dgx1.link_for(16).effective_bytes_per_s == pytest.approx(4 * IB.effective_bytes_per_s)


@pytest.mark.parametrize("nics", [0, 1, 4, 8, 16])
def test_bottleneck_on_arrays_equals_link_for(nics: int) -> None:
    """``Network.bottleneck`` is what the vectorized planner can call with numpy."""
    np = pytest.importorskip("numpy")
    net = Network(intra=NVLINK, inter=IB, gpus_per_node=8, nics_per_node=nics)
    groups = np.array([1, 2, 4, 8, 16, 2, 4, 8, 16, 64, 3])
    strides = np.array([1, 4, 8, 1, 1, 16, 2, 4, 8, 1, 2])
    bw, lat = net.bottleneck(
        groups, strides, where=np.where, minimum=np.minimum, maximum=np.maximum
    )
    for i, (g, s) in enumerate(zip(groups.tolist(), strides.tolist(), strict=True)):
        link = net.link_for(g, s)
        assert bw[i] == pytest.approx(link.effective_bytes_per_s), (g, s)
        assert lat[i] == link.latency_s
        scalar_bw, scalar_lat = net.bottleneck(g, s)
        assert scalar_bw == pytest.approx(link.effective_bytes_per_s)
        assert scalar_lat == link.latency_s


def test_base_latency_is_paid_once_per_collective() -> None:
    """``base_latency_s`` adds once to every collective, for ring and tree alike (NCCL
    tuning.cc: a base latency per collective plus per-hop latency), and not to a
    point-to-point transfer (measured send/recv is far below a collective's floor)."""
    base = 20e-6
    with_base = Link(
        name="nvlink4",
        bandwidth_bytes_per_s=450e9,
        latency_s=2e-6,
        efficiency=0.8,
        base_latency_s=base,
    )
    for nbytes in (1024, 1e9):
        for n in (2, 4, 8, 64):
            assert all_reduce_s(nbytes, n, with_base) == pytest.approx(
                all_reduce_s(nbytes, n, NVLINK) + base
            )
            for fn in (reduce_scatter_s, all_gather_s, all_to_all_s):
                assert fn(nbytes, n, with_base) == pytest.approx(fn(nbytes, n, NVLINK) + base)
        assert p2p_s(nbytes, with_base) == pytest.approx(p2p_s(nbytes, NVLINK))
    assert all_reduce_s(1e9, 1, with_base) == 0
    assert reduce_scatter_s(0, 8, with_base) == 0


@pytest.mark.parametrize("nics", [0, 8])
def test_base_latency_on_arrays_equals_link_for(nics: int) -> None:
    np = pytest.importorskip("numpy")
    net = Network(
        intra=Link(
            name="nv",
            bandwidth_bytes_per_s=450e9,
            latency_s=2e-6,
            efficiency=0.8,
            base_latency_s=20e-6,
        ),
        inter=Link(
            name="ib",
            bandwidth_bytes_per_s=50e9,
            latency_s=5e-6,
            efficiency=0.9,
            base_latency_s=7e-6,
        ),
        gpus_per_node=8,
        nics_per_node=nics,
    )
    groups = np.array([1, 2, 8, 16, 2, 64])
    strides = np.array([1, 4, 1, 1, 16, 1])
    base = net.base_latency(groups, strides, where=np.where)
    for i, (g, s) in enumerate(zip(groups.tolist(), strides.tolist(), strict=True)):
        assert base[i] == net.link_for(g, s).base_latency_s == net.base_latency(g, s)


def test_a_group_spanning_nodes_pays_at_least_the_intra_node_base() -> None:
    """With several ranks a node the collective runs the intra-node phase too: its base latency
    is never below the NVLink collective's (one rank a node: the inter-node link's alone)."""
    nvlink = Link(
        name="nvlink", bandwidth_bytes_per_s=450e9, latency_s=2e-6, efficiency=0.8,
        base_latency_s=30e-6,
    )  # fmt: skip
    for nics in (0, 8):
        net = Network(intra=nvlink, inter=IB, gpus_per_node=8, nics_per_node=nics)
        assert net.link_for(16).base_latency_s == 30e-6
        assert net.base_latency(16) == 30e-6
        assert net.link_for(2, stride=8).base_latency_s == IB.base_latency_s  # one a node
        assert all_gather_s(1e3, 16, net.link_for(16)) >= all_gather_s(1e3, 8, net.link_for(8))
