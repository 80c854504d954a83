"""Collective communication time: latency (alpha) and bandwidth (beta) terms per algorithm.

For ``n`` ranks moving a buffer of ``B`` bytes over links of one-direction bandwidth ``bw``
(already scaled by the bus efficiency nccl-tests reach) and per-step latency ``alpha``
(Thakur, Rabenseifner & Gropp 2005; NCCL's performance notes, "bus bandwidth"):

- ring all-reduce: ``2(n-1)/n · B/bw + 2(n-1)·alpha``;
- tree all-reduce (double binary tree): ``2·B/bw + 2·log2(n)·alpha`` — wins for small buffers;
- reduce-scatter and all-gather: ``(n-1)/n · B/bw + (n-1)·alpha``;
- all-to-all: ``(n-1)/n · B/bw + (n-1)·alpha``;
- point-to-point: ``B/bw + alpha``.

A group that spans nodes is limited by the slower, inter-node link of each GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """One tier of the network as seen by one GPU."""

    name: str
    bandwidth_bytes_per_s: float
    """One-direction bandwidth per GPU."""
    latency_s: float
    efficiency: float = 1.0
    """Share of the bandwidth that large collectives reach (nccl-tests bus bandwidth)."""

    @property
    def effective_bytes_per_s(self) -> float:
        """Bandwidth a large collective sees."""
        return self.bandwidth_bytes_per_s * self.efficiency


@dataclass(frozen=True)
class Network:
    """The links a job's GPUs use: within a node and between nodes."""

    intra: Link
    inter: Link
    gpus_per_node: int

    def link_for(self, group: int, stride: int = 1) -> Link:
        """The bottleneck link of a group of ``group`` ranks spaced ``stride`` GPUs apart."""
        if group <= 1:
            return self.intra
        return self.intra if group * stride <= self.gpus_per_node else self.inter


def all_reduce_s(nbytes: float, n: int, link: Link) -> float:
    """The faster of ring and tree all-reduce (NCCL picks per size)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    bw = link.effective_bytes_per_s
    ring = 2 * (n - 1) / n * nbytes / bw + 2 * (n - 1) * link.latency_s
    tree = 2 * nbytes / bw + 2 * math.log2(n) * link.latency_s
    return min(ring, tree)


def reduce_scatter_s(nbytes: float, n: int, link: Link) -> float:
    """Reduce-scatter of a ``nbytes`` buffer (each rank ends with ``nbytes / n``)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return (n - 1) / n * nbytes / link.effective_bytes_per_s + (n - 1) * link.latency_s


def all_gather_s(nbytes: float, n: int, link: Link) -> float:
    """All-gather into a ``nbytes`` buffer (each rank contributes ``nbytes / n``)."""
    return reduce_scatter_s(nbytes, n, link)


def all_to_all_s(nbytes: float, n: int, link: Link) -> float:
    """All-to-all where each rank sends ``nbytes`` in total, ``nbytes / n`` to each peer."""
    return reduce_scatter_s(nbytes, n, link)


def p2p_s(nbytes: float, link: Link) -> float:
    """One point-to-point transfer."""
    if nbytes <= 0:
        return 0.0
    return nbytes / link.effective_bytes_per_s + link.latency_s
