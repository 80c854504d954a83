"""Errors the catalog and model readers raise, through the CLI: one "错误：" line in Chinese with
``--lang zh`` (the values — GPU names, paths, ids — kept as typed), the same English as before
without it, and exit code 2 either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cli.test_cli import run


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _check(args: list[str], english: str, chinese: list[str]) -> None:
    """``args`` fail with ``english`` (whole line) and, with --lang zh, a line holding every
    piece of ``chinese``."""
    out = run(*args)
    assert out.returncode == 2, out.stderr
    assert _error_line(out.stderr) == f"error: {english}"
    zh = run("--lang", "zh", *args)
    assert zh.returncode == 2, zh.stderr
    line = _error_line(zh.stderr)
    assert line.startswith("错误："), line
    for piece in chinese:
        assert piece in line, (piece, line)
    assert "error:" not in line


def test_unknown_gpu() -> None:
    _check(
        ["mem", "llama-3.1-8b", "--gpu", "nosuchgpu"],
        "unknown GPU 'nosuchgpu'; run 'suanli gpus' to list the catalog",
        ["未知的显卡 'nosuchgpu'", "运行 'suanli gpus' 查看显卡目录"],
    )


def test_unknown_gpu_with_a_suggestion() -> None:
    _check(
        ["mem", "llama-3.1-8b", "--gpu", "4090x"],
        "unknown GPU '4090x' (did you mean rtx-4090-24gb?); run 'suanli gpus' to list the catalog",
        ["未知的显卡 '4090x'", "您是指 rtx-4090-24gb 吗？"],
    )


def test_unknown_model() -> None:
    out = run("mem", "nosuchmodel", "--gpu", "h100")
    assert out.returncode == 2
    assert _error_line(out.stderr).startswith("error: unknown model 'nosuchmodel': not a preset")
    zh = run("--lang", "zh", "mem", "nosuchmodel", "--gpu", "h100")
    assert zh.returncode == 2
    line = _error_line(zh.stderr)
    assert line.startswith("错误：未知的模型 'nosuchmodel'：它不是预设模型"), line
    assert "'suanli models' 列出全部" in line and "也不是 hub id org/name" in line


def test_malformed_config_json(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": ', encoding="utf-8")
    _check(
        ["mem", str(config), "--gpu", "h100"],
        f"{config} is not valid JSON (line 1: Expecting value); fix or re-download it",
        [str(config), "不是有效的 JSON（第 1 行：Expecting value）", "请修正或重新下载"],
    )


def test_config_json_that_is_not_an_object(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps([1, 2]), encoding="utf-8")
    _check(
        ["mem", str(config), "--gpu", "h100"],
        f"{config} must hold a JSON object with the model's config",
        [str(config), "必须是包含模型配置的 JSON 对象"],
    )


@pytest.mark.parametrize(
    ("data", "english", "chinese"),
    [
        (
            b"XXXXjunk",
            "{path} is not a GGUF file (no 'GGUF' magic at its start)",
            ["不是 GGUF 文件", "'GGUF' 魔数"],
        ),
        (
            b"GGUF\x07\x00\x00\x00",
            "{path}: GGUF version 7 is not supported (2 and 3 are)",
            ["不支持 GGUF 版本 7", "支持 2 和 3"],
        ),
        (
            b"GGUF\x03\x00",
            "{path}: the header ends early; the file is truncated",
            ["文件头提前结束", "文件被截断了"],
        ),
    ],
)
def test_bad_gguf_file(tmp_path: Path, data: bytes, english: str, chinese: list[str]) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(data)
    _check(
        ["mem", str(path), "--gpu", "h100"],
        english.format(path=path),
        [str(path), *chinese],
    )


def test_unknown_weight_format() -> None:
    out = run("mem", "llama-3.1-8b", "--gpu", "h100", "--task", "infer", "--quant", "q9_k")
    assert out.returncode == 2
    assert _error_line(out.stderr).startswith("error: unknown weight format 'q9_k'; use one of ")
    zh = run(
        "--lang", "zh", "mem", "llama-3.1-8b", "--gpu", "h100", "--task", "infer", "--quant", "q9_k"
    )
    assert zh.returncode == 2
    line = _error_line(zh.stderr)
    assert line.startswith("错误：未知的权重格式 'q9_k'；可选："), line
    assert "gguf-q4_k_m" in line


def test_bad_gguf_bits_format() -> None:
    _check(
        ["mem", "llama-3.1-8b", "--gpu", "h100", "--task", "infer", "--quant", "gguf-bits-99"],
        "weight format 'gguf-bits-99': the bits per weight must be 1 to 64",
        ["权重格式 'gguf-bits-99'", "每个权重的位数必须在 1 到 64 之间"],
    )


def test_unknown_framework_and_sort_field() -> None:
    out = run("--lang", "zh", "mem", "llama-3.1-8b", "--gpu", "h100", "--framework", "nosuch")
    assert out.returncode == 2
    line = _error_line(out.stderr)
    assert line.startswith("错误：框架 'nosuch' 不在 hf, megatron"), line
    assert "（suanli frameworks 列出全部）" in line
    out = run("--lang", "zh", "gpus", "--sort", "bogus")
    assert out.returncode == 2
    assert _error_line(out.stderr).startswith("错误：无法按 'bogus' 排序；可选 memory, bandwidth")
