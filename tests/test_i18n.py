"""The language layer: --lang / SUANLI_LANG / the locale choose it, the catalog is complete
and current, and the translated commands mark every human-facing string."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.i18n import _TOKEN, lang_from_environment, normalize, translate_to

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
        # them: sentence() inserts each value as the English wrote it).
        return {m.group(1) for m in _TOKEN.finditer(text) if m.group(0) not in ("{{", "}}")}

    for message in catalog:
        if message.id:
            assert holes(message.id) == holes(message.string), message.id
    assert translate_to("zh", "does not fit") == "放不下"
    assert importlib.util.find_spec("suanli.i18n") is not None


def test_a_sentence_written_from_a_template_comes_back_in_chinese() -> None:
    """sentence() finds the template an English sentence was written from and fills the
    template's translation with the same values; unknown text stays as it was."""
    from suanli.i18n import _fill, _template, sentence

    made = _template("needs {size:.1f} GiB on {gpu!r}; {{x}}", "")
    assert made is not None
    match = made[0].match("needs 81.5 GiB on 'rtx-4090'; {x}")
    assert match == {"size": "81.5", "gpu": "'rtx-4090'"}
    assert _fill("{gpu} 上需要 {size:.1f} GiB {{x}}", match) == "'rtx-4090' 上需要 81.5 GiB {x}"
    # Only placeholders, or too little literal text, cannot be recognised.
    assert _template("{a}: {b}", "") is None and _template("{a} to {b}", "") is None
    # A repeated name must repeat its value; a hole is never empty.
    twice = _template("from {a} to {a} GiB", "")
    assert twice is not None
    assert twice[0].match("from 8 to 8 GiB") == {"a": "8"}
    assert twice[0].match("from 8 to 9 GiB") is None
    assert twice[0].match("from  to  GiB") is None
    assert sentence("does not fit", "zh") == "放不下"
    assert sentence("does not fit", "en") == "does not fit"
    assert sentence("a sentence no catalog has", "zh") == "a sentence no catalog has"
    # "A; B" is taken apart when the whole is unknown; "where: what" keeps its "where".
    assert sentence("does not fit; does not fit", "zh") == "放不下；放不下"
    assert sentence("model.json: does not fit", "zh") == "model.json：放不下"
    # A hole must not swallow a "; " join: two known reasons come back as two translations.
    assert sentence("3.1x slower; 1.2x cost/token", "zh") == (
        sentence("3.1x slower", "zh") + "；" + sentence("1.2x cost/token", "zh")
    )
    assert "3.1" in sentence("3.1x slower", "zh") and "slower" not in sentence("3.1x slower", "zh")


def test_every_error_template_in_the_catalog_round_trips() -> None:
    """Each marked template, written with made-up values, is recognised as itself (or as a
    template that says the same) and keeps every value in its Chinese."""
    from suanli.i18n import _TOKEN, _templates, sentence

    checked = 0
    for template in _templates("zh"):
        values = {name: f"V{i}x" for i, name in enumerate(dict.fromkeys(template.names))}
        # Write the English from the template's literal pieces and the made-up values.
        text = template.pieces[0] + "".join(
            values[name] + piece
            for name, piece in zip(template.names, template.pieces[1:], strict=True)
        )
        out = sentence(text, "zh")
        assert out != text, text
        for value in values.values():
            assert value in out, (text, out)
        checked += 1
    assert checked > 0 and _TOKEN.pattern


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
