"""``--framework``: the catalog's defaults are valid options, apply only where the user is
silent, and refuse a task the framework cannot run."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from suanli.answers.frameworks import framework_list
from suanli.answers.memory import MemoryRequest, memory
from suanli.answers.options import WORK_OPTIONS
from suanli.answers.request import WorkRequest, apply_framework, build_work
from suanli.catalog.frameworks import frameworks, get_framework
from suanli.estimate.workload import InferWork, TrainWork

from ..cli.test_cli import run

OPTIONS = {f.name for f in fields(WorkRequest)}


@pytest.mark.parametrize("fw", frameworks(), ids=lambda f: f.id)
def test_every_default_is_an_option_with_a_source(fw) -> None:  # type: ignore[no-untyped-def]
    assert fw.version and fw.source
    for d in fw.defaults:
        assert d.option in OPTIONS, d.option
        assert d.why and d.source


@pytest.mark.parametrize("fw", frameworks(), ids=lambda f: f.id)
def test_every_framework_builds_a_valid_workload(fw) -> None:  # type: ignore[no-untyped-def]
    """Each task the framework runs (transformers trains and generates) builds, with every
    default that task takes applied: the inference ones only for inference."""
    tasks = ["infer"] if fw.kind == "serve" else ["full", "infer"] if fw.serves() else ["full"]
    for task in tasks:
        work = build_work(WorkRequest(task=task, framework=fw.id, gpus=2))
        assert isinstance(work, InferWork if task == "infer" else TrainWork)
        applied = apply_framework(WorkRequest(task=task, framework=fw.id, gpus=2))
        for d in fw.defaults:
            option = WORK_OPTIONS[d.option]
            if d.value != "gpus" and (task in option.tasks):
                assert getattr(applied, d.option) == d.value, (task, d.option)


def test_aliases_and_case() -> None:
    assert get_framework("NeMo").id == "megatron"
    assert get_framework("trtllm").id == "tensorrt-llm"
    with pytest.raises(ValueError, match="suanli frameworks"):
        get_framework("caffe")


def test_the_users_options_win() -> None:
    req = WorkRequest(task="full", framework="torchtune", recompute="none", explicit=("recompute",))
    work = build_work(req)
    assert isinstance(work, TrainWork)
    assert work.recompute == "none"  # the user's, though torchtune checkpoints by default
    assert work.loss == "chunked" and work.precision == "pure"  # the framework's


def test_api_without_explicit_treats_changed_fields_as_set() -> None:
    work = build_work(WorkRequest(task="lora", framework="torchtune", lora_rank=64))
    assert isinstance(work, TrainWork)
    assert work.lora_rank == 64 and work.recompute == "full"


def test_serving_framework_refuses_training_and_back() -> None:
    with pytest.raises(ValueError, match="serves models"):
        build_work(WorkRequest(task="lora", framework="vllm"))
    with pytest.raises(ValueError, match="trains models"):
        build_work(WorkRequest(task="infer", framework="megatron"))


def test_llama_cpp_splits_layers_over_the_gpus() -> None:
    work = build_work(WorkRequest(task="infer", framework="llama.cpp", gpus=4))
    assert isinstance(work, InferWork)
    assert (work.tp, work.pp, work.context, work.kv_dtype) == (1, 4, 4096, "fp16")


def test_framework_changes_the_memory_answer_and_says_why() -> None:
    base = WorkRequest(task="full", batch=2, seq=4096)
    hf = memory(MemoryRequest(model="llama-3.2-3b", work=base))
    tune = memory(
        MemoryRequest(
            model="llama-3.2-3b",
            work=WorkRequest(task="full", batch=2, seq=4096, framework="torchtune"),
        )
    )
    assert tune.total_bytes < 0.6 * hf.total_bytes  # checkpointing, chunked loss, pure bf16
    assert any("torchtune" in a and "loss = chunked" in a for a in tune.assumptions)
    assert not any("torchtune" in a for a in hf.assumptions)


def test_list_answer_and_cli() -> None:
    doc = framework_list().to_json()
    ids = [f["id"] for f in doc["frameworks"]]
    assert {
        "hf",
        "megatron",
        "deepspeed",
        "torchtitan",
        "torchtune",
        "unsloth",
        "vllm",
        "sglang",
        "tensorrt-llm",
        "llama.cpp",
        "ollama",
    } <= set(ids)
    assert len(framework_list("ollama").frameworks) == 1
    out = run("frameworks", "torchtitan")
    assert out.returncode == 0 and "recompute" in out.stdout and "op" in out.stdout
    bad = run("frameworks", "caffe")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr + bad.stdout


def test_cli_flag_given_beats_framework_even_at_its_default_value() -> None:
    """On the command line, an option typed at its default value still counts as set."""
    args = ("mem", "llama-3.2-3b", "--task", "full", "--framework", "torchtune", "--json")
    plain = run(*args)
    forced = run(*args, "--recompute", "none")
    assert plain.returncode == 0 and forced.returncode == 0
    assert json.loads(forced.stdout)["total_bytes"] > json.loads(plain.stdout)["total_bytes"]


def test_capacity_takes_a_serving_engines_scheduler() -> None:
    from suanli.answers.capacity import CapacityRequest, with_engine_defaults

    base = CapacityRequest(model="llama-3.1-8b", gpu="h100", rate=5.0, requests=200)
    vllm = with_engine_defaults(replace(base, framework="vllm"))
    assert (vllm.policy, vllm.max_batched_tokens, vllm.gpu_memory_utilization) == (
        "chunked",
        2048,
        0.92,
    )
    trt = with_engine_defaults(replace(base, framework="trtllm"))
    assert (trt.kv_policy, trt.max_batch) == ("reserve", 2048)
    # The user's own option wins, even at suanli's default value, when they say they set it.
    mine = with_engine_defaults(
        replace(base, framework="vllm", policy="continuous", explicit=("policy",))
    )
    assert mine.policy == "continuous"
    with pytest.raises(ValueError, match="capacity plans serving"):
        with_engine_defaults(replace(base, framework="megatron"))
    assert with_engine_defaults(base) is base


def test_capacity_cli_framework() -> None:
    out = run(
        "capacity",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--rate",
        "5",
        "--requests",
        "200",
        "--framework",
        "vllm",
        "--policy",
        "static",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["policy"] == "static"
    bad = run("capacity", "llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--framework", "tune")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_fit_offers_the_frameworks_techniques_and_its_settings() -> None:
    from suanli.answers.fit import FitAnswer, FitRequest, fit

    def chain(framework: str, task: str, seq: int) -> FitAnswer:
        return fit(
            FitRequest(
                model="llama-3.1-8b",
                gpu="rtx4090",
                work=WorkRequest(task=task, seq=seq, framework=framework),
            )
        )

    # A long-context LoRA: the saved activations are what does not fit.
    tune = chain("torchtune", "lora", 32768)
    changes = " ".join(s.change for s in tune.steps)
    assert "activation offloading" in changes
    assert all(s.saved_bytes > 0 for s in tune.steps)  # a step that saves nothing is not taken
    assert "enable_activation_offloading: True" in tune.framework_settings
    # A full fine-tune on one card: the gradients outweigh the activations, so torchtune's
    # optimizer-in-backward is what helps; recomputation alone saves nothing there.
    full = chain("torchtune", "full", 2048)
    assert any("optimizer step in the backward" in s.change for s in full.steps)
    assert full.fits
    hf = chain("hf", "lora", 32768)
    hf_changes = " ".join(s.change for s in hf.steps)
    # Hugging Face's Trainer has no activation offloading or optimizer-in-backward switch.
    assert "activation offloading" not in hf_changes
    assert "optimizer step in the backward" not in hf_changes


def test_offloading_costs_speed() -> None:
    from suanli.answers.perf import PerfRequest, TrainPerfAnswer, perf

    def speed(**options: object) -> float:
        answer = perf(
            PerfRequest(
                model="llama-3.1-8b",
                gpu="rtx4090",
                work=WorkRequest(task="full", recompute="full", **options),  # type: ignore[arg-type]
                ignore_fit=True,
            )
        )
        assert isinstance(answer, TrainPerfAnswer)
        return answer.tokens_per_s

    base = speed()
    # The optimizer steps on the desktop CPU (tens of GB/s, not a terabyte) and the weights come
    # back over PCIe every step: far slower, never free.
    assert speed(offload_optimizer=True) < 0.7 * base
    # Checkpointed layer inputs are small: their copies hide behind the matmuls.
    assert speed(activation_offload=True) == pytest.approx(base, rel=0.02)


def test_the_serving_hint_names_every_serving_framework_of_the_catalog() -> None:
    """The hint is built from frameworks.toml, not a hand list (one had lost ollama)."""
    from suanli.answers.request import WorkRequest, apply_framework
    from suanli.catalog.frameworks import frameworks

    with pytest.raises(ValueError, match="trains models") as caught:
        apply_framework(WorkRequest(task="infer", framework="megatron"))
    serving = [f.id for f in frameworks() if f.kind == "serve"]
    assert "ollama" in serving
    for framework in serving:
        assert framework in str(caught.value)
