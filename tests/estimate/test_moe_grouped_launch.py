"""MoE layers in a serving engine run as one grouped kernel per projection and layer (vLLM's
fused_moe, llama.cpp's mul_mat_id): a decode step pays one launch per group, not one per touched
expert (which made Qwen3-30B-A3B decode at 56 tok/s on a 4090, below a dense 8B model)."""

from __future__ import annotations

from dataclasses import replace

from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.kernels import GemmModel, serve_forward
from suanli.estimate.shapes import linear_shapes
from suanli.models.resolve import load_model


def _decode_gemm_s(model: GemmModel, batch: int = 1) -> float:
    spec = load_model("qwen3-30b-a3b").spec
    moe = spec.moe
    assert moe is not None
    share = moe.experts_per_token / moe.num_experts
    return float(
        serve_forward(
            shapes=linear_shapes(spec),
            num_layers=spec.num_layers,
            hidden=spec.hidden_size,
            vocab=spec.vocab_size,
            rows=batch,
            sequences=batch,
            tp=1,
            weight_bytes=0.5625,
            peak_flops=165e12,
            bandwidth_bytes_per_s=1.0e12,
            model=model,
            op_bytes=serving_op_bytes(spec),
            touched_share=1 - (1 - share) ** batch,
            expert_share=share,
            num_experts=moe.num_experts,
        ).gemm_s
    )


def test_a_decode_step_launches_one_kernel_per_expert_group() -> None:
    spec = load_model("qwen3-30b-a3b").spec
    base = GemmModel(compute_efficiency=0.7, memory_efficiency=0.8, launch_s=0.0)
    launches = (_decode_gemm_s(replace(base, launch_s=1e-3)) - _decode_gemm_s(base)) / 1e-3
    shapes = linear_shapes(spec)
    moe = spec.moe
    assert moe is not None
    dense = sum(s.count for s in shapes if s.kind != "experts")
    grouped = sum(s.count / moe.num_experts for s in shapes if s.kind == "experts")
    # Dense GEMMs, one per expert group (gate-up and down of each MoE layer), the LM head.
    assert abs(launches - (dense + grouped + 1)) < 1e-6
    per_expert = sum(s.count * moe.experts_per_token / moe.num_experts for s in shapes
                     if s.kind == "experts")  # fmt: skip
    assert grouped < per_expert  # 3 launches per layer instead of 24 at batch 1
