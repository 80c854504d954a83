"""A switch a framework preset turns on can be turned off for the run (``--no-<switch>``)."""

from __future__ import annotations

import json

from .test_cli import run

JOB = ("perf", "gpt2", "--task", "pretrain", "--gpu", "v100-sxm2-16gb", "--gpus", "16",
       "--batch", "4", "--dtype", "fp16", "--framework", "deepspeed", "--json")  # fmt: skip


def _assumptions(*extra: str) -> list[str]:
    out = run(*JOB, *extra)
    assert out.returncode == 0, out.stderr
    return [str(a) for a in json.loads(out.stdout)["assumptions"]]


def test_the_deepspeed_preset_blocks_unless_told_not_to() -> None:
    assert any("blocks the backward pass" in a for a in _assumptions())
    overlapped = _assumptions("--no-blocking-grad-reduce")
    assert any("overlaps 90%" in a for a in overlapped)
    assert not any("blocks the backward pass" in a for a in overlapped)


def test_every_switch_has_its_negation_in_help() -> None:
    from suanli.answers.options import OPTIONS

    text = run("perf", "--help").stdout
    for option in OPTIONS:
        if option.flag:
            assert f"--no-{option.cli_name[2:]}" in text, option.name
