"""--explain: every time term with its efficiency and source, adding up to the answer."""

from __future__ import annotations

import pytest

from suanli.answers.perf import InferPerfAnswer, PerfRequest, TrainPerfAnswer, perf
from suanli.answers.request import WorkRequest

from ..cli.test_cli import run


def test_training_terms_add_up_to_the_step() -> None:
    answer = perf(
        PerfRequest(
            "llama-3.1-8b",
            WorkRequest(task="full", gpus=16, tp=2, pp=2, zero=1, recompute="full"),
            gpu="h100",
        )
    )
    assert isinstance(answer, TrainPerfAnswer)
    assert sum(t.seconds for t in answer.terms) == pytest.approx(answer.step_time_s, rel=1e-9)
    names = [t.term for t in answer.terms]
    assert "pipeline bubble" in names and "communication: tensor_parallel" in names
    compute = answer.terms[0]
    assert "measured GEMMs" in compute.source and 0.5 < (compute.efficiency or 0) < 0.85
    assert all(t.source and t.formula for t in answer.terms)


@pytest.mark.parametrize("framework", ["vllm", "hf"])
def test_inference_terms_cover_the_decode_step(framework: str) -> None:
    """The GPU's decode terms add up to TPOT; under transformers' Python dispatch TPOT is the
    larger of them and the host's term."""
    req = WorkRequest(task="infer", batch=4, framework=framework)
    answer = perf(PerfRequest("llama-3.1-8b", req, gpu="h100"))
    assert isinstance(answer, InferPerfAnswer)
    decode = sum(t.seconds for t in answer.terms if t.term.startswith("decode"))
    host = [t.seconds for t in answer.terms if t.term.startswith("host")]
    assert bool(host) == (framework == "hf")
    assert max([decode, *host]) == pytest.approx(answer.tpot_s, rel=0.02)


def test_cli_explain_prints_each_term_and_json_carries_them() -> None:
    args = ("perf", "qwen2.5-0.5b", "--task", "full", "--gpu", "a100", "--gpus", "2")
    out = run(*args, "--explain")
    assert out.returncode == 0, out.stderr
    assert (
        "how each term is computed" in out.stdout and "communication: data_parallel" in out.stdout
    )
    doc = run(*args, "--json")
    import json

    terms = json.loads(doc.stdout)["terms"]
    assert {"term", "seconds", "efficiency", "source", "formula"} <= set(terms[0])


def test_explain_names_the_kernel_choices_it_made() -> None:
    """The attention kernel SDPA runs on Hopper, the fp8 scaling recipe and the serving engines'
    one-shot all-reduce are each said in the formula of the term they change."""
    train = perf(
        PerfRequest(
            "llama-3.1-8b",
            WorkRequest(
                task="pretrain",
                dtype="fp8",
                fp8_scaling="dynamic",
                gpus=8,
                zero=3,
                recompute="full",
                attention="sdpa",
            ),
            gpu="h100",
        )
    )
    assert isinstance(train, TrainPerfAnswer)
    formula = train.terms[0].formula
    assert "FlashAttention-2 backend" in formula and "pytorch/pytorch#142132" in formula
    assert "dynamic scaling: 5 bytes" in formula
    flash = perf(
        PerfRequest(
            "llama-3.1-8b",
            WorkRequest(task="pretrain", gpus=8, zero=3, recompute="full", attention="flash"),
            gpu="h100",
        )
    )
    assert "FlashAttention-2 backend" not in flash.terms[0].formula
    serve = perf(PerfRequest("llama-3.1-70b", WorkRequest(task="infer", tp=2, gpus=2), gpu="h100"))
    comm = [t for t in serve.terms if t.term.startswith("communication")]
    assert comm and "one-shot" in comm[0].formula and "sglang" in comm[0].formula
    a100 = perf(PerfRequest("llama-3.1-70b", WorkRequest(task="infer", tp=4, gpus=4), gpu="a100"))
    comm = [t for t in a100.terms if t.term.startswith("communication")]
    assert comm and "one-shot" in comm[0].formula and "aiconfigurator" in comm[0].formula
    # No one-shot kernel was measured over PCIe: NCCL.
    l40s = perf(PerfRequest("llama-3.1-8b", WorkRequest(task="infer", tp=2, gpus=2), gpu="l40s"))
    assert not any("one-shot" in t.formula for t in l40s.terms)


def test_memory_term_cites_the_bandwidth_measurement_and_gemm_formula_its_blend() -> None:
    """The element-wise term runs at the measured memory bandwidth (BabelStream on H100), not at
    the matmul ceiling's source; the GEMM formula states the blend the kernel fit uses (p = 2)."""
    answer = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", gpus=8), gpu="h100"))
    assert isinstance(answer, TrainPerfAnswer)
    memory = next(t for t in answer.terms if t.term.startswith("memory"))
    assert "BabelStream" in memory.source and "Matmul FLOPS" not in memory.source
    compute = answer.terms[0]
    assert "(t_c^p + t_m^p)^(1/p)" in compute.formula and "p = 2 " in compute.formula


def test_data_parallel_term_names_nvls_inside_an_h100_node_only() -> None:
    def dp_source(gpus: int) -> str:
        answer = perf(
            PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", gpus=gpus, zero=0), gpu="h100")
        )
        assert isinstance(answer, TrainPerfAnswer)
        return next(t.source for t in answer.terms if t.term == "communication: data_parallel")

    assert "NVLS" in dp_source(8)
    assert "NVLS" not in dp_source(16)
    assert "NVLS" not in dp_source(4)


def test_nvls_is_named_only_on_terms_that_run_all_reduces() -> None:
    """Pipeline sends and FSDP's reduce-scatter/all-gather inside an H100 node do not use NVLS:
    their terms do not mention it."""
    answer = perf(
        PerfRequest(
            "qwen2.5-7b",
            WorkRequest(task="full", gpus=8, pp=8, zero=0),
            gpu="h100",
            ignore_fit=True,
        )
    )
    assert isinstance(answer, TrainPerfAnswer)
    p2p = next(t for t in answer.terms if t.term == "communication: pipeline_p2p")
    assert "NVLS" not in p2p.source
    fsdp = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", gpus=8, zero=3), gpu="h100"))
    assert isinstance(fsdp, TrainPerfAnswer)
    dp = next(t for t in fsdp.terms if t.term == "communication: data_parallel")
    assert "NVLS" not in dp.source
