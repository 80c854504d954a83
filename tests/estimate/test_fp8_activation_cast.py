"""An fp8 (W8A8) serving GEMM quantizes its input first: the amax pass and the cast
(docs/speed.md, "Quantizing the activations of an fp8 GEMM")."""

from __future__ import annotations

import pytest

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate import vector
from suanli.estimate.casts import FP8_CAST_BYTES
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.inference import inference_perf
from suanli.estimate.kernels import serve_forward
from suanli.estimate.shapes import serving_shapes
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model


@pytest.mark.parametrize("rows", [1, 16, 4096])
def test_each_linear_gemm_pays_two_floors_or_its_bytes(rows: int) -> None:
    """The cast adds at least two element-wise floors per linear GEMM and no more than those
    floors plus 5 bytes an input element at the GEMMs' streaming rate; the LM head adds none."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "fp8")
    model = device.gemm_model
    shapes = serving_shapes(spec, "fused")
    kwargs = {
        "shapes": shapes,
        "num_layers": spec.num_layers,
        "hidden": spec.hidden_size,
        "vocab": spec.vocab_size,
        "rows": rows,
        "sequences": 1,
        "tp": 1,
        "weight_bytes": 1.0,
        "peak_flops": device.peak_flops,
        "bandwidth_bytes_per_s": device.memory_bytes_per_s,
        "model": model,
        "op_bytes": serving_op_bytes(spec, 1, kernels="fused"),
    }
    plain = serve_forward(**kwargs).gemm_s
    cast = serve_forward(**kwargs, activation_cast_bytes=FP8_CAST_BYTES["dynamic"]).gemm_s
    gemms = sum(s.count for s in shapes)
    assert gemms == 4 * spec.num_layers  # QKV, output, gate/up, down: the LM head is not there
    floors = 2 * model.small_op_s * gemms
    input_elements = sum(s.count * s.n_in for s in shapes) * rows
    streaming = 5 * input_elements / (device.memory_bytes_per_s * model.memory_efficiency)
    assert floors * (1 - 1e-9) <= cast - plain <= (floors + streaming) * (1 + 1e-9)


def test_only_fp8_weights_cast_their_activations() -> None:
    spec = load_model("llama-3.1-8b").spec
    h100 = find_gpu("h100", bundled_gpus())
    fp8 = inference_perf(spec, InferWork(weight_format="fp8"), device_for(h100, "fp8"), 512, 128)
    int8 = inference_perf(spec, InferWork(weight_format="int8"), device_for(h100, "bf16"), 512, 128)
    # int8 weights read as many bytes as fp8 ones (and a little slower, dequantized) but cast no
    # activations: at batch 1 the fp8 step is the slower by about the casts' floors
    floors = 2 * device_for(h100, "fp8").gemm_model.small_op_s * 4 * spec.num_layers
    assert fp8.tpot_s - int8.tpot_s > 0.5 * floors


def test_vectorized_planner_equals_the_scalar_path_with_fp8() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "fp8")
    batch, tp = [1, 8, 64], [1, 2, 4]
    result = vector.infer_speed(spec, "fp8", 2, batch, tp, 1024, 128, device, "fused")
    for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
        work = InferWork(batch=bval, tp=tval, context=1024 + 128, weight_format="fp8")
        scalar = inference_perf(spec, work, device, 1024, 128)
        assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
        assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)


def test_the_explanation_names_the_cast_only_for_fp8() -> None:
    def formula(quant: str) -> str:
        answer = perf(
            PerfRequest(
                model="llama-3.1-8b",
                work=WorkRequest(task="infer", quant=quant, framework="vllm"),
                gpu="h100",
            )
        )
        assert isinstance(answer, InferPerfAnswer)
        (term,) = [t for t in answer.terms if str(t.term) == "decode: GEMMs (weights streamed)"]
        return str(term.formula)

    assert "quantizes its input" in formula("fp8")
    assert "quantizes its input" not in formula("bf16")
