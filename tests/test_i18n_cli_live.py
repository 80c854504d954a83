"""``--lang zh`` for the live commands (``top``, ``query``, ``export``, ``doctor scaling``, the
``doctor run`` report) and for click's own words (help headings, usage errors); the English
and the JSON stay as they were."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from suanli.i18n import set_lang

from .cli.test_cli import run

PROBLEMS = {"SUANLI_FAKE_GPUS": "problems"}


@pytest.fixture
def zh() -> Iterator[None]:
    set_lang("zh")
    try:
        yield
    finally:
        set_lang(None)


def test_top_speaks_chinese_and_its_json_stays_english() -> None:
    out = run("--lang", "zh", "top", "--once", env=PROBLEMS)
    assert out.returncode == 0, out.stderr
    for word in (
        "设备",
        "名称",
        "利用率",
        "功耗",
        "温度",
        "进程",
        "用户",
        "失联",
        "! GPU 1 throttling：",
    ):
        assert word in out.stdout, word
    assert "devices" not in out.stdout and "LOST" not in out.stdout
    english = run("--lang", "en", "top", "--once", env=PROBLEMS)
    assert "devices" in english.stdout and "! gpu 4 lost: " in english.stdout
    assert (
        run("--lang", "zh", "top", "--json", env=PROBLEMS).stdout
        == run("--lang", "en", "top", "--json", env=PROBLEMS).stdout
    )


def test_query_output_is_the_same_in_both_languages() -> None:
    env = {"SUANLI_FAKE_GPUS": "healthy-8xh100"}
    for fmt in ("csv", "json"):
        zh_out = run("--lang", "zh", "query", "--format", fmt, env=env)
        en_out = run("--lang", "en", "query", "--format", fmt, env=env)
        assert zh_out.returncode == 0, zh_out.stderr
        assert zh_out.stdout == en_out.stdout


def test_export_warns_and_fails_in_chinese() -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        out = run("--lang", "zh", "export", "--host", "0.0.0.0", "--port", port)
        english = run("--lang", "en", "export", "--host", "0.0.0.0", "--port", port)
    assert out.returncode == 2, out.stderr
    assert "警告：监听在 0.0.0.0，不是回环地址" in out.stderr
    assert f"无法监听 0.0.0.0:{port}" in out.stderr and "请换一个 --port" in out.stderr
    assert f"error: cannot listen on 0.0.0.0:{port} (" in english.stderr


def test_help_pages_use_chinese_headings_and_click_words() -> None:
    top = run("--lang", "zh", "--help")
    assert top.returncode == 0, top.stderr
    for word in ("用法：suanli", "选项：", "命令：", "显示本帮助并退出。", "显示版本并退出。"):
        assert word in top.stdout.replace("用法： ", "用法："), word
    for word in ("Usage:", "Options:", "Commands:", "Show this message and exit."):
        assert word not in top.stdout, word
    plan = run("--lang", "zh", "plan", "--help")
    assert "默认：" in plan.stdout and "[default:" not in plan.stdout
    live = run("--lang", "zh", "top", "--help")
    assert "实时查看每块 GPU" in live.stdout and "每次刷新间隔的秒数。" in live.stdout
    english = run("--lang", "en", "--help")
    assert english.stdout.startswith("Usage: suanli [OPTIONS] COMMAND [ARGS]...")
    assert "  -h, --help      Show this message and exit." in english.stdout


@pytest.mark.parametrize(
    ("args", "chinese", "english"),
    [
        (
            ("plan", "--gpus", "x"),
            "'--gpus' 的值无效：'x' 不是有效的整数",
            "Invalid value for '--gpus': 'x' is not a valid integer;",
        ),
        (("gpu",), "缺少参数 'NAME'", "Missing argument 'NAME';"),
        (("gpus", "x", "y"), "多出了几个参数（x y）", "Got unexpected extra arguments (x y);"),
        (("top", "--interval", "0"), "0.0 不在范围 0.1<=x<=1e+18 内", "is not in the range"),
        (("top", "--interval", "nan"), "不是有限的数", "is not a finite number"),
        (("plan", "--foo"), "没有选项 '--foo'", "No such option '--foo'."),
    ],
)
def test_usage_errors_in_chinese(args: tuple[str, ...], chinese: str, english: str) -> None:
    out = run("--lang", "zh", *args)
    assert out.returncode == 2 and chinese in out.stderr, out.stderr
    assert "run '" not in out.stderr  # the whole line is Chinese
    en = run("--lang", "en", *args)
    assert en.returncode == 2 and english in en.stderr, en.stderr


def test_doctor_scaling_in_chinese(monkeypatch: pytest.MonkeyPatch, zh: None) -> None:
    from suanli.answers import scaling as answers_scaling
    from suanli.answers.scaling import scaling_answer
    from suanli.cli.live import doctor_cmd
    from suanli.live.scaling import ScalingResult

    result = ScalingResult(4, "gloo", 1_050_624, 0.100, 0.125, 0.040, 0.110)
    monkeypatch.setattr(answers_scaling, "scaling", lambda req: scaling_answer(result))
    out = CliRunner().invoke(doctor_cmd, ["scaling", "--procs", "4"], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    for word in (
        "在 4 个 gloo 进程上的扩展",
        "每步，4 个进程",
        "3.20x（效率 80%）",
        "通信占比",
        "原因：",
    ):
        assert word in out.stdout, word
    as_json = CliRunner().invoke(doctor_cmd, ["scaling", "--procs", "4", "--json"])
    set_lang("en")
    english = CliRunner().invoke(doctor_cmd, ["scaling", "--procs", "4", "--json"])
    assert json.loads(as_json.stdout) == json.loads(english.stdout)


def test_doctor_scaling_nodes_in_chinese_with_the_speed_model_columns(
    monkeypatch: pytest.MonkeyPatch, zh: None
) -> None:
    from suanli.answers import scaling as answers_scaling
    from suanli.answers.scaling import nodes_answer
    from suanli.cli.live import doctor_cmd
    from suanli.live.multinode import NodesResult, Tier, tier_point

    # A synthetic 2-node NCCL result whose network reaches a quarter of the model's figure.
    tiers = (
        Tier("intra-node", 8, "NVLink 4", (tier_point(1 << 30, 8, 0.0030, 0.0029),)),
        Tier("inter-node", 2, "InfiniBand NDR", (tier_point(1 << 30, 2, 0.0900, 0.0225),)),
    )
    result = NodesResult(
        "torchrun", "nccl", ("a", "b"), 8, "h100-sxm-80gb", tiers, 1000, 0.1, 0.2, 0.15, 0.19, None
    )
    monkeypatch.setattr(answers_scaling, "scaling_nodes", lambda req: nodes_answer(result))
    out = CliRunner().invoke(doctor_cmd, ["scaling", "--nnodes", "2"], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    for word in (
        "2 个节点 × 每节点 8 个 rank 上的 all-reduce（torchrun，nccl）",
        "节点间（2）",
        "实测/模型",
        "25%",
        "每步，仅节点 0",
        "节点之间的 all-reduce 只达到速度模型对 InfiniBand NDR 预期总线带宽的 25%",
    ):
        assert word in out.stdout, word
    assert "模拟节点" not in out.stdout  # a real launch is not called simulated


def _report() -> object:
    from suanli.live.diagnosis import Fix, Report

    return Report(
        "input-bound",
        "the loop waits for data",
        {"data": 0.6, "forward": 0.2, "backward": 0.2, "other": 0.001},
        0.0425,
        20,
        (Fix("raise num_workers", 2.5, "measured"),),
    )


def test_the_doctor_run_report_in_english_is_the_librarys(zh: None) -> None:
    from suanli.cli.live import _format_report
    from suanli.live.callbacks import format_report

    report = _report()
    chinese = _format_report(report)  # type: ignore[arg-type]
    assert chinese.startswith("suanli doctor：受限于输入 ")
    assert "每步 42.5 ms（共 20 步）：数据 60%, 前向 20%, 反向 20%" in chinese
    assert "  改进（2.5x）：" in chinese
    set_lang("en")
    assert _format_report(report) == format_report(report)  # type: ignore[arg-type]


def test_the_oom_autopsy_in_english_is_the_librarys(zh: None) -> None:
    from suanli.cli.live import _format_autopsy
    from suanli.live.autopsy import format_autopsy

    gib = 2**30
    doc = {
        "limit_bytes": 24 * gib,
        "measured_bytes": {"weights": 10 * gib, "gradients": 10 * gib, "activations": 6 * gib},
        "measured_total_bytes": 26 * gib,
        "estimate": {"total_bytes": 25 * gib},
        "remedies": [
            {
                "change": "gradient checkpointing",
                "memory_bytes": 22 * gib,
                "saved_bytes": 3 * gib,
                "fits": True,
            },
            {"change": "batch 1", "memory_bytes": 25 * gib, "saved_bytes": 1 * gib, "fits": False},
        ],
    }
    chinese = _format_autopsy(doc)
    assert chinese.startswith("显存不足：实测 26.00 GiB，上限 24.00 GiB")
    assert "放得下" in chinese and "估算器" in chinese
    set_lang("en")
    assert _format_autopsy(doc) == format_autopsy(doc)
    note = {**doc, "estimate": None, "note": "no estimator comparison: unknown"}
    assert _format_autopsy(note) == format_autopsy(note)
