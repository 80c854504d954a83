"""The sentences the library writes (assumptions, line labels, formulas, term names, advice,
errors) reach a ``--lang zh`` view in Chinese, while ``--json`` stays English."""

from __future__ import annotations

import pytest

from suanli.i18n import N_, message_of, sentence

from .cli.test_cli import run

MEM = ("mem", "llama-3.1-8b", "--task", "full", "--gpu", "h100", "--explain")
PERF = (
    "perf",
    "llama-3.1-8b",
    "--task",
    "full",
    "--gpu",
    "h100",
    "--gpus",
    "8",
    "--tp",
    "2",
    "--pp",
    "2",
    "--explain",
)
PLAN = ("plan",)
COST = ("cost", "h100", "--gpus", "8", "--price", "25000", "--utilisation", "0.6")
COMPARE = ("compare", "llama-3.1-8b", "--task", "infer", "--devices", "h100,4090")


def _chinese(*args: str) -> str:
    out = run("--lang", "zh", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_mem_explain_shows_the_library_sentences_in_chinese() -> None:
    text = _chinese(*MEM)
    for zh in (
        "各层保存的激活",
        "可训练参数的梯度",
        "fp32 主权重（GPU）",
        "P_train × 2 个动量 x 4 B",
        "假设：混合精度：bf16 权重，fp32 主权重和优化器状态",
        "假设：注意力内核：sdpa；重算：",
        "注意力归一化：fp32 输入和 rsqrt",
    ):
        assert zh in text, zh
    for en in (
        "saved by the layers",
        "gradients of trainable parameters",
        "mixed precision:",
        "attention kernel:",
        "2 moments",
        "fp32 input and rsqrt",
    ):
        assert en not in text, en


def test_perf_explain_shows_assumptions_and_advice_in_chinese() -> None:
    text = _chinese(*PERF)
    for zh in (
        "假设：显存达到峰值带宽的 89%",
        "假设：flash/SDPA 内核跳过因果注意力中被掩码的一半",
        "假设：梯度归约与反向传播重叠 90%（分桶）",
        "改进：流水线气泡占每步的",
        "每步更多微批次（--grad-accum 4）",
    ):
        assert zh in text, zh
    for en in (
        "of peak bandwidth",
        "kernels for the non-matmul ops",
        "the pipeline bubble is",
        "more micro-batches per step",
        "GEMMs by shape",
    ):
        assert en not in text, en


def test_plan_cost_and_compare_speak_chinese() -> None:
    plan = _chinese(*PLAN)
    assert "可买或可租中最快：" in plan and "fastest to buy or rent:" not in plan
    assert "; ..." not in plan
    cost = _chinese(*COST)
    assert "buying is cheaper" not in cost and "renting saves" not in cost
    compare = _chinese(*COMPARE)
    assert "倍" in compare and "faster than" not in compare and "bandwidth-bound" not in compare


def test_errors_from_the_library_speak_chinese() -> None:
    out = run("--lang", "zh", "mem", "llama-3.1-8b", "--task", "full", "--tp", "3")
    assert out.returncode == 2
    assert out.stderr.startswith("错误：--tp 3 不能整除 llama-3.1-8b 的 32 个注意力头")
    assert "does not divide" not in out.stderr
    english = run("mem", "llama-3.1-8b", "--task", "full", "--tp", "3")
    assert "--tp 3 does not divide the 32 attention heads of llama-3.1-8b" in english.stderr


def test_sentence_translates_marked_library_templates() -> None:
    from suanli.units import dtype_bytes

    with pytest.raises(ValueError) as caught:
        dtype_bytes("fp13")
    message = message_of(caught.value)  # the sentence it was raised with: id and values
    assert message.startswith("unknown dtype 'fp13'; use one of fp64")
    assert sentence(message, "zh").startswith("未知的 dtype 'fp13'；请用 fp64")
    line = N_("{gpu_layers} of {layers} layers on the GPU; the rest in system memory").format(
        gpu_layers=20, layers=32
    )
    assert sentence(line, "zh") == "32 层中的 20 层在 GPU 上；其余在系统内存中"
    assert sentence(line, "en") == line


@pytest.mark.parametrize("args", [MEM, PERF, PLAN, COST, COMPARE])
def test_json_stays_identical(args: tuple[str, ...]) -> None:
    zh = run("--lang", "zh", *args, "--json")
    assert zh.returncode == 0, zh.stderr
    assert zh.stdout == run(*args, "--json").stdout
