"""When Python dispatches every op (``--dispatch python``, Hugging Face ``generate()``), the host's
time to issue a forward pass is a floor under TTFT and TPOT (docs/speed.md, "When the CPU sets
the pace"). The op counts are recounted here from transformers' own code."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import host_dispatch as hd
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model
from tests.web_parity import infer_tpot_by_option

from ..scripts import load_script

bench = load_script("benchmarks/host_dispatch.py")


@pytest.mark.parametrize(
    ("arch", "model"),
    [("llama", "llama-3.1-8b"), ("qwen2", "qwen2.5-7b"), ("qwen3", "qwen3-8b")],
)
def test_the_counts_are_what_transformers_dispatches(arch: str, model: str) -> None:
    """Counted in the locked transformers' generate(): a changed count means the constants (and
    docs/speed.md) need updating on purpose."""
    counted = bench.count_step_ops(arch)
    kernels, views = hd.layer_ops(load_model(model).spec)
    assert (counted["layer_kernels"], counted["layer_views"]) == (kernels, views)
    # Outside the layers Llama counts the most (Qwen's rotary and mask need fewer): the
    # constant is the larger count, never below what the code dispatches.
    assert counted["step_kernels"] <= hd.STEP_KERNEL_OPS
    assert counted["step_views"] <= hd.STEP_VIEW_OPS
    if arch == "llama":
        assert (counted["step_kernels"], counted["step_views"]) == (
            hd.STEP_KERNEL_OPS,
            hd.STEP_VIEW_OPS,
        )


@pytest.mark.parametrize(
    ("arch", "model"),
    [
        ("qwen3_moe", "qwen3-30b-a3b"),
        ("mixtral", "mixtral-8x7b"),
        ("qwen2_moe", "qwen1.5-moe-a2.7b"),
    ],
)
def test_a_moe_layer_adds_its_routing_and_grouped_experts(arch: str, model: str) -> None:
    """Counted in transformers' own MoE layers (grouped expert GEMMs: the count does not grow with
    the experts a token picks); the constant is the mean of Qwen3-MoE's and Mixtral's, so within
    one kernel of each."""
    counted = bench.count_step_ops(arch)
    spec = load_model(model).spec
    kernels, views = hd.layer_ops(spec)
    moe_kernels, moe_views = hd.moe_layer_ops(spec)
    assert abs(counted["layer_kernels"] - (kernels + moe_kernels)) <= 1
    assert counted["layer_views"] == views + moe_views


def test_the_host_floor_grows_with_the_layers_and_the_norms() -> None:
    spec = load_model("qwen2.5-7b").spec
    deeper = replace(spec, num_layers=spec.num_layers * 2)
    assert hd.python_step_s(deeper) > hd.python_step_s(spec)
    # Query and key norms: 16 more kernel launches a layer.
    normed = replace(spec, attention=replace(spec.attention, qk_norm=True))
    extra = hd.python_step_s(normed) - hd.python_step_s(spec)
    # Each extra kernel op: the measured layer's average op on the CPU path plus one launch.
    per_op = hd.LAYER_CPU_S / (hd.LAYER_KERNEL_OPS + hd.LAYER_VIEW_OPS) + hd.LAUNCH_EXTRA_S
    assert extra == pytest.approx(16 * spec.num_layers * per_op, rel=1e-9)
    # A launch on a GPU never costs the host less than the CPU path of the same op.
    assert hd.LAUNCH_EXTRA_S > 0
    assert hd.host_step_s(spec, "engine") == 0.0


A100 = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
MODELS = ["qwen2.5-0.5b", "llama-3.1-8b", "qwen3-8b", "mixtral-8x7b", "llama-3.1-70b", "gpt2"]


def test_python_dispatch_is_a_floor_never_a_speed_up() -> None:
    """On random models, batches and prompts: Python dispatch never makes a step faster, TPOT
    never falls below the host's time, and where the GPU is slower nothing changes."""
    rng = random.Random(41)
    for _ in range(60):
        spec = load_model(rng.choice(MODELS)).spec
        batch, prompt = rng.choice([1, 4, 32, 256]), rng.choice([1, 128, 4096])
        engine = InferWork(batch=batch, context=prompt + 64)
        python = replace(engine, dispatch="python")
        a = inference_perf(spec, engine, A100, prompt, 64)
        b = inference_perf(spec, python, A100, prompt, 64)
        host = hd.python_step_s(spec)
        assert b.tpot_s >= a.tpot_s and b.ttft_s >= a.ttft_s
        assert b.tpot_s >= host and b.ttft_s >= host
        if a.tpot_s - a.breakdown_s["communication"] >= host:
            assert b.tpot_s == pytest.approx(a.tpot_s)


