"""How a serving engine launches a layer's input projections (``--projections``): vLLM, SGLang
and TensorRT-LLM multiply q, k and v as one GEMM and the gated MLP's gate and up as another;
gpt-fast fuses only q, k and v; transformers and llama.cpp launch one GEMM per weight. Same
weights and FLOPs, fewer and wider GEMMs: fewer launches where decode is launch-bound."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.flops import forward_flops_per_token
from suanli.estimate.inference import inference_perf
from suanli.estimate.shapes import linear_shapes, serving_shapes
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model
from tests.web_parity import infer_tpot_by_option


def _weights(shapes: tuple) -> int:  # type: ignore[type-arg]
    return sum(s.weights * s.count for s in shapes)


MODELS = ["llama-3.1-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt2", "phi-3-mini-4k"]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("projections", ["fused", "qkv", "separate"])
def test_same_weights_in_fewer_gemms(model: str, projections: str) -> None:
    spec = load_model(model).spec
    shapes = serving_shapes(spec, projections)
    assert _weights(shapes) == _weights(linear_shapes(spec))
    assert sum(s.count for s in shapes) <= sum(s.count for s in linear_shapes(spec))
    assert serving_shapes(spec, "separate") == linear_shapes(spec)


def test_llama_layer_gemms_by_projection_layout() -> None:
    """Llama-3.1-8B: 7 GEMMs per layer apart, 5 with QKV fused, 4 with gate/up fused too."""
    spec = load_model("llama-3.1-8b").spec
    per_layer = {
        p: sum(s.count for s in serving_shapes(spec, p)) // spec.num_layers
        for p in ("separate", "qkv", "fused")
    }
    assert per_layer == {"separate": 7, "qkv": 5, "fused": 4}
    fused = {s.kind: (s.n_in, s.n_out) for s in serving_shapes(spec, "fused")}
    assert fused["qkv"] == (4096, 4096 + 2 * 1024)
    assert fused["gate_up"] == (4096, 2 * 14336)


def test_moe_experts_gate_and_up_run_as_one_grouped_gemm() -> None:
    """vLLM's fused MoE multiplies the experts' gate and up weights (w13) in one kernel."""
    spec = load_model("mixtral-8x7b").spec
    experts = [s for s in serving_shapes(spec, "fused") if s.kind == "experts"]
    assert (4096, 2 * 14336) in {(s.n_in, s.n_out) for s in experts}
    assert sum(s.count for s in experts) == 2 * 8 * spec.num_layers  # w13 and w2 per expert


def test_fused_decode_saves_the_launches_it_drops() -> None:
    """At batch 1 a decode step is launch- and bandwidth-bound: fusing saves about one launch per
    GEMM dropped (3 per layer for Llama), never more, and leaves the FLOPs alone."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("a100", bundled_gpus()), "bf16")
    tpot = {}
    for p in ("separate", "qkv", "fused"):
        result = inference_perf(spec, InferWork(projections=p), device, 512, 128)
        tpot[p] = result.tpot_s
        assert result.decode_flops_per_token == pytest.approx(
            sum(forward_flops_per_token(spec, 512 + 64, causal=False).values())
        )
    assert tpot["fused"] < tpot["qkv"] < tpot["separate"]
    saved = tpot["separate"] - tpot["fused"]
    launches = 3 * spec.num_layers * device.gemm_model.launch_s
    assert 0.3 * launches < saved <= 1.05 * launches


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    batch, tp = [1, 8, 64], [1, 2, 4]
    for p in ("separate", "qkv", "fused"):
        result = vector.infer_speed(spec, "bf16", 2, batch, tp, 1024, 128, device, p)
        for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
            work = InferWork(batch=bval, tp=tval, context=1024 + 128, projections=p)
            scalar = inference_perf(spec, work, device, 1024, 128)
            assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
            assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)
    assert np.all(np.isfinite(result["tpot_s"]))


def test_llama_cpp_framework_launches_one_gemm_per_weight() -> None:
    """--framework llama.cpp sets --projections separate, and says so; an explicit choice wins."""
    req = PerfRequest(
        "llama-3.1-8b",
        WorkRequest(task="infer", framework="llama.cpp", quant="gguf-q4_k_m"),
        gpu="rtx-4090",
    )
    answer = perf(req)
    assert isinstance(answer, InferPerfAnswer)
    gemm = next(t for t in answer.terms if t.term.startswith("decode: GEMMs"))
    assert "one GEMM per weight" in gemm.formula
    fused = perf(
        PerfRequest(
            "llama-3.1-8b",
            WorkRequest(task="infer", quant="gguf-q4_k_m", framework="vllm"),
            gpu="rtx-4090",
        )
    )
    assert isinstance(fused, InferPerfAnswer)
    assert fused.tpot_s < answer.tpot_s
    assert "QKV and gate/up fused" in next(
        t.formula for t in fused.terms if t.term.startswith("decode: GEMMs")
    )


def test_a_bad_projection_layout_is_one_sentence_and_exit_2() -> None:
    result = CliRunner().invoke(
        main, ["perf", "llama-3.1-8b", "--task", "infer", "--projections", "merged"]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "fused" in result.output and "separate" in result.output
    with pytest.raises(ValueError, match="--projections 'merged' is not one of"):
        InferWork(projections="merged")


def test_the_web_api_takes_the_layout_and_refuses_a_bad_one() -> None:
    """One answer, many views: the page's API gives the same TPOT as the library for each
    layout, and a bad value is a 4xx with one sentence."""
    _, bad = infer_tpot_by_option("projections", ("fused", "separate"), "merged")
    assert 400 <= bad.status_code < 500
    message = bad.json()["error"]
    assert "projections" in message and "separate" in message and "\n" not in message
