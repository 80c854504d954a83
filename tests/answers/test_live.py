"""``live_report``: one reading of every device, as ``suanli top --json`` and ``/api/live``."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.live import CPU_NOTE, PSUTIL_NOTE, LiveAnswer, live_report
from suanli.live.devices import DeviceSample
from suanli.live.fake_devices import fake_provider
from suanli.live.monitor import flags
from tests.cli.test_cli import run


def _old_top_rows(samples: list[DeviceSample]) -> list[dict[str, Any]]:
    """The document ``suanli top --json`` printed before the answer layer."""
    return [
        {
            **s.__dict__,
            "processes": [p.__dict__ for p in s.processes],
            "flags": [f.__dict__ for f in flags(s)],
        }
        for s in samples
    ]


def test_cli_top_json_equals_the_answer_rows() -> None:
    env = {"SUANLI_FAKE_GPUS": "problems"}
    out = run("top", "--json", env=env)
    assert out.returncode == 0, out.stderr
    answer = live_report([fake_provider("problems")])
    doc = json.loads(out.stdout)
    assert doc == answer.top().to_json()
    assert list(doc) == ["schema_version", "devices"] and doc["schema_version"] == SCHEMA_VERSION
    # Each row has the same keys in the same order as before, and the web document's samples
    # are the same rows.
    old = _old_top_rows(fake_provider("problems").sample())
    assert json.dumps(doc["devices"]) == json.dumps(old)
    assert answer.to_json()["samples"] == doc["devices"]


def test_flags_and_numbers_of_the_problem_scenario() -> None:
    answer = live_report([fake_provider("problems")], clock=lambda: 1234.5)
    doc = answer.to_json()
    assert list(doc) == ["schema_version", "time", "gpus", "note", "samples"]
    assert doc["schema_version"] == SCHEMA_VERSION and doc["time"] == 1234.5
    assert doc["gpus"] is True and doc["note"] == ""
    first = doc["samples"][0]
    assert first["memory_used_bytes"] == 78_000 * 2**20
    # The idle-but-full flag quotes the share of memory used: 78000 of 81559 MiB.
    assert f"memory {78_000 / 81_559:.0%} full" in first["flags"][0]["message"]
    kinds = {f["kind"] for s in doc["samples"] for f in s["flags"]}
    assert kinds == {
        "idle-memory-full",
        "throttling",
        "pcie-downtrained",
        "unknown-process",
        "lost",
    }
    assert "missing_extra" not in doc


def test_no_gpu_falls_back_to_the_cpu() -> None:
    class Cpu:
        name = "cpu"

        def sample(self) -> list[DeviceSample]:
            return [DeviceSample(0, "Test CPU", "cpu", memory_total_bytes=2**34)]

    answer = live_report([fake_provider("no-gpu"), Cpu()])
    assert answer.gpus is False and answer.note == CPU_NOTE and not answer.missing_extra
    assert [r.sample.vendor for r in answer.samples] == ["cpu"]
    assert answer.top().to_json()["devices"][0]["memory_total_bytes"] == 2**34


def test_no_gpu_and_no_psutil_says_what_to_install() -> None:
    class CpuWithoutPsutil:
        name = "cpu"

        def sample(self) -> list[DeviceSample]:
            raise ImportError("No module named 'psutil'")

    answer = live_report([fake_provider("no-gpu"), CpuWithoutPsutil()])
    assert answer.samples == () and answer.note == PSUTIL_NOTE
    assert answer.missing_extra == PSUTIL_NOTE
    assert "missing_extra" not in answer.to_json()


def test_schema_and_lazy_imports() -> None:
    schema = json_schema(LiveAnswer)
    assert schema["required"] == ["schema_version", "time", "gpus", "note", "samples"]
    reading = schema["$defs"]["DeviceReading"]["properties"]
    assert "memory_used_bytes" in reading and "flags" in reading and "sample" not in reading
    code = (
        "import sys, suanli.answers.live, suanli.answers.doctor\n"
        "bad = [m for m in ('torch', 'pynvml', 'psutil') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
