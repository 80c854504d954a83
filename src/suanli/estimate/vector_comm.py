"""Vectorized collectives for the planner (:mod:`suanli.estimate.vector`): numpy twins of
:mod:`suanli.estimate.comm`'s all-reduce, reduce-scatter and link choice, element by element over
arrays of layouts (``tests/estimate/test_vector.py`` holds them to the scalar path).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from suanli.estimate.comm import Network

Array = Any  # numpy arrays (kept loose: numpy's typing is not part of the pure core check)


def pick(
    net: Network, group: Array, stride: Array, *, gather: bool = False
) -> tuple[Array, Array, Array]:
    """Effective bandwidth, per-step latency and per-collective base latency of the bottleneck
    link per element; with ``gather``, the bandwidth all-gathers and reduce-scatters reach
    (:attr:`suanli.estimate.comm.Link.gather_share`)."""
    bw, lat = net.bottleneck(group, stride, where=np.where, minimum=np.minimum, maximum=np.maximum)
    if gather:
        bw = bw * net.gather_share(group, stride, where=np.where)
    return bw, lat, net.base_latency(group, stride, where=np.where)


def _nvls(net: Network, nbytes: Array, group: Array, stride: Array) -> Array:
    """The in-switch NVLS all-reduce's seconds per element where the group is inside a node
    whose link has it and large enough (:func:`suanli.estimate.comm.all_reduce_s`), else inf."""
    nvls = net.intra.nvls
    if nvls is None:
        return np.full(np.shape(group), np.inf)
    usable = (group * stride <= net.gpus_per_node) & (group >= nvls.min_ranks)
    return np.where(usable, nvls.seconds(nbytes), np.inf)


def _ring_or_tree(nbytes: Array, n_f: Array, bw: Array, lat: Array) -> Array:
    ring = 2 * (n_f - 1) / n_f * nbytes / bw + 2 * (n_f - 1) * lat
    tree = 2 * nbytes / bw + 2 * np.log2(np.maximum(n_f, 1)) * lat
    return np.minimum(ring, tree)


def all_reduce(net: Network, nbytes: Array, n: Array, stride: Array) -> Array:
    """:func:`suanli.estimate.comm.all_reduce_s` per element for groups of ``n`` ranks spaced
    ``stride`` GPUs apart: ring or tree on the bottleneck link, both protocols where the
    intra-node link was measured with two, NVLS where the switch has it."""
    bw, lat, base = pick(net, n, stride)
    n_f = n.astype(np.float64)
    bulk = _ring_or_tree(nbytes, n_f, bw, lat)
    nccl = bulk + base
    intra = net.intra
    if intra.small_efficiency > 0:
        inside = (n * stride <= net.gpus_per_node) | (n <= 1)
        group_bw = intra.group_bytes_per_s(n, minimum=np.minimum, maximum=np.maximum)
        small_bw = group_bw * intra.small_efficiency
        small = _ring_or_tree(nbytes, n_f, small_bw, lat) + base
        nccl = np.where(inside, np.minimum(small, bulk + intra.bulk_base_latency_s), nccl)
    nccl = np.minimum(nccl, _nvls(net, nbytes, n, stride))
    return np.where((n <= 1) | (nbytes <= 0), 0.0, nccl)


def tp_all_reduce(nbytes: Array, n: Array, net: Network) -> Array:
    """:func:`suanli.estimate.comm.tp_all_reduce_s` per element: NCCL, or the serving engines'
    one-shot kernel inside a node whose link has one, where it is faster."""
    nccl = all_reduce(net, nbytes, n, np.ones_like(n))
    shot = net.intra.oneshot
    if shot is None:
        return nccl
    n_f = np.maximum(n.astype(np.float64), 1.0)
    inside = (n <= net.gpus_per_node) & shot.covers(n)
    usable = inside & (n > 1) & (nbytes > 0) & (nbytes <= shot.max_bytes)
    return np.where(usable, np.minimum(nccl, shot.seconds(nbytes, n_f, log2=np.log2)), nccl)


def reduce_scatter(nbytes: Array, n: Array, bw: Array, lat: Array, base: Array) -> Array:
    n_f = n.astype(np.float64)
    t = (n_f - 1) / n_f * nbytes / bw + (n_f - 1) * lat + base
    return np.where((n <= 1) | (nbytes <= 0), 0.0, t)
