"""capacity, model, models, stencil, frameworks, the image tables, serve, bench and verify speak
Chinese with --lang zh, and their --json stays the English run's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.i18n import set_lang

from .cli.test_cli import run

CAPACITY_SIM = ("capacity", "llama-3.1-8b", "--gpu", "h100", "--rate", "20", "--requests", "200")
CAPACITY_PLAN = (
    "capacity",
    "llama-3.1-8b",
    "--rate",
    "20",
    "--slo-ttft",
    "1",
    "--slo-tpot",
    "0.05",
    "--requests",
    "200",
    "--top",
    "3",
)
IMAGE = ("perf", "sdxl", "--task", "generate-image", "--gpu", "4090")


def _chinese(*args: str) -> str:
    out = run("--lang", "zh", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _english_headings(text: str, *headings: str) -> list[str]:
    """The headings found as a table column (``┃ cause``) or a row label (``│ cause``)."""
    return [h for h in headings if f"┃ {h} " in text or f"│ {h} " in text]


@pytest.mark.parametrize(
    "args",
    [
        CAPACITY_SIM,
        ("model", "deepseek-v3"),
        ("models",),
        ("stencil", "--top", "3"),
        ("frameworks",),
        ("frameworks", "vllm"),
        (*IMAGE, "--explain"),
        (
            "mem",
            "flux.1-dev",
            "--task",
            "generate-image",
            "--gpu",
            "h100",
            "--cpu-offload",
            "model",
        ),
    ],
)
def test_the_json_stays_english(args: tuple[str, ...]) -> None:
    zh = run("--lang", "zh", *args, "--json")
    assert zh.returncode == 0, zh.stderr
    assert zh.stdout == run(*args, "--json").stdout


def test_capacity_speaks_chinese() -> None:
    sim = _chinese(*CAPACITY_SIM)
    assert "指标" in sim and "吞吐" in sim and "排队等待" in sim and "每百万输出 token" in sim
    assert "运行于" in sim and "批处理" in sim and "队列随时间变化" in sim
    assert not _english_headings(sim, "metric", "throughput", "preemptions", "cost")
    assert "queue over time" not in sim and "requests/s" not in sim
    plan = _chinese(*CAPACITY_PLAN)
    assert "最少卡数" in plan and "按花费排序" in plan and "最便宜：" in plan
    assert "卡数 = 副本 x tp" in plan and "种显卡没有结果" in plan
    assert "fewest GPUs" not in plan and "without an answer" not in plan
    assert not _english_headings(plan, "gpu", "why")
    helped = _chinese("capacity", "--help")
    assert "每秒到达的请求数" in helped and "Requests per second arriving" not in helped


def test_model_and_models_speak_chinese() -> None:
    text = _chinese("model", "deepseek-v3")
    assert "架构" in text and "隐藏维度" in text and "个专家" in text and "每 token 激活" in text
    assert "参数" in text and "嵌入层" in text and "官方公布（约数）" in text and "注：" in text
    assert not _english_headings(text, "fact", "architecture", "component", "embeddings")
    assert "note:" not in text and "heads," not in text
    listing = _chinese("models")
    assert "个预设" in listing and "系列" in listing and "激活参数" in listing
    assert " presets" not in listing and not _english_headings(listing, "name", "family")


def test_stencil_speaks_chinese() -> None:
    text = _chinese("stencil", "--top", "3")
    assert "步，1 张卡" in text and "所需卡数" in text and "瓶颈" in text and "假设：" in text
    assert not _english_headings(text, "gpu", "fits", "bound", "GPUs needed")
    assert "assumption:" not in text and "steps on" not in text


def test_frameworks_speak_chinese() -> None:
    listing = _chinese("frameworks")
    assert "框架（--framework NAME）" in listing and "推理服务" in listing and "训练" in listing
    assert not _english_headings(listing, "kind", "name", "sets")
    one = _chinese("frameworks", "vllm")
    assert "读取自" in one and "别名：" in one and "支持的技术：" in one and "来源：" in one
    assert "aliases:" not in one and "techniques it offers" not in one
    assert not _english_headings(one, "option", "why", "read from")


def test_the_image_tables_speak_chinese() -> None:
    perf = _chinese(*IMAGE, "--explain")
    assert "每张图耗时" in perf and "单个去噪步" in perf and "显存，GiB" in perf and "组件" in perf
    assert "耗时各项" in perf and "放得下" in perf and "假设：" in perf
    assert "seconds per image" not in perf and "time terms" not in perf and "fits in" not in perf
    assert not _english_headings(perf, "component", "class", "calls", "term", "verdict")
    mem = _chinese(
        "mem", "flux.1-dev", "--task", "generate-image", "--gpu", "h100", "--cpu-offload", "model"
    )
    assert "：显存，GiB" in mem and "（卸载 model）" in mem and ": memory, GiB" not in mem
    missing = run("--lang", "zh", "mem", "sdxl", "--task", "generate-image")
    assert missing.returncode == 2 and "需要 --gpu" in missing.stderr


def test_serve_bench_and_verify_help_speak_chinese() -> None:
    assert "本地网页" in _chinese("serve", "--help")
    assert "校准" in _chinese("bench", "--help")
    helped = _chinese("verify", "--help")
    assert "随机权重" in helped and "random weights" not in helped


def test_the_bench_tables_speak_chinese(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from suanli.cli.bench import bench_cmd
    from tests.live import test_bench

    fake = test_bench._fake_h100_result()
    monkeypatch.setattr(test_bench.bench, "run_bench", lambda **kwargs: fake)
    set_lang("zh")
    try:
        result = CliRunner().invoke(
            bench_cmd, ["--output", str(tmp_path / "h100.toml")], env={"COLUMNS": "250"}
        )
    finally:
        set_lang(None)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "测量项" in out and "占上限" in out and "未通过" in out and "矩阵乘扫描" in out
    assert "校准结果已保存到" in out and "使用方法：suanli perf MODEL --gpu h100-sxm-80gb" in out
    assert "of ceiling" not in out and "calibration saved" not in out
    assert not _english_headings(out, "measurement", "grade", "runs", "fail", "pass")
