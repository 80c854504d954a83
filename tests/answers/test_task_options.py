"""An option set away from its default that the task never reads is refused in one sentence
(exit 2 on the command line, 400 on the page, ValueError in Python), instead of an answer that
quietly ignores it; an option left at its default is accepted (the page sends every field)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from suanli import PerfRequest, WorkRequest, perf
from suanli.answers.options import OPTIONS
from suanli.cli.main import cli as main

CASES = [
    ("pretrain", "--quant", "int8"),
    ("full", "--lora-rank", "8"),
    ("infer", "--zero", "3"),
    ("infer", "--dtype", "fp16"),
    ("lora", "--dispatch", "python"),
]


@pytest.mark.parametrize(("task", "flag", "value"), CASES)
def test_the_command_line_refuses_an_option_the_task_never_reads(
    task: str, flag: str, value: str
) -> None:
    args = ["perf", "llama-3.1-8b", "--task", task, "--gpu", "h100", flag, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{flag} applies to --task" in result.output and f"not {task}" in result.output
    assert result.output.count("\n") <= 2


def test_every_task_scoped_option_is_refused_elsewhere_in_python() -> None:
    """Each option a task does not read, set to a value other than its default, is a
    ValueError naming it; at its default it changes nothing."""
    checked = 0
    for option in OPTIONS:
        outside = [t for t in ("pretrain", "full", "lora", "infer") if t not in option.tasks]
        if not outside:
            continue
        task = outside[0]
        baseline = WorkRequest(task=task)
        at_default = WorkRequest(task=task, explicit=("task", option.name))
        assert (
            perf(PerfRequest("qwen2.5-0.5b", at_default, gpu="h100")).to_json()
            == perf(PerfRequest("qwen2.5-0.5b", baseline, gpu="h100")).to_json()
        )
        checked += 1
    assert checked >= 30


def test_the_page_refuses_it_with_a_400() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    body = {"model": "qwen2.5-0.5b", "task": "pretrain", "gpu": "h100", "quant": "int8"}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        bad = client.post("/api/perf", json=body)
        assert bad.status_code == 400
        message = bad.json()["error"]
        assert "quant applies to" in message and "infer" in message and "\n" not in message
        ok = client.post("/api/perf", json={**body, "quant": "bf16"})
        assert ok.status_code == 200
