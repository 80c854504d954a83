"""``suanli doctor``, ``top``, ``query``, ``export`` as a user runs them."""

from __future__ import annotations

import json

from .test_cli import run


def test_doctor_json_and_exit_code_on_this_machine() -> None:
    out = run("doctor", "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == (0 if doc["healthy"] else 1)
    assert any(v["check"] == "pytorch" for v in doc["verdicts"])


def test_top_once_with_fake_gpus_flags_problems() -> None:
    out = run("top", "--json", env={"SUANLI_FAKE_GPUS": "problems"})
    assert out.returncode == 0, out.stderr
    devices = json.loads(out.stdout)["devices"]
    assert len(devices) == 6
    assert {f["kind"] for d in devices for f in d["flags"]} >= {"throttling", "lost"}
    table = run("top", "--once", env={"SUANLI_FAKE_GPUS": "problems"})
    assert "possibly a miner" in table.stdout


def test_query_counts_and_formats() -> None:
    out = run(
        "query",
        "--fields",
        "index,utilization.gpu",
        "--count",
        "2",
        "--interval",
        "0.05",
        "--format",
        "csv",
        env={"SUANLI_FAKE_GPUS": "healthy-8xh100"},
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "index,utilization.gpu" and len(lines) == 1 + 2 * 8


def test_query_on_the_cpu_without_gpus() -> None:
    out = run("query", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["index"] == 0


def test_bad_live_input() -> None:
    for args in (
        ["query", "--fields", "gpu.magic"],
        ["top", "--interval", "0"],
        ["export", "--port", "70000"],
    ):
        out = run(*args)
        assert out.returncode == 2 and "Traceback" not in out.stderr, args
