"""The commands as a person sees them: in a real pseudo-terminal of 80 x 40, where rich draws
progress bars and sizes tables to the window. No traceback, exit 0, no cell cut with "…", and
every value the table promises (GPU ids, $/M tokens, fix text; compared with the same command's
``--json``) printed whole."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

try:
    import fcntl
    import struct
    import termios
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(
    fcntl is None or not hasattr(os, "openpty") or sys.platform == "win32",
    reason="needs a POSIX pseudo-terminal",
)

COLUMNS, ROWS = 80, 40
TIMEOUT_S = 120
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][A-Z0-9]|[=>])")
BORDERS = re.compile(r"[│┃┏┓┗┛┣┫┡┩┳┻╇╋━─┠┨┯┷┼├┤┬┴└┘┌┐]")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    for k in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "PYTHONWARNINGS"):
        env.pop(k, None)
    env.update({"TERM": "xterm-256color", "HF_HUB_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"})
    return env


def in_terminal(*args: str) -> tuple[int, str]:
    """``suanli ARGS`` with stdin, stdout and stderr on a pseudo-terminal of 80 x 40; its exit
    status and everything it wrote (escape sequences removed)."""
    try:
        master, slave = os.openpty()
    except OSError as exc:  # pragma: no cover - no pty devices (some containers)
        pytest.skip(f"no pseudo-terminal: {exc}")
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "suanli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(),
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                pytest.fail(f"suanli {' '.join(args)} ran past {TIMEOUT_S} s in a terminal")
            ready, _, _ = select.select([master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=TIMEOUT_S)
    finally:
        os.close(master)
        if proc.poll() is None:  # pragma: no cover - only after a failure above
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    raw = b"".join(chunks).decode("utf-8", "replace")
    return code, ANSI.sub("", raw).replace("\r\n", "\n").replace("\r", "\n")


def as_json(*args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "suanli", *args, "--json"],
        capture_output=True,
        text=True,
        env={**_env(), "COLUMNS": "160"},
        timeout=TIMEOUT_S,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def words(text: str) -> set[str]:
    """The whitespace-separated tokens of what the terminal showed, borders removed."""
    return set(BORDERS.sub(" ", text).split())


def flat(text: str) -> str:
    return " ".join(BORDERS.sub(" ", text).split())


def assert_clean(args: tuple[str, ...], code: int, text: str) -> None:
    shown = text[-3000:]
    assert code == 0, f"suanli {' '.join(args)} exited {code}:\n{shown}"
    assert "Traceback" not in text, shown
    assert "TypeError" not in text, shown
    assert "…" not in text, f"a cell was cut:\n{shown}"
    drawn = [line for line in text.splitlines() if "│" in line or "┃" in line]
    assert all(len(line) <= COLUMNS for line in drawn), f"a table wider than the terminal:\n{shown}"


def assert_whole(values: list[str], text: str) -> None:
    """Every value appears with none of its words broken; a one-word value as a token."""
    shown = words(text)
    for value in values:
        for word in value.split():
            assert word in shown, f"{word!r} (of {value!r}) is not whole in:\n{text[-3000:]}"


def usd3(value: float | None) -> str | None:
    return None if not value else f"${value:,.3f}"


def _plan(text: str, doc: Any) -> list[str]:
    return [r["gpu"] for r in doc["rows"][:10]]


def _serving(text: str, doc: Any) -> list[str]:
    rows = doc["rows"][:10]
    prices = [p for p in (usd3(r.get("usd_per_million_tokens")) for r in rows if r["fits"]) if p]
    assert prices, "the serving plan priced no row"
    return [r["gpu"] for r in rows] + prices


def _explain(text: str, doc: Any) -> list[str]:
    matches = doc["matches"]
    assert matches
    for m in matches:
        # the fix reads as one piece of text: only line breaks between its words, none inside
        assert flat(m["fix"]) in flat(text), f"fix not whole:\n{text}"
    return [v for m in matches for v in (m["id"], m["fix"], m["source"], m["line"])]


def _capacity(text: str, doc: Any) -> list[str]:
    # the search draws its progress bar on a terminal: "done/total" was formatted at least once
    assert re.search(r"\b(\d+)/\1\b", text), "no progress bar was drawn"
    rows = [r for r in doc["rows"][:12] if r["fits"]]
    prices = [p for p in (usd3(r.get("usd_per_million_tokens")) for r in rows) if p]
    assert prices, "the capacity plan priced no row"
    return [r["gpu"] for r in rows] + prices


def _gpus(text: str, doc: Any) -> list[str]:
    return [g["id"] for g in doc["gpus"]]


def _compare(text: str, doc: Any) -> list[str]:
    return [r["device"] for r in doc["rows"]]


def _nothing(text: str, doc: Any) -> list[str]:
    return []


Expect = Callable[[str, Any], list[str]]


def argv(line: str) -> tuple[str, ...]:
    return tuple(line.split())


CASES: list[tuple[str, tuple[str, ...], Expect]] = [
    ("plan", ("plan",), _plan),
    (
        "plan-serving",  # docs/plan.md's serving example
        argv("plan llama-3.1-8b --task infer --rps 50 --context 2048 --output 256 --max-gpus 16"),
        _serving,
    ),
    ("explain", ("explain", "CUDA out of memory"), _explain),
    (
        "capacity-search",  # no --gpu: the SLO search over the catalog, with its progress bar
        argv("capacity llama-3.1-8b --rate 20 --slo-ttft 1 --slo-tpot 0.05 --requests 300"),
        _capacity,
    ),
    ("mem", ("mem", "llama-3.1-8b"), _nothing),
    ("perf", ("perf", "llama-3.1-8b", "--gpu", "h100"), _nothing),
    ("gpus", ("gpus",), _gpus),
    ("compare", ("compare", "llama-3.1-8b", "--devices", "cpu,h100"), _compare),
]


@pytest.mark.parametrize(("args", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_command_in_an_80_column_terminal(args: tuple[str, ...], expect: Expect) -> None:
    code, text = in_terminal(*args)
    assert_clean(args, code, text)
    assert_whole(expect(text, None if expect is _nothing else as_json(*args)), text)


def test_explain_keeps_the_brackets_of_a_log_line() -> None:
    line = (
        "[rank0]:[E1030 15:32:32.970893361 ProcessGroupNCCL.cpp:2055] [PG ID 5 PG GUID 51 Rank 0]"
    )
    line += " Process group watchdog thread terminated with exception: HIP error: operation not"
    line += " permitted when stream is capturing"
    code, text = in_terminal("explain", line)
    assert_clean(("explain",), code, text)
    assert "[rank0]:[E1030" in text


def test_the_progress_count_draws_a_task_without_a_total() -> None:
    """The capacity search's bar once formatted ``{task.total:,}`` with the total still None:
    TypeError, on a terminal only (a piped run never draws)."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    from suanli.cli.render import count_column

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with Progress(count_column(), console=console, auto_refresh=False) as bar:
        task = bar.add_task("search", total=None)
        bar.refresh()
        bar.update(task, completed=1234, total=5000)
        bar.refresh()
    assert "0/?" in out.getvalue() and "1,234/5,000" in out.getvalue()


