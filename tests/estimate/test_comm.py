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

NVLINK = Link("nvlink4", 450e9, 2e-6, 0.8)
IB = Link("ib-ndr", 50e9, 5e-6, 0.94)


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
    net = Network(NVLINK, IB, 8)
    assert net.link_for(8) is NVLINK
    assert net.link_for(16) is IB
    assert net.link_for(2, stride=8) is IB  # data parallel across tp=8 groups
    assert net.link_for(1) is NVLINK
