"""``suanli explain`` as a user runs it: table, JSON, no match, and one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.cli.main import cli

from .test_cli import run

pytestmark = pytest.mark.skipif(
    "explain" not in cli.commands, reason="explain is not registered in suanli.cli.main yet"
)

OOM = (
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total "
    "capacity; 20.10 GiB already allocated; 1.02 GiB free; 21.30 GiB reserved in total by PyTorch)"
)


def test_explain_an_error_given_as_argument() -> None:
    out = run("explain", OOM)
    assert out.returncode == 0, out.stderr
    assert "cuda-out-of-memory" in out.stdout and "PYTORCH_CUDA_ALLOC_CONF" in out.stdout


def test_explain_a_log_file(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "step 1 loss 3.2\nRuntimeError: Default process group has not been initialized, "
        "please make sure to call init_process_group.\n",
        encoding="utf-8",
    )
    out = run("explain", "--log", str(log))
    assert out.returncode == 0, out.stderr
    assert "process-group-not-initialized" in out.stdout


def test_explain_json_shape() -> None:
    out = run("explain", OOM, "--json")
    assert out.returncode == 0, out.stderr
    (match,) = json.loads(out.stdout)["matches"]
    assert list(match) == ["id", "error", "cause", "fix", "source", "line"]
    assert match["id"] == "cuda-out-of-memory"


def test_no_match_gives_empty_matches() -> None:
    out = run("explain", "epoch 3 loss 0.42", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"schema_version": 3, "matches": []}
    plain = run("explain", "epoch 3 loss 0.42")
    assert plain.returncode == 0 and "no known error matched" in plain.stdout


@pytest.mark.parametrize("args", [("explain",), ("explain", "--log", "/nonexistent/x.log")])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    out = run(*args)
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr
