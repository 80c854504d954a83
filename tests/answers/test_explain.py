"""``explain``: known errors in a message or a log, as ``suanli explain --json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from suanli.answers.base import json_schema
from suanli.answers.explain import ExplainAnswer, ExplainRequest, explain
from suanli.cli.explain import explain_cmd

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
ASSERT = "RuntimeError: CUDA error: device-side assert triggered"


def test_cli_json_equals_the_answer(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"step 1 loss 2.3\n{ASSERT}\nstep 2\n", encoding="utf-8")
    result = CliRunner().invoke(explain_cmd, [OOM, "--log", str(log), "--json"])
    assert result.exit_code == 0, result.output
    answer = explain(ExplainRequest(text=OOM, log_file=str(log)))
    doc = json.loads(result.output)
    assert doc == answer.to_json()
    assert list(doc) == ["schema_version", "matches"]
    assert list(doc["matches"][0]) == ["id", "error", "cause", "fix", "source", "line"]


def test_matches_in_order_with_the_line_that_matched(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"step 1\n{ASSERT}\n{OOM}\n{ASSERT}\n", encoding="utf-8")
    answer = explain(ExplainRequest(log_file=str(log)))
    assert [m.id for m in answer.matches] == ["device-side-assert", "cuda-out-of-memory"]
    assert answer.matches[0].line.strip() == ASSERT
    assert answer.matches[1].line.strip() == OOM
    assert explain(ExplainRequest(text="all good")).matches == ()


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="nothing to explain"):
        explain(ExplainRequest(text="  "))
    with pytest.raises(ValueError, match="cannot read log file"):
        explain(ExplainRequest(log_file="/no/such/file.log"))
    assert json_schema(ExplainAnswer)["$defs"]["ErrorMatch"]["required"][-1] == "line"
