"""No speed for a job that cannot run: memory and precision are checked first (issue 15)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest

from suanli.answers.compare import CompareRequest, compare
from suanli.answers.perf import InferPerfAnswer, PerfRequest, TrainPerfAnswer, perf
from suanli.answers.plan import PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.answers.validity import card_precisions, precision_problem
from suanli.catalog import find_gpu, load_catalog
from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.models.resolve import load_model

from ..cli.test_cli import run

GiB = 2**30


def _gpu(name: str):  # type: ignore[no-untyped-def]
    return find_gpu(name, load_catalog())


def test_a_job_that_does_not_fit_is_refused_with_the_fit_command() -> None:
    # Full fine-tuning of a 70B model with AdamW holds ~16 bytes per parameter: > 1 TB.
    with pytest.raises(ValueError) as err:
        perf(PerfRequest("llama-3.1-70b", WorkRequest(task="full"), gpu="4090"))
    message = str(err.value)
    spec = load_model("llama-3.1-70b").spec
    need = training_memory(spec, TrainWork(task="full")).total_bytes
    assert f"{need / GiB:,.1f} GiB" in message and "has 24 GiB" in message
    assert "suanli fit llama-3.1-70b" in message and "--ignore-fit" in message


def test_the_cli_refuses_in_one_line_and_its_fit_command_runs() -> None:
    out = run("perf", "llama-3.1-70b", "--task", "full", "--gpu", "4090")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    command = out.stderr.split("run '", 1)[1].split("'", 1)[0]
    args = shlex.split(command)
    assert args[:2] == ["suanli", "fit"]
    fit = run(*args[1:], "--json")
    assert fit.returncode == 0, fit.stderr
    assert json.loads(fit.stdout)["gpu"] == "rtx-4090-24gb"


@pytest.mark.parametrize("kernels", ["fused", "compiled"])
def test_the_fit_command_keeps_the_kernels_that_change_the_memory(kernels: str) -> None:
    """Fused and compiled kernels save fewer tensors: the suggested `suanli fit` must measure
    the same job, not its eager twin."""
    out = run(
        "perf", "llama-3.1-8b", "--task", "full", "--seq", "8192", "--gpu", "4090",
        "--kernels", kernels, "--recompute", "none",
    )  # fmt: skip
    assert out.returncode == 2
    command = out.stderr.split("run '", 1)[1].split("'", 1)[0]
    assert f"--kernels {kernels}" in command
    spec = load_model("llama-3.1-8b").spec
    # Without recomputation (with full, the layers keep only their inputs, whatever the kernels).
    work = TrainWork(task="full", seq=8192, recompute="none")
    same = training_memory(spec, replace(work, kernels=kernels)).total_bytes
    eager = training_memory(spec, work).total_bytes
    assert same < eager
    assert f"{same / GiB:,.1f} GiB" in out.stderr


def test_ignore_fit_gives_the_hypothetical_marked() -> None:
    answer = perf(
        PerfRequest("llama-3.1-70b", WorkRequest(task="full"), gpu="4090", ignore_fit=True)
    )
    assert isinstance(answer, TrainPerfAnswer)
    assert answer.fits is False and answer.supported is True
    assert answer.memory_bytes > answer.gpu_memory_bytes == _gpu("4090").memory_bytes
    doc = answer.to_json()
    assert doc["fits"] is False and doc["warnings"] and doc["tokens_per_s"] > 0
    out = run("perf", "llama-3.1-70b", "--task", "full", "--gpu", "4090", "--ignore-fit")
    assert out.returncode == 0 and "does NOT fit" in out.stdout


def test_a_job_that_fits_says_so() -> None:
    answer = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full"), gpu="h100"))
    assert answer.fits and answer.supported and answer.warnings == ()
    assert 0 < answer.memory_bytes <= answer.gpu_memory_bytes


@pytest.mark.parametrize(
    ("gpu", "dtype", "offered"),
    [
        ("a100", "fp8", "bf16"),  # Ampere: no fp8 tensor cores
        ("t4", "bf16", "fp16"),  # Turing: fp16 only
        ("v100", "bf16", "fp16"),  # Volta: fp16 only
    ],
)
def test_precisions_the_card_lacks_are_refused(gpu: str, dtype: str, offered: str) -> None:
    problem = precision_problem(_gpu(gpu), dtype)
    assert problem is not None and f"no {dtype}" in problem and f"--dtype {offered}" in problem
    with pytest.raises(ValueError, match=f"no {dtype} tensor units"):
        perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="lora", dtype=dtype), gpu=gpu))


@pytest.mark.parametrize(
    ("gpu", "dtype"), [("h100", "fp8"), ("4090", "fp8"), ("mi300x", "fp8"), ("t4", "fp16")]
)
def test_precisions_the_card_has_are_accepted(gpu: str, dtype: str) -> None:
    assert precision_problem(_gpu(gpu), dtype) is None
    assert dtype in card_precisions(_gpu(gpu))


def test_the_batch_sweep_stops_at_the_largest_batch_that_fits() -> None:
    # Llama-3.1-8B in bf16 on a 16 GB T4 leaves room for only a few 4k-token sequences.
    answer = perf(PerfRequest("llama-3.1-8b", WorkRequest(task="infer", quant="int8"), gpu="t4"))
    assert isinstance(answer, InferPerfAnswer)
    largest = answer.largest_batch
    batches = [p.batch for p in answer.batch_sweep]
    assert 0 < largest < 256 and batches[-1] == largest and all(b <= largest for b in batches)
    spec = load_model("llama-3.1-8b").spec
    t4 = _gpu("t4").memory_bytes

    def need(batch: int) -> float:
        work = InferWork(batch=batch, context=1024 + 256, weight_format="int8")
        return inference_memory(spec, work).total_bytes

    # Independent check: the next batch needs more than the card has, this one does not.
    assert need(largest + 1) > t4 * 0.9 and need(largest) <= t4


def test_plans_never_rank_a_card_without_the_precision() -> None:
    answer = plan(
        PlanRequest(
            "qwen2.5-0.5b",
            WorkRequest(dtype="fp8"),
            task="full",
            gpus=("a100", "h100", "t4"),
            max_gpus=1,
        )
    )
    by_gpu = {r.gpu: r for r in answer.rows}
    assert by_gpu["h100-sxm-80gb"].fits and answer.rows[0].gpu == "h100-sxm-80gb"
    for gpu in ("a100-sxm-80gb", "t4-16gb"):
        assert not by_gpu[gpu].fits and "no fp8" in by_gpu[gpu].reason


def test_compare_marks_what_cannot_run() -> None:
    answer = compare(
        CompareRequest("llama-3.1-8b", WorkRequest(task="full"), devices=("h100", "4090"))
    )
    rows = {r.device: r for r in answer.rows}
    assert rows["rtx-4090-24gb"].fits is False and rows["rtx-4090-24gb"].warnings
    assert rows["h100-sxm-80gb"].fits is False  # 8B full with AdamW: ~130 GB on one card


def test_tf32_is_an_explicit_choice_for_fp32_training() -> None:
    """fp32 storage, TF32 tensor cores (Ampere and later): same memory, a faster multiply."""
    fp32 = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", dtype="fp32"), gpu="a100"))
    tf32 = perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", dtype="tf32"), gpu="a100"))
    assert tf32.memory_bytes == fp32.memory_bytes
    assert tf32.step_time_s < 0.6 * fp32.step_time_s  # 156 vs 19.5 TFLOP/s peaks
    with pytest.raises(ValueError, match="tf32"):
        perf(PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", dtype="tf32"), gpu="t4"))
