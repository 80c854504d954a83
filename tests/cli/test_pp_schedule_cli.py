"""``--pp-schedule`` on the command line (issue 41): a layout the schedule cannot run is one line
on stderr and exit 2."""

from __future__ import annotations

import pytest

from .test_cli import run

BASE = ("perf", "llama-3.1-8b", "--task", "pretrain", "--gpu", "h100-sxm-80gb")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--gpus", "12", "--pp", "3", "--pp-schedule", "dualpipe"], "needs an even --pp"),
        (["--gpus", "2", "--pp-schedule", "zb-h1"], "needs --pp > 1"),
        (["--gpus", "8", "--pp", "4", "--vpp", "2", "--pp-schedule", "dualpipe"], "--vpp 1"),
        (["--gpus", "8", "--pp", "4", "--pp-schedule", "gpipe"], "Invalid value"),
    ],
)
def test_a_schedule_the_layout_cannot_run_is_one_line_exit_2(
    args: list[str], fragment: str
) -> None:
    out = run(*BASE, *args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
