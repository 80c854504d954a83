"""``--etp`` on the command line (issue 41): a degree that does not divide ``--tp`` or is negative
is one line on stderr and exit 2; ETP 1 keeps an EP-8 group inside one node."""

from __future__ import annotations

import json

import pytest

from .test_cli import run

BASE = (
    "perf", "qwen3-30b-a3b", "--task", "pretrain", "--gpu", "h100-sxm-80gb", "--tp", "2",
    "--dp", "8", "--ep", "8", "--sp", "--seq", "4096", "--ignore-fit",
)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["--etp", "3"], "--etp 3 does not divide --tp 2"), (["--etp", "-1"], "Invalid value")],
)
def test_a_bad_expert_degree_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    out = run(*BASE, *args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_whole_experts_shorten_the_all_to_all() -> None:
    split = json.loads(run(*BASE, "--json").stdout)
    whole = json.loads(run(*BASE, "--etp", "1", "--json").stdout)
    a2a = "expert_all_to_all"
    assert whole["communication_s"][a2a] < split["communication_s"][a2a]
