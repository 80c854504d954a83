"""The language layer: --lang / SUANLI_LANG / the locale choose it, the catalog is complete
and current, and the translated commands mark every human-facing string."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.i18n import lang_from_environment, normalize, translate_to

from .cli.test_cli import run

ROOT = Path(__file__).resolve().parent.parent
#: Modules (or functions in them) whose output is fully translated; the rest follow (issue 20).
TRANSLATED = {
    "src/suanli/cli/card.py": None,
    "src/suanli/cli/main.py": None,
    "src/suanli/cli/plan.py": {
        "plan_cmd",
        "_render_plan",
        "_row_cells",
        "_layout_cell",
        "fit_cmd",
        "_render_rendering",
    },
    "src/suanli/cli/mem.py": None,
    "src/suanli/cli/perf.py": None,
    "src/suanli/cli/gpus.py": None,
    "src/suanli/cli/live.py": {"doctor_cmd", "doctor_run_cmd"},
    "src/suanli/cli/cost.py": None,
    "src/suanli/cli/explain.py": None,
    "src/suanli/cli/compare.py": None,
}
#: Calls whose string arguments people read.
SHOWN = {"echo", "print_line", "print_table", "secho", "UsageError"}


@pytest.mark.parametrize(
    ("environ", "lang"),
    [
        ({}, "en"),
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "en_US.UTF-8", "LC_ALL": "zh_TW.UTF-8"}, "zh"),
        ({"LANG": "zh_CN.UTF-8", "SUANLI_LANG": "en"}, "en"),
        ({"SUANLI_LANG": "zh-CN"}, "zh"),
        ({"LANG": "C"}, "en"),
    ],
)
def test_the_language_comes_from_suanli_lang_then_the_locale(
    environ: dict[str, str], lang: str
) -> None:
    assert lang_from_environment(environ) == lang


def test_unknown_languages_are_refused() -> None:
    with pytest.raises(ValueError, match="use zh or en"):
        normalize("fr")
    out = run("--lang", "fr", "card", "4090")
    assert out.returncode == 2 and "use zh or en" in out.stderr and "Traceback" not in out.stderr


def test_lang_before_or_after_the_subcommand_gives_chinese() -> None:
    for args in (("--lang", "zh", "card", "4090"), ("card", "4090", "--lang=zh")):
        out = run(*args)
        assert out.returncode == 0, out.stderr
        assert "显存" in out.stdout and "能放下的最大模型" in out.stdout
        assert "largest model that fits" not in out.stdout
    english = run("card", "4090", env={"LANG": "zh_CN.UTF-8", "SUANLI_LANG": "en"})
    assert "largest model that fits" in english.stdout
    chinese = run("card", "4090", env={"LANG": "zh_CN.UTF-8"})
    assert "能放下的最大模型" in chinese.stdout


def test_errors_and_help_speak_the_language() -> None:
    out = run("--lang", "zh", "card", "no-such-card")
    assert out.returncode == 2 and out.stderr.startswith("错误：")
    helped = run("--lang", "zh", "plan", "--help")
    assert "选哪张卡" in helped.stdout and "只考虑这些显卡" in helped.stdout
    assert run("plan", "--help").stdout.count("Only these GPUs") == 1


def test_json_stays_english() -> None:
    zh = run("--lang", "zh", "card", "4090", "--json")
    en = run("card", "4090", "--json")
    assert zh.stdout == en.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("mem", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--card", "h100"),
        ("perf", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--tokens", "1e8"),
        ("fit", "llama-3.1-70b", "--task", "full", "--gpu", "h100"),
        ("gpus", "--vendor", "amd"),
        ("cost", "rtx4090", "--gpus", "2", "--utilisation", "0.3", "--currency", "cny"),
        ("explain", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        ("compare", "qwen2.5-0.5b", "--task", "qlora", "--devices", "rtx4090,h100"),
    ],
)
def test_the_json_of_the_other_translated_commands_stays_english(args: tuple[str, ...]) -> None:
    zh = run("--lang", "zh", *args, "--json")
    assert zh.returncode == 0, zh.stderr
    assert zh.stdout == run(*args, "--json").stdout


def _chinese(*args: str) -> str:
    out = run("--lang", "zh", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_mem_speaks_chinese() -> None:
    text = _chinese("mem", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--card", "h100")
    assert "每卡显存" in text and "优化器状态" in text and "各卡能否放下" in text
    assert "component" not in text and "memory per GPU" not in text and "headroom" not in text


def test_perf_speaks_chinese() -> None:
    train = _chinese("perf", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--tokens", "1e8")
    assert "单步时间" in train and "瓶颈" in train and "训练总时长" in train
    assert "step time" not in train and "assumption:" not in train
    infer = _chinese("perf", "llama-3.1-8b", "--task", "infer", "--gpu", "4090", "--batch", "4")
    assert "TTFT（预填充）" in infer and "吞吐随批次的变化" in infer
    assert "throughput against batch" not in infer and "decode is bound by" not in infer


def test_fit_speaks_chinese() -> None:
    text = _chinese("fit", "llama-3.1-70b", "--task", "full", "--gpu", "h100")
    assert "起点：需要" in text and "OOM 补救链" in text and "阶段" in text
    assert "remedy chain" not in text and "stage" not in text


def test_gpus_and_gpu_speak_chinese() -> None:
    listing = _chinese("gpus", "--vendor", "amd")
    assert "种设备，按 bf16 排序" in listing and "显存" in listing
    assert "devices, sorted by" not in listing and "Dense tensor rates" not in listing
    one = _chinese("gpu", "4090")
    assert "字段" in one and "参考资料" in one
    assert "covers" not in one and "from nvidia" not in one


def test_doctor_speaks_chinese() -> None:
    out = run("--lang", "zh", "doctor")
    assert out.returncode in (0, 1), out.stderr
    assert "检查项" in out.stdout and "检测结果" in out.stdout
    assert ("环境正常" in out.stdout) != ("发现问题" in out.stdout)
    assert "┃ check" not in out.stdout and "healthy" not in out.stdout
    assert "problems found" not in out.stdout


def _english_headings(text: str, *headings: str) -> list[str]:
    """The headings found as a table column (``┃ cause``) or a record's label (``cause:``)."""
    return [h for h in headings if f"┃ {h} " in text or f"\n{h}:" in text]


