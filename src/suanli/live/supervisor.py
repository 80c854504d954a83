"""The parent side of ``suanli doctor run``: start the script in a child process, watch it, and
collect what every process of it recorded, whatever way it ends.

The child (:mod:`suanli.live.run_child`) runs in a process group of its own, so that at the end
every process the script started (DataLoader workers, forks, helpers it spawned) is stopped with
it: SIGTERM to the group, SIGKILL to what is left after a grace period. SIGINT, SIGTERM and SIGHUP
sent to suanli are passed to the group, so that Ctrl-C or a scheduler's stop ends the script
and still gives the report of the steps so far. ``--timeout`` bounds a script that never steps,
and a script that goes on after its steps were all recorded (one that catches even
``BaseException``) is stopped by the parent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from suanli.i18n import from_data

#: Seconds a process group gets between SIGTERM and SIGKILL.
KILL_GRACE_S = 5.0
#: Seconds a script may go on after all its steps were recorded before the parent stops it.
FINISH_GRACE_S = 10.0
#: How often the parent looks at the child (seconds).
POLL_S = 0.1
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class ChildRun:
    """How the child ended and what each of its processes recorded."""

    exit_code: int
    """The status a shell would see: the script's own, or 128 + N when signal N ended it."""
    ended_by: str
    """``script`` (it ended by itself), ``suanli`` (stopped after its steps), ``timeout``, or the
    name of the signal suanli passed on (``SIGTERM``, ``SIGINT``...)."""
    main_pid: int
    reports: list[dict[str, Any]] = field(default_factory=list)
    """Every process's saved recording (``run_child`` format), the child's own first."""


def supervise(
    script: str,
    args: tuple[str, ...],
    *,
    steps: int,
    replay: int,
    timeout_s: float | None,
    stdout_to_stderr: bool = False,
) -> ChildRun:
    """Run ``script`` under the profiler in a child process and wait for it (at most
    ``timeout_s`` seconds, ``None`` for no limit)."""
    with tempfile.TemporaryDirectory(prefix="suanli-run-") as report_dir:
        command = [
            sys.executable,
            "-m",
            "suanli.live.run_child",
            report_dir,
            str(steps),
            str(replay),
            script,
            *args,
        ]
        # Orphans of the script (a daemon that double-forked, a helper in a session of its own)
        # come back to suanli instead of init, so they can be found and ended below.
        _become_subreaper()
        before = _descendants()
        # With --json the script's prints (its whole fd 1, C code and subprocesses included) go
        # to stderr: suanli's stdout holds only the answer.
        child = subprocess.Popen(
            command, stdout=2 if stdout_to_stderr else None, start_new_session=True
        )
        forwarded: list[str] = []
        restore = _forward_signals(child.pid, forwarded)
        try:
            ended_by = _wait(child, report_dir, timeout_s)
        finally:
            restore()
            _stop_group(child)
            # What left the group (start_new_session, setsid daemons) and would hold suanli's
            # stdout open after it exits (`suanli doctor run ... | tee` waiting on it).
            _stop_descendants(before)
        if forwarded:
            ended_by = forwarded[0]
        code = child.returncode
        exit_code = 128 - code if code < 0 else code
        if ended_by == "suanli":
            exit_code = 0
        elif ended_by == "timeout":
            exit_code = 124  # as timeout(1) reports it
        return ChildRun(exit_code, ended_by, child.pid, _read_reports(report_dir, child.pid))


def _wait(child: subprocess.Popen[bytes], report_dir: str, timeout_s: float | None) -> str:
    """Wait for the child; stop it at the deadline or once it overstays its finished steps."""
    finished_marker = os.path.join(report_dir, f"{child.pid}.finished")
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    finished_at = None
    while True:
        try:
            child.wait(timeout=POLL_S)
            return "script"
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if finished_at is None and os.path.exists(finished_marker):
            finished_at = now
        if finished_at is not None and now - finished_at > FINISH_GRACE_S:
            _stop_group(child)
            child.wait()
            return "suanli"
        if deadline is not None and now > deadline:
            _stop_group(child)
            child.wait()
            return "timeout"


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to every process of the child's group, SIGKILL to those still there after the
    grace period."""
    pgid = child.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        child.poll()  # the child exited: collect it (a zombie still counts as a group member)
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _forward_signals(pgid: int, seen: list[str]) -> Any:
    """Pass SIGINT/SIGTERM/SIGHUP on to the child's group while it runs; returns the restorer.
    Off the main thread (the Python API called from a worker) signals cannot be caught: nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def forward(signum: int, _frame: Any) -> None:
        seen.append(signal.Signals(signum).name)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in _FORWARDED}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def _read_reports(report_dir: str, main_pid: int) -> list[dict[str, Any]]:
    """Every process's saved recording, the child's own first, then by pid."""
    reports = []
    for name in os.listdir(report_dir):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(report_dir, name), encoding="utf-8") as f:
                doc = from_data(json.load(f))  # the child's sentences, with their ids
        except (OSError, ValueError):
            continue  # a process killed while writing leaves only its .tmp, never half a file
        if isinstance(doc, dict) and isinstance(doc.get("pid"), int):
            reports.append(doc)
    reports.sort(key=lambda d: (d["pid"] != main_pid, d["pid"]))
    return reports


#: prctl(2) option that makes this process the reaper of its orphaned descendants (Linux 3.4+).
PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """Make orphaned descendants children of this process (Linux); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _descendants() -> set[int]:
    """The pids of this process's descendants now."""
    import psutil

    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def _stop_descendants(before: set[int]) -> None:
    """SIGTERM, then SIGKILL after the grace period, to every descendant that was not there
    before the script started (its helpers and daemons, wherever their session), and reap them."""
    import psutil

    try:
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    except psutil.Error:
        return
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _gone, alive = psutil.wait_procs(left, timeout=KILL_GRACE_S)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=KILL_GRACE_S)
