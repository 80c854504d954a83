"""A serving engine's element-wise kernels (``--kernels`` for ``--task infer``): vLLM and SGLang
run each residual add inside the next RMSNorm (``fused_add_rms_norm``), torch.compile fuses the
add into the norm's reduction; transformers' eager code and the measured Sarathi-Serve ops (the
profile behind the floors) run them apart. Same bytes, one kernel floor fewer per add."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.answers.request import apply_framework
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.inference import inference_perf
from suanli.estimate.kernels import serving_ops_seconds
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model
from tests.web_parity import infer_tpot_by_option


def _device(gpu: str = "a100"):  # type: ignore[no-untyped-def]
    return device_for(find_gpu(gpu, bundled_gpus()), "bf16")


@pytest.mark.parametrize("model", ["llama-3.1-8b", "gpt2", "mixtral-8x7b"])
@pytest.mark.parametrize("rows", [1, 16, 512, 8192, 65536])
def test_fusing_never_costs_time_and_saves_at_most_two_floors_a_layer(model: str, rows: int):
    spec = load_model(model).spec
    device = _device()
    bw = device.memory_bytes_per_s
    eager = serving_ops_seconds(
        serving_op_bytes(spec, 1), rows, spec.num_layers, bw, device.gemm_model
    )
    fused = serving_ops_seconds(
        serving_op_bytes(spec, 1, kernels="fused"), rows, spec.num_layers, bw, device.gemm_model
    )
    assert fused <= eager
    assert eager - fused <= 2 * spec.num_layers * device.gemm_model.small_op_s * (1 + 1e-9)


def test_at_one_token_the_fused_layer_pays_four_floors_instead_of_six() -> None:
    """Decode at batch 1: every element-wise kernel is below its floor, so the count decides."""
    spec = load_model("llama-3.1-8b").spec
    device = _device()
    floor = device.gemm_model.small_op_s
    bw = device.memory_bytes_per_s
    for kernels, count in (("eager", 6), ("fused", 4), ("compiled", 4)):
        ops = serving_op_bytes(spec, 1, kernels=kernels)
        seconds = serving_ops_seconds(ops, 1, spec.num_layers, bw, device.gemm_model)
        assert seconds == pytest.approx(count * spec.num_layers * floor, rel=1e-9)


def test_long_prompts_are_bandwidth_bound_and_fusion_changes_nothing() -> None:
    """No fused add+norm kernel is measured: the fusion is credited with the launch it saves,
    not with a better bandwidth, so a 64k-token prefill takes the same element-wise time."""
    spec = load_model("llama-3.1-8b").spec
    device = _device("h100")
    bw = device.memory_bytes_per_s
    args = (65536, spec.num_layers, bw, device.gemm_model)
    eager = serving_ops_seconds(serving_op_bytes(spec, 1), *args)
    fused = serving_ops_seconds(serving_op_bytes(spec, 1, kernels="fused"), *args)
    assert fused == pytest.approx(eager, rel=1e-12)


def test_decode_tpot_drops_by_the_floors_saved() -> None:
    spec = load_model("llama-2-7b").spec
    device = _device()
    eager = inference_perf(spec, InferWork(), device, 5, 100)
    fused = inference_perf(spec, InferWork(kernels="compiled"), device, 5, 100)
    saved = 2 * spec.num_layers * device.gemm_model.small_op_s
    assert eager.tpot_s - fused.tpot_s == pytest.approx(saved, rel=1e-6)
    assert fused.decode_flops_per_token == eager.decode_flops_per_token


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = _device("h100")
    batch, tp = [1, 8, 64], [1, 2, 4]
    for kernels in ("eager", "fused"):
        result = vector.infer_speed(spec, "bf16", 2, batch, tp, 1024, 128, device, "fused", kernels)
        for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
            work = InferWork(batch=bval, tp=tval, context=1024 + 128, kernels=kernels)
            scalar = inference_perf(spec, work, device, 1024, 128)
            assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
            assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)


@pytest.mark.parametrize("framework", ["vllm", "sglang"])
def test_vllm_and_sglang_fuse_unless_told_otherwise(framework: str) -> None:
    applied = apply_framework(WorkRequest(task="infer", framework=framework))
    assert applied.kernels == "fused"
    explicit = apply_framework(
        WorkRequest(task="infer", framework=framework, kernels="eager", explicit=("kernels",))
    )
    assert explicit.kernels == "eager"
    answer = perf(
        PerfRequest("llama-3.1-8b", WorkRequest(task="infer", framework=framework), "a100")
    )
    assert isinstance(answer, InferPerfAnswer)
    term = next(t for t in answer.terms if t.term.startswith("decode: element-wise"))
    assert term.formula.startswith("4 kernels per layer")
    # The answer says which of its defaults the framework set (the JSON carries them too).
    assert any("kernels = fused" in line for line in answer.assumptions)
    assert any("kernels = fused" in line for line in answer.to_json()["assumptions"])


def test_tensorrt_llm_and_llama_cpp_keep_one_kernel_per_op() -> None:
    """Neither engine's fusion of the residual add is established here: they keep the six."""
    for framework in ("tensorrt-llm", "llama.cpp"):
        assert apply_framework(WorkRequest(task="infer", framework=framework)).kernels == "eager"


