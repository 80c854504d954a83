"""The language layer: --lang / SUANLI_LANG / the locale choose it, the catalog is complete
and current, and the translated commands mark every human-facing string."""

from __future__ import annotations

import ast
import importlib.util
import string
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.i18n import lang_from_environment, normalize, translate_to

from .cli.test_cli import run

ROOT = Path(__file__).resolve().parent.parent
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
    with pytest.raises(ValueError, match="use one of en, zh"):
        normalize("fr")
    out = run("--lang", "fr", "card", "4090")
    assert out.returncode == 2 and "use one of en, zh" in out.stderr
    assert "Traceback" not in out.stderr


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
    # Chinese help wraps between any two characters: read it with the line breaks taken out.
    helped = "".join(line.strip() for line in _chinese("cost", "--help").splitlines())
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


def test_each_translation_keeps_its_placeholders() -> None:
    pytest.importorskip("babel")
    from babel.messages.pofile import read_po

    po = ROOT / "src/suanli/i18n/locale/zh/LC_MESSAGES/suanli.po"

    with po.open("rb") as f:
        catalog = read_po(f)

    def holes(text: str) -> set[str]:
        # The names of the placeholders, without their format specs (a translation may drop
        # them: sentence() inserts each value as the English wrote it); a translation that
        # str.format cannot read fails here.
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}

    for message in catalog:
        if message.id:
            assert holes(message.id) == holes(message.string), message.id
    assert translate_to("zh", "does not fit") == "放不下"
    assert importlib.util.find_spec("suanli.i18n") is not None


class _Value:
    """A made-up value that any format spec and conversion write as its tag."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __format__(self, spec: str) -> str:
        return self.tag

    def __repr__(self) -> str:
        return self.tag


def test_every_template_in_the_catalog_is_written_in_chinese_with_its_values() -> None:
    """Each marked template, written with made-up values from its message id (what the library
    returns), comes out in Chinese with every value in it."""
    import string

    from suanli.i18n import Msg, _translations, sentence

    checked = 0
    for message, chinese in _translations("zh")._catalog.items():  # type: ignore[attr-defined]
        if not isinstance(message, str) or "{" not in message or message == chinese:
            continue
        fields = [f for _, f, _, _ in string.Formatter().parse(message) if f is not None]
        if any(not f or f.isdigit() or "." in f or "[" in f for f in fields):
            continue  # positional and attribute fields: tests/test_i18n_sentences.py
        values = {name: _Value(f"V{i}x") for i, name in enumerate(dict.fromkeys(fields))}
        made = Msg(message).format(**values)
        out = sentence(made, "zh")
        assert out != str(made), message
        for value in values.values():
            assert value.tag in out, (message, out)
        checked += 1
    assert checked > 500


#: Errors whose message people read (bad input, a missing tool or extra).
USER_ERRORS = {
    "ValueError",
    "CatalogError",
    "ModelSourceError",
    "ApiError",
    "ModelConfigError",
    "PipelineError",
    "FamilyConfigError",
    "GGUFError",
    "ConfigFieldError",
    "SafetensorsError",
    "ToolError",
    "MissingExtra",
    "UsageError",
    "BadParameter",
    "ClickException",
    "RuntimeError",
}
#: Lists of sentences an answer carries (``assumptions.append(...)`` and the like).
SENTENCE_LISTS = (
    "assumptions",
    "notes",
    "warnings",
    "fixes",
    "reasons",
    "problems",
    "advice",
    "hints",
    "caveats",
)


def _words(node: ast.AST) -> list[tuple[int, str]]:
    """The literal text (with at least three letters) of a string, f-string or concatenation."""
    found: list[tuple[int, str]] = []
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    for item in items:
        if isinstance(item, ast.BinOp):
            found += _words(item.left) + _words(item.right)
            continue
        if isinstance(item, ast.JoinedStr):
            words = "".join(v.value for v in item.values if isinstance(v, ast.Constant))
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            words = item.value
        else:
            continue
        if sum(c.isalpha() for c in words) >= 3:
            found.append((item.lineno, words))
    return found


def _unmarked_sentences(path: Path) -> list[str]:
    """Raised user errors, sentences added to an answer's lists, and (in the CLI) printed text
    and help that do not go through _() or N_()."""
    tree = ast.parse(path.read_text())
    in_cli = "cli" in path.parts
    texts: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            func = node.exc.func
            if getattr(func, "attr", getattr(func, "id", "")) in USER_ERRORS:
                texts += node.exc.args[:1]
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name in ("append", "extend", "insert") and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if getattr(owner, "attr", getattr(owner, "id", "")).endswith(SENTENCE_LISTS):
                texts += node.args[-1:]
        if in_cli:
            if name in SHOWN:
                texts += node.args[:2]
                texts += [kw.value for kw in node.keywords if kw.arg in ("title", "caption")]
            texts += [kw.value for kw in node.keywords if kw.arg == "help"]
    rel = path.relative_to(ROOT)
    return [f"{rel}:{line}: {words[:60]!r}" for text in texts for line, words in _words(text)]


def test_every_sentence_people_read_is_marked_for_translation() -> None:
    """The whole package: no error message, answer sentence, printed line or help text is
    written without _() or N_() (so each has Chinese: the catalog test checks that)."""
    files = sorted((ROOT / "src" / "suanli").rglob("*.py"))
    unmarked = [line for path in files for line in _unmarked_sentences(path)]
    assert not unmarked, f"{len(unmarked)} unmarked:\n" + "\n".join(unmarked)