def test_cost_speaks_chinese() -> None:
    text = _chinese("cost", "rtx4090", "--gpus", "2", "--utilisation", "0.3", "--currency", "cny")
    assert "累计花费" in text and "租用" in text and "假设" in text and "每美元兑" in text
    assert "cumulative cost" not in text and "assumptions" not in text
    assert not _english_headings(text, "year", "buy", "rent", "input", "unit")
    helped = _chinese("cost", "--help")
    assert "回本" in helped and "利用率" in helped and "Share of the hours" not in helped


def test_explain_speaks_chinese() -> None:
    text = _chinese("explain", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "找到 1 个已知错误" in text and "原因" in text and "解决办法" in text
    assert "日志行" in text and "来源" in text
    assert "known error found" not in text and "first matching line" not in text
    assert not _english_headings(text, "error", "cause", "fix", "line", "source")
    assert "没有匹配到已知错误" in _chinese("explain", "epoch 3 loss 0.42")


def test_compare_speaks_chinese() -> None:
    text = _chinese("compare", "qwen2.5-0.5b", "--task", "qlora", "--devices", "rtx4090,h100")
    assert "设备" in text and "单步" in text and "速度" in text and "倍：" in text
    assert "faster than" not in text and " step\n" not in text
    assert not _english_headings(text, "device", "step", "speed")


def test_the_sort_help_lists_every_sort_alias() -> None:
    from suanli.catalog.query import SORT_ALIASES
    from suanli.cli.gpus import SORT_HELP

    assert f"Sort by a metric: {', '.join(SORT_ALIASES)}, or any numeric field name." == SORT_HELP
    helped = run("--lang", "zh", "mem", "--help").stdout
    assert "检查在这张显卡上放不放得下" in helped and "去噪步数" in helped


def test_the_doctor_run_script_keeps_its_own_lang_option(tmp_path: Path) -> None:
    from suanli.cli.main import take_lang

    assert take_lang(["--lang", "zh", "doctor", "run", "t.py", "--lang", "fr"]) == (
        "zh",
        ["doctor", "run", "t.py", "--lang", "fr"],
    )


def test_the_catalog_is_complete_and_compiled() -> None:
    """Every marked string has Chinese, and suanli.mo is the compiled suanli.po (Babel)."""
    pytest.importorskip("babel", reason="babel (the catalog tool) is not installed")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "i18n.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _unmarked(path: str, functions: set[str] | None) -> list[str]:
    tree = ast.parse((ROOT / path).read_text())
    scopes: list[ast.AST] = (
        [tree]
        if functions is None
        else [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in functions]
    )
    found = []
    for scope in scopes:
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            texts: list[ast.AST] = []
            if name in SHOWN:
                texts += node.args[:2]
                texts += [kw.value for kw in node.keywords if kw.arg in ("title", "caption")]
            texts += [kw.value for kw in node.keywords if kw.arg == "help"]
            for text in texts:
                for item in text.elts if isinstance(text, (ast.List, ast.Tuple)) else [text]:
                    if isinstance(item, ast.JoinedStr):  # the literal parts of an f-string
                        words = "".join(v.value for v in item.values if isinstance(v, ast.Constant))
                    elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                        words = item.value
                    else:
                        continue
                    if any(c.isalpha() for c in words):
                        found.append(f"{path}:{item.lineno}: {words[:60]}")
    return found


def test_translated_commands_mark_every_string_people_read() -> None:
    """A string printed, used as a table heading or as help must go through _() or N_()."""
    unmarked = [line for path, fns in TRANSLATED.items() for line in _unmarked(path, fns)]
    assert not unmarked, "\n".join(unmarked)


def test_each_translation_keeps_its_placeholders() -> None:
    pytest.importorskip("babel")
    from babel.messages.pofile import read_po

    po = ROOT / "src/suanli/i18n/locale/zh/LC_MESSAGES/suanli.po"
    import re

    with po.open("rb") as f:
        catalog = read_po(f)
    for message in catalog:
        if message.id:
            holes = set(re.findall(r"{\w*}", message.id))
            assert holes == set(re.findall(r"{\w*}", message.string)), message.id
    assert translate_to("zh", "does not fit") == "放不下"
    assert importlib.util.find_spec("suanli.i18n") is not None
