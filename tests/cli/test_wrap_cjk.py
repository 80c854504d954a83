"""Chinese text wraps inside the terminal's width: a line may break between any two CJK
characters (Chinese has no spaces), never before closing or after opening punctuation, and a
Chinese field name in the narrow record view is padded in cells."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from suanli.cli.render import _print_records, _wrap_text

SENTENCE = "一次原生 CUDA 分配在 PyTorch 缓存分配器之外失败，通常发生在启动时创建上下文或句柄。" * 3


def test_a_chinese_sentence_breaks_between_characters_within_the_width() -> None:
    lines = [line.plain for line in _wrap_text(Text(SENTENCE), 30)]
    assert len(lines) > 3
    assert all(cell_len(line) <= 30 for line in lines), [cell_len(x) for x in lines]
    assert not any(line.startswith(("，", "。")) for line in lines)
    assert "".join(lines).replace(" ", "") == SENTENCE.replace(" ", "")


def test_a_line_never_ends_with_opening_punctuation() -> None:
    text = (
        "改进：显存访问占每步的 42%：融合非矩阵乘算子（torch.compile；--kernels fused）"
        " -> 4,611（1.03x）"
    )
    for width in range(12, 60):
        lines = [line.plain for line in _wrap_text(Text(text), width)]
        assert not any(line.rstrip().endswith(("（", "「", "《")) for line in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_a_latin_word_longer_than_the_line_stays_whole() -> None:
    word = "torch.cuda.set_device(local_rank)_and_more_text"
    lines = [line.plain for line in _wrap_text(Text(f"用 {word} 绑定"), 20)]
    assert word in lines


def test_chinese_field_names_line_up_in_cells() -> None:
    console = Console(width=60, record=True, color_system=None)
    _print_records(console, "t", ["原因", "解决办法"], [[Text("甲" * 50), Text("乙" * 50)]], None)
    rows = [r for r in console.export_text().splitlines() if r.strip() and r != "t"]
    assert all(cell_len(r) <= 60 for r in rows)
    # every value starts in the same cell column: the longest name plus two cells
    column = cell_len("解决办法") + 2
    for row in rows:
        first_value = next(i for i, c in enumerate(row) if c in "甲乙")
        assert cell_len(row[:first_value]) == column, row


def test_chinese_help_fits_80_columns_and_english_help_is_clicks() -> None:
    """click wraps an option's help by characters; a Chinese character takes two cells, so the
    Chinese help of `perf` ran up to 102 columns. It is wrapped by cells now, every word kept."""
    from click.testing import CliRunner

    from suanli.cli.main import cli
    from suanli.i18n import set_lang

    runner = CliRunner()
    try:
        zh = runner.invoke(cli, ["perf", "--help"], terminal_width=80, env={"SUANLI_LANG": "zh"})
    finally:
        set_lang(None)
    assert "选项" in zh.output
    assert zh.exit_code == 0, zh.output
    lines = zh.output.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert not any(line.lstrip().startswith(("，", "。", "）")) for line in lines)
    # Every word of the --projections help is there, in order, across its lines.
    from suanli.i18n import translate_to

    help_text = translate_to("zh", _projections_help())
    flat = "".join(line.strip() for line in lines).replace(" ", "")
    assert help_text.replace(" ", "") in flat
    en = runner.invoke(cli, ["perf", "--help"], terminal_width=80, env={"SUANLI_LANG": "en"})
    assert en.exit_code == 0 and max(len(line) for line in en.output.splitlines()) <= 80


def _projections_help() -> str:
    from suanli.cli.options import _OPTIONS

    for option in _OPTIONS:
        params = getattr(option(lambda **kw: None), "__click_params__", [])
        if params and params[0].name == "projections":
            return str(params[0].help)
    raise AssertionError("no --projections option")


def _command_paths() -> list[list[str]]:
    from suanli.cli.main import cli

    def walk(group: object, prefix: list[str]) -> list[list[str]]:
        paths = []
        for name, sub in getattr(group, "commands", {}).items():
            paths.append([*prefix, name])
            paths += walk(sub, [*prefix, name])
        return paths

    return [[], *walk(cli, [])]


def test_every_command_help_fits_80_columns_in_both_languages() -> None:
    """Long choice lists (plan's and gpus' --vendor, plan's --scenario) sit in the wrapped help
    under a short metavar: in the option's name click never wraps them (they ran to 110)."""
    from click.testing import CliRunner

    from suanli.cli.main import cli
    from suanli.i18n import set_lang

    runner = CliRunner()
    for lang in ("en", "zh"):
        try:
            for path in _command_paths():
                result = runner.invoke(
                    cli, [*path, "--help"], terminal_width=80, env={"SUANLI_LANG": lang}
                )
                assert result.exit_code == 0, (path, result.output)
                widest = max(cell_len(line) for line in result.output.splitlines())
                assert widest <= 80, (lang, path, widest)
        finally:
            set_lang(None)
    plan = runner.invoke(cli, ["plan", "--help"], terminal_width=80, env={"SUANLI_LANG": "en"})
    assert "--vendor VENDOR" in plan.output and "cambricon" in plan.output


def test_the_main_jobs_footer_lines_wrap_and_its_command_stays_whole() -> None:
    """`suanli plan` on an 80-column terminal: the notes under the tables wrap at spaces with a
    hanging indent (the "cannot run it" line ran to 225 columns), and the command to paste
    keeps a line of its own, whole, so that it copies as one line."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "suanli", "plan"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    lines = out.splitlines()
    commands = [line for line in lines if line.startswith("  suanli perf ")]
    assert len(commands) == 1 and "--grad-accum" in commands[0]
    assert any(line.endswith("->") for line in lines)
    others = [line for line in lines if line not in commands]
    assert max(cell_len(line) for line in others) <= 80
    assert any("cannot run it" in line for line in lines)
