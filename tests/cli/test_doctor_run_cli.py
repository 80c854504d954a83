"""``suanli doctor run script.py`` on a real script with a slow DataLoader (CPU)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .test_cli import run

pytest.importorskip("torch")

SCRIPT = """
import sys, time, torch
from torch.utils.data import Dataset, DataLoader
torch.set_num_threads(1)
delay = float(sys.argv[1])
class Data(Dataset):
    def __len__(self): return 100_000
    def __getitem__(self, i):
        time.sleep(delay)
        return torch.randn(64), torch.randn(1)
# The fast case keeps the data in memory, as a well-fed loop does.
data = Data() if delay > 0 else torch.utils.data.TensorDataset(torch.randn(8192, 64),
                                                               torch.randn(8192, 1))
model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(data, batch_size=32):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_doctor_run_finds_the_slow_loader(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = run("doctor", "run", "--steps", "20", "--replay", "5", "--json", str(script), "0.002")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "input-bound"
    assert doc["fixes"] and doc["fixes"][0]["expected_speedup"] > 2
    assert set(doc["shares"]) >= {"data", "forward", "backward", "optimizer"}
    assert doc["steps"] >= 10
    fast = run("doctor", "run", "--steps", "16", "--replay", "4", "--json", str(script), "0")
    assert json.loads(fast.stdout)["verdict"] != "input-bound"


def test_doctor_run_bad_input(tmp_path: Path) -> None:
    out = run("doctor", "run", str(tmp_path / "missing.py"))
    assert out.returncode == 2 and "no such script" in out.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("print('no training here')\n")
    out = run("doctor", "run", str(empty))
    assert out.returncode == 2 and "optimizer steps" in out.stderr


ENDINGS = """
import sys, torch
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
print("the script's own line")
how, after = sys.argv[1], int(sys.argv[2])
for step in range(1000):
    try:
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    except Exception:  # a script that swallows every Exception must not swallow suanli's stop
        pass
    if step == after:
        if how == "exit":
            sys.exit(3)
        if how == "raise":
            raise RuntimeError("boom")
"""


@pytest.mark.parametrize(
    ("how", "after", "code", "error"),
    [
        ("exit", 12, 3, "sys.exit(3)"),
        ("raise", 12, 1, "RuntimeError: boom"),
        ("none", 10**6, 0, None),  # runs until suanli stops it: the except cannot swallow that
    ],
)
def test_doctor_run_passes_the_scripts_exit_status_through(
    tmp_path: Path, how: str, after: int, code: int, error: str | None
) -> None:
    script = tmp_path / "train.py"
    script.write_text(ENDINGS)
    out = run(
        "doctor", "run", "--steps", "30", "--replay", "2", "--json", str(script), how, str(after)
    )
    assert out.returncode == code, out.stderr
    doc = json.loads(out.stdout)  # stdout is the answer alone: the script printed to stderr
    assert "the script's own line" in out.stderr
    assert doc["script_exit_code"] == code
    assert doc.get("script_error") == error
    assert doc["steps"] >= 5


HARD_ENDINGS = """
import os, signal, subprocess, sys, time, torch
torch.set_num_threads(1)
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
how = sys.argv[1]
if how == "orphan":  # a helper the script leaves running: suanli stops it at the end
    helper = subprocess.Popen(["sleep", "600"])
    open(sys.argv[2], "w").write(str(helper.pid))
if how == "fork":  # the same loop in a forked process too
    child = os.fork()
for step in range(10**9):
    try:
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    except BaseException:  # swallows even suanli's stop: the parent ends it
        if how != "swallow":
            raise
    if step == 12 and how == "os_exit":
        os._exit(7)
    if step == 12 and how == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    if step == 12 and how == "hang":
        if len(sys.argv) > 2:
            open(sys.argv[2], "w").close()  # tells the test the steps are recorded
        time.sleep(600)
    if how == "fork" and step == 20:
        break
if how == "fork" and child:
    os.waitpid(child, 0)
"""


@pytest.mark.parametrize(
    ("how", "code", "error"),
    [
        ("os_exit", 7, "exit status 7 without an exception (os._exit or a crash)"),
        ("sigterm", 143, "killed by signal 15"),
        # The deadline leaves a loaded CI machine time for torch's import and 13 steps.
        ("hang", 124, "stopped at the 20 s --timeout"),
    ],
)
def test_doctor_run_reports_however_the_script_ends(
    tmp_path: Path, how: str, code: int, error: str
) -> None:
    script = tmp_path / "train.py"
    script.write_text(HARD_ENDINGS)
    report = tmp_path / "report.json"
    out = run(
        "doctor", "run", "--steps", "40", "--replay", "2", "--timeout", "20", "--json",
        "-o", str(report), str(script), how,
    )  # fmt: skip
    assert out.returncode == code, out.stderr
    doc = json.loads(out.stdout)
    assert doc["script_exit_code"] == code and doc["script_error"] == error
    assert doc["steps"] >= 8  # the 13 steps saved before the end, less the warm-up
    assert json.loads(report.read_text()) == doc


def test_doctor_run_stops_a_script_that_swallows_the_stop_and_its_helpers(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(HARD_ENDINGS)
    for how in ("swallow", "orphan"):
        pid_file = tmp_path / "helper.pid"
        out = run("doctor", "run", "--steps", "20", "--replay", "2", "--json", str(script), how,
                  str(pid_file))  # fmt: skip
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["steps"] == 16 and "script_error" not in doc
    helper = int(pid_file.read_text())
    try:
        os.kill(helper, 0)
        alive = Path(f"/proc/{helper}/stat").read_text().split()[2] != "Z"
    except ProcessLookupError:
        alive = False
    assert not alive, "the script's helper process was left running"


def test_doctor_run_reports_each_forked_process(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(HARD_ENDINGS)
    out = run("doctor", "run", "--steps", "30", "--replay", "2", "--json", str(script), "fork")
    assert out.returncode == 0, out.stderr
    procs = json.loads(out.stdout)["processes"]
    assert [p["label"].split()[0] for p in procs] == ["script", "fork"]
    assert procs[1]["label"] == f"fork of {procs[0]['pid']}"
    assert all(p["steps"] == 19 for p in procs)  # 21 steps each, 2 of warm-up


def test_doctor_run_passes_a_signal_sent_to_suanli_on(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "train.py"
    script.write_text(HARD_ENDINGS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "suanli", "doctor", "run", "--steps", "40", "--replay", "2",
         "--json", str(script), "hang", str(tmp_path / "hanging")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (tmp_path / "hanging").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # the step's save lands before the marker; this is margin only
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert json.loads(stdout)["script_error"] == "stopped by SIGTERM sent to suanli"
