"""The child process of ``suanli doctor run``: ``python -m suanli.live.run_child DIR STEPS REPLAY
SCRIPT [ARGS...]``.

It runs the user's script as ``__main__`` (as ``python SCRIPT ARGS`` would: ``sys.argv`` and
``sys.path[0]`` set) under :func:`suanli.live.profiler.profile`, and saves what it recorded to
``DIR/<pid>.json`` after every step. The supervising parent (:mod:`suanli.live.supervisor`) reads
those files however this process ends: the script returning, ``sys.exit``, an exception,
``os._exit`` or a signal; the last two leave the steps saved up to then.

A process forked from this one (``multiprocessing`` with the fork start method, a forking trainer)
begins an empty recording of its own, labelled with the pid it was forked from, and saves it under
its own pid; a process that records no step writes nothing (DataLoader workers are forks too).
When every step asked for is recorded, ``DIR/<pid>.finished`` appears: the parent stops a script
that goes on after that (one that catches even ``BaseException``).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from suanli.i18n import to_data

_state: dict[str, Any] = {"forked_from": None, "memory": None}


def _save(report_dir: str, rec: Any, ending: dict[str, Any] | None, **extra: Any) -> None:
    """Write this process's recording atomically (a reader never sees half a file)."""
    if not rec.records and not rec.replay_records:
        return
    if _state["memory"] is None or ending is not None:
        # The memory breakdown walks every parameter: taken once the states exist (after the
        # first step) and again at the end, not at every step.
        _state["memory"] = rec.memory_breakdown()
    doc = {
        "pid": os.getpid(),
        "forked_from": _state["forked_from"],
        "rank": os.environ.get("RANK"),
        "finished": rec.finished,
        "ending": ending,
        "snapshot": rec.snapshot(memory=_state["memory"]),
        **extra,
    }
    path = os.path.join(report_dir, f"{os.getpid()}.json")
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(to_data(doc), f)  # sentences keep their message ids for the parent
    os.replace(tmp, path)
    if rec.finished:
        open(os.path.join(report_dir, f"{os.getpid()}.finished"), "w").close()


def _exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` gives: None 0, an int itself, anything else 1."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1


def main(argv: list[str]) -> int:
    """Run the script under the profiler; the exit status is the script's own."""
    from suanli.live.autopsy import oom_autopsy
    from suanli.live.profiler import profile

    report_dir, steps, replay, script, *args = argv
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    recording = profile(
        max_steps=int(steps),
        replay_steps=int(replay),
        on_step=lambda rec: _save(report_dir, rec, None),
    )
    with recording as rec:

        def forked() -> None:
            # The fork keeps a copy of the parent's steps: it starts its own recording.
            _state["forked_from"] = os.getppid()
            _state["memory"] = None
            rec.records.clear()
            rec.replay_records.clear()
            rec.errors.clear()

        os.register_at_fork(after_in_child=forked)
        ending: dict[str, Any] = {"kind": "returned", "code": 0, "error": None}
        autopsy: dict[str, Any] | None = None
        try:
            import runpy

            runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:  # the script's own sys.exit(N): its status is passed on
            code = _exit_status(exc.code)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            error = f"sys.exit({exc.code!r})" if code else None
            ending = {"kind": "exit", "code": code, "error": error}
        except KeyboardInterrupt:
            ending = {"kind": "interrupted", "code": 130, "error": "KeyboardInterrupt"}
        except Exception as exc:  # the script failed: its traceback, as python would print it
            traceback.print_exc()
            ending = {"kind": "raise", "code": 1, "error": f"{type(exc).__name__}: {exc}"}
            if "out of memory" in str(exc).lower() and rec.model is not None:
                outcome = oom_autopsy(rec)
                if outcome is not None:
                    autopsy = {"doc": outcome.doc, "error": outcome.error}
    if rec.finished:  # suanli stopped the script after its steps
        ending = {"kind": "finished", "code": 0, "error": None}
    _save(report_dir, rec, ending, autopsy=autopsy)
    return int(ending["code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