def test_a_small_model_in_generate_is_host_bound() -> None:
    """Qwen2.5-0.5B on an A100: the GPU streams a token in about 1 ms, the host needs 24 layers x
    (490 + 40 x 6.4) us + 620 us + 35-50 kernels x 6.4 us, about 19 ms: the host sets the pace."""
    spec = load_model("qwen2.5-0.5b").spec
    work = InferWork(dispatch="python", context=2048)
    result = inference_perf(spec, work, A100, 1024, 64)
    assert result.tpot_s == pytest.approx(hd.python_step_s(spec))
    assert 0.017 < result.tpot_s < 0.021
    assert result.breakdown_s["host_dispatch"] == result.tpot_s


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("llama-3.1-8b").spec
    batch, tp = [1, 8, 64], [1, 2, 4]
    for dispatch in ("engine", "python"):
        result = vector.infer_speed(
            spec, "bf16", 2, batch, tp, 1024, 128, A100, "separate", "eager", dispatch
        )
        for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
            work = InferWork(
                batch=bval, tp=tval, context=1152, projections="separate", dispatch=dispatch
            )
            scalar = inference_perf(spec, work, A100, 1024, 128)
            assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
            assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)
    assert np.all(np.isfinite(result["tpot_s"]))


def test_the_hf_framework_dispatches_from_python_and_says_so() -> None:
    """transformers (the default framework) sets --dispatch python and --explain shows the
    host's term; vLLM keeps the engine's launches; an explicit choice wins (on the command line
    any --dispatch given; in the API the options named in ``explicit``)."""

    def answer(**options: str) -> InferPerfAnswer:
        result = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="infer", **options), gpu="a100"))
        assert isinstance(result, InferPerfAnswer)
        return result

    hf, vllm = answer(), answer(framework="vllm")
    hf_engine = perf(
        PerfRequest(
            "qwen2.5-0.5b",
            WorkRequest(task="infer", dispatch="engine", explicit=("dispatch",)),
            gpu="a100",
        )
    )
    assert isinstance(hf_engine, InferPerfAnswer)
    assert any(t.term.startswith("host: Python dispatch") for t in hf.terms)
    assert not any(t.term.startswith("host:") for t in vllm.terms)
    assert not any(t.term.startswith("host:") for t in hf_engine.terms)
    assert hf.tpot_s > 3 * vllm.tpot_s
    assert hf_engine.tpot_s < hf.tpot_s


def test_a_bad_dispatch_is_one_sentence_and_exit_2() -> None:
    result = CliRunner().invoke(
        main, ["perf", "llama-3.1-8b", "--task", "infer", "--dispatch", "graphs"]
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "engine" in result.output and "python" in result.output
    with pytest.raises(ValueError, match="--dispatch 'graphs' is not one of"):
        InferWork(dispatch="graphs")


def test_the_web_api_takes_the_dispatch_and_refuses_a_bad_one() -> None:
    tpot, bad = infer_tpot_by_option("dispatch", ("engine", "python"), "graphs")
    assert tpot["python"] >= tpot["engine"]
    assert 400 <= bad.status_code < 500
    message = bad.json()["error"]
    assert "dispatch" in message and "python" in message and "\n" not in message


def test_the_host_measurement_runs_and_is_consistent() -> None:
    """The benchmark's CPU-path measurement of the real decode step: a layer costs far more than
    its 76 ops through torch's bindings (the Python around them), and a 10-layer model more than
    a 2-layer one; the constants the estimate takes are of the same order as what it measures
    (a different, busier machine may read up to 3x either way)."""
    measured = bench.cpu_path(trials=1, repeats=5)
    assert measured["layer_s"] > 0 and measured["add_s"] > 0
    assert measured["layer_s"] > 76 * measured["add_s"]
    assert hd.LAYER_CPU_S / 3 < measured["layer_s"] < 3 * hd.LAYER_CPU_S
