"""``suanli doctor run`` mirrors the script (issue 39): its exit status is the script's whenever
the script ran, even before a first step; it ends the script's whole process tree, helpers in
sessions of their own and double-forked daemons included, so a pipe after it never waits on them;
and threads that train besides the recorded one end without tracebacks."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_cli import run

pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import sys\nsys.exit(3)\n", 3),
        ("def broken(:\n", 1),
        ("raise RuntimeError('no data')\n", 1),
    ],
    ids=["exit-3", "syntax-error", "exception"],
)
def test_an_early_ending_passes_the_scripts_status_on(
    source: str, code: int, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text(source)
    out = run("doctor", "run", str(script))
    assert out.returncode == code, out.stderr
    assert "before 2 optimizer steps" in out.stderr or "optimizer steps" in out.stderr


def test_a_timeout_before_the_first_step_is_124(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import time\ntime.sleep(600)\n")
    out = run("doctor", "run", "--timeout", "3", str(script))
    assert out.returncode == 124, out.stderr
    assert "--timeout" in out.stderr


LEAVES_HELPERS = """
import os, subprocess, sys, time, torch
# a helper in a session of its own, and a daemon that double-forks and holds stdout
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                          start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(str(helper.pid))
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(1000):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_helpers_outside_the_group_end_with_the_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(LEAVES_HELPERS)
    pid_file = tmp_path / "helper.pid"
    start = time.monotonic()
    # `| cat`: the pipe closes only when every holder of suanli's stdout is gone.
    done = subprocess.run(
        f"{sys.executable} -m suanli doctor run --steps 12 {script} {pid_file} | cat",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 60
    helper = int(pid_file.read_text())
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == "zombie"


THREADS = """
import threading, torch
def train():
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(200):
        loss = model(torch.randn(4, 8)).sum()
        opt.zero_grad(); loss.backward(); opt.step()
threads = [threading.Thread(target=train) for _ in range(4)]
for t in threads:
    t.start()
train()
for t in threads:
    t.join()
"""


def test_threads_that_train_end_without_tracebacks(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(THREADS)
    out = run("doctor", "run", "--steps", "12", str(script))
    assert "StopProfiling" not in out.stderr and "Traceback" not in out.stderr
    assert out.returncode == 0, out.stderr
