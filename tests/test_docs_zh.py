"""The Chinese docs (docs/zh/) stay complete, in Chinese, and true to the CLI.

- every page docs/zh/README.md links to exists, every page of docs/zh/ is linked from it, and
  links between the Chinese pages land on a heading that exists;
- every English main-job doc in ``TRANSLATED`` has its Chinese page, and each links the other way;
- every ``suanli`` command in a ``bash`` or ``console`` block carries ``--lang zh`` and parses
  (click parses it down to the subcommand, without running it);
- every ``console`` block (one ``$ [VAR=value] suanli ...`` line, then what it prints) is run
  offline at 100 columns and must print the numbers it shows, in order, as tests/test_readme.py
  does for README.md; a ``<!-- not-run: REASON -->`` comment above the block skips the run (the
  output depends on this machine), not the parse;
- no paragraph outside code blocks is left in English: each contains CJK characters (or is only
  code, like a heading that names a command).

After a deliberate change to an estimate, refresh the shown output::

    python tests/test_docs_zh.py --update
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

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ZH = DOCS / "zh"
INDEX = ZH / "README.md"
TIMEOUT_S = 120
COLUMNS = "100"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
MARKER = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")
CJK = re.compile(r"[\u4e00-\u9fff]")
# a paragraph without CJK is English when a word is left once code spans and addresses are gone
# (a heading that is only a command, "## `suanli top`", is not)
CODE = re.compile(r"`[^`]*`|https?://\S+")
WORD = re.compile(r"[A-Za-z]{3,}")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")

# English main-job doc -> its Chinese page (fit has no English page of its own: it is a section of
# plan.md and memory.md, and docs/zh/fit.md gathers them).
TRANSLATED = {
    "memory.md": "memory.md",
    "speed.md": "speed.md",
    "plan.md": "plan.md",
    "cost.md": "cost.md",
    "live.md": "live.md",
    "doctor.md": "doctor.md",
    "explain.md": "explain.md",
    "accuracy.md": "accuracy.md",
}
EXTRA_PAGES = {"fit.md"}


@dataclass(frozen=True)
class Command:
    page: str
    line: int  # 1-based line of the command in the page
    text: str  # the command as written, without "$ "
    argv: tuple[str, ...]  # from "suanli" on
    env: tuple[tuple[str, str], ...]  # VAR=value assignments before "suanli"
    console: bool
    shown: str  # console blocks: the output shown under the command
    not_run: str  # console blocks: the reason they are not run, "" when they are

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}:{self.text[:60]}"


def pages() -> list[Path]:
    return sorted(ZH.glob("*.md"))


def _split(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None:
    """The ``suanli`` argv of one shell line and the environment set for it, or None."""
    tokens = shlex.split(text, comments=True)
    if "suanli" not in tokens:
        return None
    at = tokens.index("suanli")
    before = tokens[:at]
    if "|" in before:  # "journalctl -k | suanli explain --log -"
        before = before[len(before) - before[::-1].index("|") :]
    if not all(ENV.match(t) for t in before):
        return None  # "suanli" as an argument of another program
    env = tuple(tuple(t.split("=", 1)) for t in before)
    argv = tokens[at:]
    if "|" in argv:
        argv = argv[: argv.index("|")]
    return tuple(argv), env  # type: ignore[return-value]


def commands_of(page: Path) -> list[Command]:
    lines = page.read_text("utf-8").splitlines()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        end = i + 1
        while lines[end].strip() != "```":
            end += 1
        kind = fence[3:].strip()
        body = lines[i + 1 : end]
        if kind == "console":
            assert body and body[0].startswith("$ "), f"{page.name}:{i + 2}: '$ ' line first"
            assert not any(b.startswith("$ ") for b in body[1:]), (
                f"{page.name}:{i + 2}: one command per console block"
            )
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = MARKER.match(lines[j].strip()) if j >= 0 else None
            parsed = _split(body[0][2:])
            assert parsed, f"{page.name}:{i + 2}: a console block shows a suanli command"
            found.append(
                Command(
                    page=page.name,
                    line=i + 2,
                    text=body[0][2:].strip(),
                    argv=parsed[0],
                    env=parsed[1],
                    console=True,
                    shown="\n".join(body[1:]),
                    not_run=m.group(1) if m else "",
                )
            )
        elif kind == "bash":
            k = 0
            while k < len(body):
                start = k
                text = body[k]
                while text.rstrip().endswith("\\") and k + 1 < len(body):
                    k += 1
                    text = text.rstrip()[:-1] + " " + body[k].strip()
                k += 1
                parsed = _split(text)
                if parsed:
                    found.append(
                        Command(
                            page=page.name,
                            line=i + 2 + start,
                            text=text.strip(),
                            argv=parsed[0],
                            env=parsed[1],
                            console=False,
                            shown="",
                            not_run="",
                        )
                    )
        i = end + 1
    return found


COMMANDS = [c for p in pages() for c in commands_of(p)]
EXAMPLES = [c for c in COMMANDS if c.console]


def run(command: Command, config_home: str) -> subprocess.CompletedProcess[str]:
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
    env.update(dict(command.env))
    return subprocess.run(
        [sys.executable, "-m", "suanli", *command.argv[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=ROOT,
        check=False,
    )


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    out: set[str] = set()
    fenced = False
    for line in page.read_text("utf-8").splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6}\s+(.*)$", line)):
            out.add(slug(m.group(1)))
    return out


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text("utf-8"), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def paragraphs(page: Path) -> list[tuple[int, str]]:
    """(line, text) of each paragraph outside fenced and indented code blocks."""
    lines = page.read_text("utf-8").splitlines()
    out: list[tuple[int, str]] = []
    block: list[str] = []
    start = 0
    fenced = False

    def flush() -> None:
        if block and not all(b.startswith("    ") for b in block):
            out.append((start + 1, "\n".join(block)))
        block.clear()

    for n, line in enumerate(lines):
        if line.strip().startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced:
            continue
        if not line.strip():
            flush()
            continue
        if not block:
            start = n
        block.append(line)
    flush()
    return out


# --- the index and the pages -------------------------------------------------------------------


def test_the_index_links_to_pages_that_exist() -> None:
    linked = set()
    for target in links(INDEX):
        path = target.split("#", 1)[0]
        if not path or "://" in path:
            continue
        assert (ZH / path).resolve().exists(), f"docs/zh/README.md links to missing {target}"
        if "/" not in path:
            linked.add(path)
    unlinked = {p.name for p in pages()} - linked - {"README.md"}
    assert not unlinked, f"docs/zh pages not linked from docs/zh/README.md: {sorted(unlinked)}"


def test_every_translated_english_doc_has_its_chinese_page() -> None:
    index = links(INDEX)
    for english, chinese in TRANSLATED.items():
        assert (DOCS / english).exists(), f"docs/{english} is gone; update TRANSLATED"
        page = ZH / chinese
        assert page.exists(), f"docs/{english} has no Chinese page docs/zh/{chinese}"
        assert chinese in index, f"docs/zh/README.md does not link {chinese}"
        assert any(t.split("#")[0] == f"../{english}" for t in links(page)), (
            f"docs/zh/{chinese} does not link its English original ../{english}"
        )
    for extra in EXTRA_PAGES:
        assert (ZH / extra).exists() and extra in index


def test_the_chinese_readme_links_the_chinese_docs() -> None:
    assert "(docs/zh/README.md)" in (ROOT / "README.zh.md").read_text("utf-8")


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_links_land(page: Path) -> None:
    for target in links(page):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"docs/zh/{page.name} links to missing {target}"
        # anchors are checked on the Chinese pages (the English ones are checked by their authors)
        if anchor and dest.parent == ZH and dest.suffix == ".md":
            assert anchor in anchors(dest), f"docs/zh/{page.name}: no heading for {target}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_no_paragraph_is_left_in_english(page: Path) -> None:
    english = [
        f"docs/zh/{page.name}:{n}: {text[:80]!r}"
        for n, text in paragraphs(page)
        if not CJK.search(text) and WORD.search(CODE.sub("", text))
    ]
    assert not english, "untranslated paragraphs:\n" + "\n".join(english)


def test_the_pages_show_commands() -> None:
    assert len(COMMANDS) >= 30
    assert len([e for e in EXAMPLES if not e.not_run]) >= 8
    shown = {c.argv[c.argv.index("--lang") + 2] for c in COMMANDS}
    assert {"mem", "perf", "plan", "fit", "cost", "doctor", "top", "explain"} <= shown


# --- the commands ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_command_parses(command: Command) -> None:
    """Each command carries --lang zh and click parses it down to its subcommand (nothing runs)."""
    import click

    from suanli.cli.main import cli, take_lang

    where = f"docs/zh/{command.page}:{command.line}: {command.text}"
    lang, args = take_lang(list(command.argv[1:]))
    assert lang == "zh", f"{where}: write the commands with --lang zh"
    try:
        ctx = cli.make_context("suanli", list(args))
        group: click.Command = cli
        while isinstance(group, click.Group):
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
            if not rest:
                break
            name, sub, rest = group.resolve_command(ctx, rest)
            assert sub is not None and name is not None, where
            ctx = sub.make_context(name, rest, parent=ctx)
            group = sub
    except click.UsageError as exc:
        pytest.fail(f"{where}: does not parse: {exc.format_message()}")
    except click.exceptions.Exit:
        pytest.fail(f"{where}: exits while parsing (--help or --version?)")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_console_example_prints_what_it_shows(example: Command, tmp_path: Path) -> None:
    if example.not_run:
        pytest.skip(f"docs/zh/{example.page}:{example.line} is not run: {example.not_run}")
    where = f"docs/zh/{example.page}:{example.line}: {example.text}"
    done = run(example, str(tmp_path))
    assert done.returncode == 0, f"{where} exited {done.returncode}: {done.stderr[-2000:]}"
    assert example.shown.strip(), f"{where}: the page shows no output"
    shown = NUMBER.findall(example.shown)
    assert shown == NUMBER.findall(done.stdout), (
        f"{where}: the numbers shown are not the numbers printed; run "
        f"'python tests/test_docs_zh.py --update'.\nprinted:\n{done.stdout}"
    )


def update() -> int:
    """Rewrite every runnable console example's shown output with what it prints now."""
    changed = 0
    with tempfile.TemporaryDirectory() as config_home:
        for page in pages():
            lines = page.read_text("utf-8").splitlines()
            for example in reversed(commands_of(page)):
                if not example.console or example.not_run:
                    continue
                done = run(example, config_home)
                if done.returncode != 0:
                    print(f"{page.name}:{example.line}: exit {done.returncode}: {done.stderr}")
                    continue
                printed = [ln.rstrip() for ln in done.stdout.rstrip("\n").splitlines()]
                start = example.line  # 0-based index of the first output line
                end = start
                while lines[end].strip() != "```":
                    end += 1
                if lines[start:end] != printed:
                    lines[start:end] = printed
                    changed += 1
                    print(f"docs/zh/{page.name}:{example.line}: {example.text}: updated")
            page.write_text("\n".join(lines) + "\n", "utf-8")
    print(f"{changed} example(s) updated; reread the text around them")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_docs_zh.py --update")
    sys.exit(update())
