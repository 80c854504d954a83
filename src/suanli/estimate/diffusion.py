"""Seconds and bytes of image generation: each component's walked ops timed on the card.

Every GEMM and convolution (as its implicit GEMM) takes the card's kernel-level time
(:func:`suanli.estimate.kernels.gemm_seconds`: tile padding, the measured tensor-core and
streaming efficiencies, a launch each); every attention call runs at the measured fused-attention
efficiency for its key length (non-causal, forward) or at the speed of streaming Q, K, V and the
output, whichever is slower; element-wise ops move their bytes at the achievable bandwidth, with a
floor per kernel. Nothing is fitted to end-to-end image timings: they are the validation
(docs/image-generation.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.diffusion.graph import Graph
from suanli.estimate.kernels import gemm_seconds
from suanli.estimate.perf import Device


@dataclass(frozen=True, kw_only=True)
class GraphTime:
    """Seconds of one walked call, by op class."""

    gemm_s: float
    attention_s: float
    elementwise_s: float

    @property
    def total_s(self) -> float:
        """All op classes, run one after another (eager PyTorch: one stream)."""
        return self.gemm_s + self.attention_s + self.elementwise_s


def graph_seconds(graph: Graph, device: Device) -> GraphTime:
    """Seconds of ``graph`` on ``device`` (see the module docstring)."""
    model = device.gemm_model
    b = graph.dtype_bytes
    gemm = sum(
        g.count
        * gemm_seconds(g.m, g.n, g.k, b, device.peak_flops, device.memory_bytes_per_s, model)
        for g in graph.gemms
    )
    attention = 0.0
    for a in graph.attentions:
        efficiency = device.attention_efficiency(max(a.kv_len, 1), a.head_dim, False, False)
        compute = a.flops / (device.peak_flops * efficiency)
        traffic = b * a.batch * a.heads * a.head_dim * (2 * a.q_len + 2 * a.kv_len)
        attention += max(compute, traffic / device.bandwidth) + model.launch_s
    # Each element-wise op streams its bytes, split over its kernels, none faster than the floor.
    elementwise = sum(
        kernels * max(nbytes / kernels / device.bandwidth, model.small_op_s)
        for nbytes, kernels in graph.elementwise_ops
    )
    return GraphTime(gemm_s=gemm, attention_s=attention, elementwise_s=elementwise)
