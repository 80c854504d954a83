"""The README says what the program does (issue 19: an example captioned "why 2 PCIe GPUs give
1.2x" printed 1.65x).

Each example in README.md is a ``console`` block: one ``$ suanli ...`` line, then what it prints,
under a caption (the paragraph right above it). The test runs every example offline at 100 columns
and checks that it exits 0, that the numbers the README shows are the numbers it prints, in order,
and that every figure the caption quotes is one it prints. Markers between caption and block:

- ``<!-- not-run: REASON -->``: the example needs a GPU, the network, or runs until stopped;
  it is skipped, with REASON.
- ``<!-- ids-only: REASON -->``: the output is being reworked; only the exit code and the GPU ids
  shown are checked.

Every ``python`` block runs too (in order, in one process), every command of ``suanli --help``
has a row in the commands table, and the extras table names every extra of pyproject.toml.

After a deliberate change to an estimate, refresh the shown output (captions stay yours to fix;
the test then says which figure no longer matches)::

    python tests/test_readme.py --update
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
TIMEOUT_S = 120
COLUMNS = "100"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
MARKER = re.compile(r"^<!--\s*(not-run|ids-only):\s*(.*?)\s*-->$")
FIRST_TWO = ["pip install . && suanli plan", "bash scripts/test.sh"]


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the "$ suanli ..." command in README.md
    caption: str
    command: str
    shown: str
    marker: str | None  # "not-run", "ids-only" or None
    reason: str

    @property
    def name(self) -> str:
        return f"L{self.line}:{self.command[:60]}"


def examples(text: str | None = None) -> list[Example]:
    lines = (README.read_text("utf-8") if text is None else text).splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        end = lines.index("```", i + 1)
        body = lines[i + 1 : end]
        assert body and body[0].startswith("$ suanli "), (
            f"README.md:{i + 2}: a console block starts with one '$ suanli ...' line"
        )
        assert not any(b.startswith("$ ") for b in body[1:]), (
            f"README.md:{i + 2}: one command per console block"
        )
        # Above the fence: optional marker comments, then the caption paragraph.
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker, reason = None, ""
        while j >= 0 and (m := MARKER.match(lines[j].strip())):
            marker, reason = m.group(1), m.group(2)
            j -= 1
            while j >= 0 and not lines[j].strip():
                j -= 1
        caption: list[str] = []
        while j >= 0 and lines[j].strip() and not lines[j].startswith("```"):
            caption.insert(0, lines[j].strip())
            j -= 1
        found.append(
            Example(
                line=i + 2,
                caption=" ".join(caption),
                command=body[0][2:].strip(),
                shown="\n".join(body[1:]),
                marker=marker,
                reason=reason,
            )
        )
        i = end + 1
    return found


def run(command: str, config_home: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: offline, 100 columns, no user catalog or calibration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUANLI_")}
    env.update(
        HF_HUB_OFFLINE="1",
        COLUMNS=COLUMNS,
        LINES="50",
        XDG_CONFIG_HOME=config_home,
        NO_COLOR="1",
        TERM="dumb",
    )
    env.pop("FORCE_COLOR", None)
    argv = shlex.split(command)
    assert argv[0] == "suanli"
    return subprocess.run(
        [sys.executable, "-m", "suanli", *argv[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=ROOT,
        check=False,
    )


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text)


def gpu_ids(text: str) -> set[str]:
    from suanli import load_catalog

    ids = {g.id for g in load_catalog()}
    return {word for word in re.findall(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", text) if word in ids}


EXAMPLES = examples()


def test_the_readme_has_examples() -> None:
    commands = [e.command.split()[1] for e in EXAMPLES]
    assert len(EXAMPLES) >= 8
    # the newcomer's first question comes first
    assert commands[0] == "card"
    assert {"card", "mem", "perf", "compare", "plan"} <= set(commands)
    not_run = [e for e in EXAMPLES if e.marker == "not-run"]
    assert len(not_run) <= 3, "keep the examples the test cannot run few"
    assert all(e.reason for e in EXAMPLES if e.marker)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_readme_example_prints_what_it_shows(example: Example, tmp_path: Path) -> None:
    if example.marker == "not-run":
        pytest.skip(f"README.md:{example.line} is not run: {example.reason}")
    done = run(example.command, str(tmp_path))
    where = f"README.md:{example.line}: {example.command}"
    assert done.returncode == 0, f"{where} exited {done.returncode}: {done.stderr[-2000:]}"
    printed = done.stdout
    if example.marker == "ids-only":
        # The output is being reworked (see the marker's reason): exit 0 and the same GPUs.
        shown = gpu_ids(example.shown)
        assert shown, f"{where}: no GPU id in the shown output"
        missing = shown - gpu_ids(printed)
        assert not missing, f"{where}: shows {sorted(missing)}, which it no longer prints"
        return
    shown_numbers = numbers(example.shown)
    assert shown_numbers, f"{where}: the README shows no output"
    assert shown_numbers == numbers(printed), (
        f"{where}: the numbers shown are not the numbers printed; run "
        f"'python tests/test_readme.py --update' and check the caption.\nprinted:\n{printed}"
    )
    # a figure may be written 8,192 in the caption and 8192 in the command or the output
    said = {n.replace(",", "") for n in numbers(printed) + numbers(example.command)}
    quoted = {n for n in numbers(example.caption) if n.replace(",", "") not in said}
    assert not quoted, f"{where}: the caption quotes {sorted(quoted)}, which it does not print"


def test_readme_python_blocks_run(tmp_path: Path) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text("utf-8"), re.M | re.S)
    assert blocks
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUANLI_")}
    env.update(HF_HUB_OFFLINE="1", XDG_CONFIG_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_first_two_commands_stay_at_the_top() -> None:
    """DESIGN.md: install and run on the bundled defaults, then install and run the tests."""
    text = README.read_text("utf-8")
    top = text.split("\n---\n", 1)[0]
    assert re.findall(r"^```bash\n(.*?)\n```", top, re.M | re.S) == FIRST_TWO


def _command_names() -> list[str]:
    from suanli.cli.main import cli

    names = []
    for name, command in sorted(cli.commands.items()):
        names.append(name)
        names += [f"{name} {sub}" for sub in sorted(getattr(command, "commands", {}) or {})]
    return names


def test_every_command_has_a_row_in_the_commands_table() -> None:
    text = README.read_text("utf-8")
    table = text.split("## Commands", 1)[1].split("\n\n", 2)[1]
    rows = [r for r in table.splitlines() if r.startswith("| `suanli ")]
    listed = {m.group(1) for r in rows if (m := re.match(r"\| `suanli ([a-z]+(?: [a-z]+)?)", r))}
    for row in rows:
        assert len(row.split("|")[2].strip()) > 20, f"say what it answers: {row}"
    missing = [n for n in _command_names() if n not in listed]
    assert not missing, f"commands without a row in the README's commands table: {missing}"


def test_the_extras_table_matches_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]
    section = README.read_text("utf-8").split("## Extras", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`suanli\[([a-z]+)\]`", section))
    assert named == set(extras)
    for row in section.splitlines():
        m = re.match(r"\| `suanli\[([a-z]+)\]` \| (.*?) \|", row)
        if not m or m.group(1) == "test" or "nothing new" in m.group(2):
            continue
        packages = {re.split(r"[<>=\[; ]", p, maxsplit=1)[0] for p in extras[m.group(1)]}
        assert set(re.findall(r"`([A-Za-z0-9_.-]+)`", m.group(2))) == packages, row
    core = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    for extra in ("nvml", "live"):  # said to add nothing new: all of it is core
        core_names = {re.split(r"[<>=\[; ]", p, maxsplit=1)[0] for p in core}
        assert {re.split(r"[<>=\[; ]", p, maxsplit=1)[0] for p in extras[extra]} <= core_names


def update() -> int:
    """Rewrite every runnable example's shown output with what it prints now."""
    lines = README.read_text("utf-8").splitlines()
    changed = 0
    with tempfile.TemporaryDirectory() as config_home:
        for example in reversed(examples()):
            if example.marker == "not-run":
                continue
            done = run(example.command, config_home)
            if done.returncode != 0:
                print(f"README.md:{example.line}: exit {done.returncode}: {done.stderr.strip()}")
                continue
            printed = [ln.rstrip() for ln in done.stdout.rstrip("\n").splitlines()]
            start = example.line  # 0-based index of the first output line
            end = lines.index("```", start)
            if lines[start:end] != printed:
                lines[start:end] = printed
                changed += 1
                print(f"README.md:{example.line}: {example.command}: updated")
    README.write_text("\n".join(lines) + "\n", "utf-8")
    print(f"{changed} example(s) updated; check their captions (pytest tests/test_readme.py)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_readme.py --update")
    sys.exit(update())


README_ZH = ROOT / "README.zh.md"


def test_the_chinese_readme_starts_with_the_same_two_commands() -> None:
    top = README_ZH.read_text("utf-8").split("\n---\n", 1)[0]
    assert re.findall(r"^```bash\n(.*?)\n```", top, re.M | re.S) == FIRST_TWO


def test_the_chinese_readme_lists_every_command() -> None:
    """README.zh.md stays in sync with the CLI: a row for every command, in Chinese."""
    text = README_ZH.read_text("utf-8")
    table = text.split("## 命令", 1)[1].split("\n\n", 2)[1]
    rows = [r for r in table.splitlines() if r.startswith("| `suanli ")]
    listed = {m.group(1) for r in rows if (m := re.match(r"\| `suanli ([a-z]+(?: [a-z]+)?)", r))}
    for row in rows:
        description = row.split("|")[2]
        assert any("\u4e00" <= c <= "\u9fff" for c in description), f"not in Chinese: {row}"
    missing = [n for n in _command_names() if n not in listed]
    assert not missing, f"commands without a row in README.zh.md: {missing}"