def test_table_layout_keeps_figures_and_words_whole() -> None:
    from suanli.cli.render import table_layout

    columns = ["gpu", "$/M tokens", "why"]
    rows = [["rtx-4090-24gb", "$0.050", "1.5x cost per token than the best row"]]
    widths = table_layout(columns, rows, 40)
    assert widths is not None
    assert widths[0] >= len("rtx-4090-24gb") and widths[1] >= len("$0.050")
    assert widths[2] >= len("token") and sum(widths) + 3 * 3 + 1 <= 40
    # a word wider than any column can be: no table, the caller prints records
    assert table_layout(columns, [["x" * 60, "$1", "y"]], 40) is None
    # many short lines of wrapping in one cell: records too
    assert table_layout(["a", "b"], [["x", "word " * 80]], 30) is None


def test_print_table_never_cuts_at_any_width(monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib
    import io

    from suanli.cli.render import print_table

    columns = ["gpu", "GPUs", "TPOT", "$/M tokens", "fix"]
    rows = [
        [
            "h100-sxm-80gb",
            "2",
            "16.6 ms",
            "$0.068",
            "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ],
        ["rtx-4090-24gb", "12", "33.7 ms", "$0.050", "[bold]pip[/] install -U torch"],
    ]
    for width in (24, 40, 60, 80, 120, 200):
        monkeypatch.setenv("COLUMNS", str(width))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            print_table("a title", columns, rows, no_wrap=["gpu"])
        text = buf.getvalue()
        assert "…" not in text
        for value in (
            "h100-sxm-80gb",
            "16.6 ms",
            "$0.068",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ):
            assert value in text, (width, text)
        assert "pip" in words(text)
