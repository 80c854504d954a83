"""``explain_cmd`` through click's test runner, so it is tested before ``main`` registers it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from suanli.cli.explain import NO_MATCH, explain_cmd

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
LOG = """\
step 10 loss 2.31
[rank1]:[E1130 02:11:45.1 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.
RuntimeError: CUDA error: device-side assert triggered
"""  # noqa: E501


def test_text_argument_prints_a_table() -> None:
    result = CliRunner().invoke(explain_cmd, [OOM], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "cuda-out-of-memory" in result.output
    assert "expandable_segments" in result.output
    assert "github.com" in result.output


def test_unquoted_words_are_joined() -> None:
    words = ["AssertionError:", "Torch", "not", "compiled", "with", "CUDA", "enabled"]
    result = CliRunner().invoke(explain_cmd, [*words, "--json"])
    assert result.exit_code == 0, result.output
    assert [m["id"] for m in json.loads(result.output)["matches"]] == [
        "torch-not-compiled-with-cuda"
    ]


def test_log_file_and_json_shape(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(LOG, encoding="utf-8")
    result = CliRunner().invoke(explain_cmd, ["--log", str(log), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc) == ["schema_version", "matches"]
    assert [m["id"] for m in doc["matches"]] == ["nccl-watchdog-timeout", "device-side-assert"]
    for match in doc["matches"]:
        assert list(match) == ["id", "error", "cause", "fix", "source", "line"]
        assert all(isinstance(v, str) and v for v in match.values())
    assert doc["matches"][1]["line"] == "RuntimeError: CUDA error: device-side assert triggered"


def test_log_from_stdin() -> None:
    result = CliRunner().invoke(explain_cmd, ["--log", "-", "--json"], input=LOG)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["matches"]) == 2


def test_no_match_is_one_line_and_exit_0() -> None:
    result = CliRunner().invoke(explain_cmd, ["everything is fine, loss 0.12"])
    assert result.exit_code == 0
    assert result.output.strip() == NO_MATCH
    as_json = CliRunner().invoke(explain_cmd, ["everything is fine", "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.output) == {"schema_version": 3, "matches": []}


def test_nothing_to_explain_is_a_value_error() -> None:
    result = CliRunner().invoke(explain_cmd, [])
    assert isinstance(result.exception, ValueError)
    assert "nothing to explain" in str(result.exception)
    blank = CliRunner().invoke(explain_cmd, ["   "])
    assert isinstance(blank.exception, ValueError)


def test_unreadable_log_is_a_value_error(tmp_path: Path) -> None:
    missing = CliRunner().invoke(explain_cmd, ["--log", str(tmp_path / "nope.log")])
    assert isinstance(missing.exception, ValueError)
    assert "cannot read log file" in str(missing.exception)
    directory = CliRunner().invoke(explain_cmd, ["--log", str(tmp_path)])
    assert isinstance(directory.exception, ValueError)