def test_a_bad_kernel_class_is_one_sentence_and_exit_2() -> None:
    result = CliRunner().invoke(
        main, ["perf", "llama-3.1-8b", "--task", "infer", "--kernels", "triton"]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "compiled" in result.output
    with pytest.raises(ValueError, match="kernels"):
        InferWork(kernels="triton")


def test_the_web_api_takes_the_kernel_class_for_inference() -> None:
    """One answer, many views: the API's TPOT for each class is the library's."""
    tpot, bad = infer_tpot_by_option("kernels", ("eager", "fused"), "triton")
    assert tpot["fused"] < tpot["eager"]
    assert 400 <= bad.status_code < 500


@pytest.mark.parametrize(("model", "eager", "fused"), [("gpt2", 5, 3), ("llama-3.1-8b", 6, 4)])
def test_capacitys_floor_counts_the_engines_kernels(model: str, eager: int, fused: int) -> None:
    """`capacity` pays one element-wise floor per kernel the engine runs, as perf counts them:
    with the add fused into the norm two fewer a layer (GPT-2 has no rotary kernel)."""
    import dataclasses

    from suanli.estimate.serving.timing import kernel_floor_s

    spec = load_model(model).spec
    device = _device("h100")
    gemm = device.gemm_model
    no_floor = dataclasses.replace(device, gemm=dataclasses.replace(gemm, small_op_s=0.0))
    for kernels, per_layer in (("eager", eager), ("fused", fused), ("compiled", fused)):
        small = kernel_floor_s(spec, device, kernels) - kernel_floor_s(spec, no_floor, kernels)
        assert small == pytest.approx(spec.num_layers * per_layer * gemm.small_op_s)


def test_capacity_with_vllm_fuses_unless_told_otherwise() -> None:
    from suanli.answers.capacity import CapacityRequest, engine_config, with_engine_defaults

    for framework, kernels in (("vllm", "fused"), ("sglang", "fused"), ("tensorrt-llm", "eager")):
        req = with_engine_defaults(
            CapacityRequest(model="llama-3.1-8b", rate=2.0, gpu="h100", framework=framework)
        )
        assert engine_config(req).kernels == kernels
    explicit = with_engine_defaults(
        CapacityRequest(
            model="llama-3.1-8b",
            rate=2.0,
            gpu="h100",
            framework="vllm",
            kernels="eager",
            explicit=("kernels",),
        )
    )
    assert explicit.kernels == "eager"


def test_capacitys_bad_kernel_class_is_one_sentence_and_exit_2() -> None:
    result = CliRunner().invoke(
        main, ["capacity", "llama-3.1-8b", "--gpu", "h100", "--rate", "2", "--kernels", "triton"]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "compiled" in result.output
