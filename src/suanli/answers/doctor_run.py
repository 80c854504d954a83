"""Why is my training loop slow? Run an unmodified PyTorch script under instrumentation and give
one verdict (input-, sync-, launch-, communication- or compute-bound) with ranked, quantified
fixes (``suanli doctor run SCRIPT``).

PyTorch is imported when the script runs, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer
from suanli.errors import MissingExtra
from suanli.live.diagnosis import Fix, Report


@dataclass(frozen=True)
class DoctorRunRequest:
    """The script to run, its arguments, and how many steps to record."""

    script: str
    """Path of a Python training script (run as ``__main__``)."""
    args: tuple[str, ...] = ()
    """The script's own command-line arguments."""
    steps: int = 30
    """Training steps to record (replayed steps included)."""
    replay: int = 8
    """Final steps fed from cached batches: measures 'what if data were free'."""
    warmup: int = 2
    """First steps left out of the verdict."""
    stdout_to_stderr: bool = False
    """Send the script's prints to stderr (``--json``: stdout holds only the answer)."""


@dataclass(frozen=True)
class OomAutopsy:
    """What filled the memory when the script ran out of it: the autopsy document
    (:func:`suanli.live.autopsy.autopsy`), or why it could not be made."""

    doc: dict[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class DoctorRunAnswer(Answer):
    """The verdict on the recorded steps, the time shares and the ranked fixes."""

    schema_name = "doctor-run"

    verdict: str
    """``input-bound``, ``communication-bound``, ``sync-bound``, ``launch-bound``, or
    ``compute-bound`` (healthy)."""
    explanation: str
    shares: dict[str, float]
    """Share of the step per phase (data, h2d, forward, backward, optimizer, ...)."""
    step_time_s: float
    """Median step time (seconds)."""
    steps: int
    """Steps the verdict is based on."""
    fixes: tuple[Fix, ...]
    data_free_step_s: float | None
    """Median step time when batches were replayed from memory ("what if data were free")."""
    instrumentation_errors: tuple[str, ...]
    """Hooks that failed and disabled themselves (the training itself went on)."""
    memory_bytes: dict[str, float]
    """Parameters, gradients, optimizer state, and the peak (CUDA) or resident memory (CPU)."""
    sync_sites: dict[str, int] | None = field(default=None, metadata=OMIT_NONE)
    """The call sites of synchronising calls (CUDA), most frequent first."""
    script_error: str | None = field(default=None, metadata=OMIT_NONE)
    """How the script stopped, when it raised before the steps were all recorded."""
    script_exit_code: int = 0
    """The exit status the script asked for (``sys.exit(N)``; 1 when it raised), 0 when it ran
    to the end or suanli stopped it after its steps; ``suanli doctor run`` exits with it."""
    report: Report | None = field(default=None, metadata=NOT_IN_JSON)
    """The diagnosis itself (for :func:`suanli.live.callbacks.format_report`)."""


def run_answer(
    report: Report, script_error: str | None = None, script_exit_code: int = 0
) -> DoctorRunAnswer:
    """The answer's view of a recorded :class:`Report` (and of how the script stopped)."""
    extras = report.extras
    errors = extras.get("instrumentation_errors")
    memory = extras.get("memory_bytes")
    sync_sites = extras.get("sync_sites")
    return DoctorRunAnswer(
        verdict=report.verdict,
        explanation=report.explanation,
        shares=report.shares,
        step_time_s=report.step_time_s,
        steps=report.steps,
        fixes=tuple(report.fixes),
        data_free_step_s=report.data_free_step_s,
        instrumentation_errors=tuple(errors) if isinstance(errors, (list, tuple)) else (),
        memory_bytes=dict(memory) if isinstance(memory, dict) else {},
        sync_sites=dict(sync_sites) if isinstance(sync_sites, dict) and sync_sites else None,
        script_error=script_error,
        script_exit_code=script_exit_code,
        report=report,
    )


def oom_autopsy(rec: Any) -> OomAutopsy | None:
    """The OOM autopsy of a recorded run (the CUDA peak against the device's memory); ``None``
    off CUDA. It never raises: a failure is reported in ``error``."""
    from suanli.live.autopsy import autopsy

    try:
        import torch

        if not torch.cuda.is_available():
            return None
        shape = rec.last_input_shape or (rec.batch_size or 1, 1)
        doc = autopsy(
            rec.model,
            rec.optimizer,
            batch=int(shape[0]),
            seq=int(shape[1]) if len(shape) > 1 else 1,
            limit_bytes=torch.cuda.get_device_properties(0).total_memory,
            peak_bytes=torch.cuda.max_memory_allocated(),
        )
    except Exception as exc:  # the autopsy must not hide the original error
        return OomAutopsy(error=str(exc))
    return OomAutopsy(doc=doc)


def doctor_run(
    req: DoctorRunRequest, *, on_autopsy: Callable[[OomAutopsy], None] | None = None
) -> DoctorRunAnswer:
    """Run ``req.script`` with ``req.args`` under the profiler and diagnose the recorded steps.

    When the script runs out of GPU memory, ``on_autopsy`` is called with what filled it before
    the answer (or the error) comes back. Raises ``ValueError`` on a missing script, bad step
    counts, or too few recorded steps; :class:`MissingExtra` without PyTorch.
    """
    import contextlib
    import os
    import runpy
    import sys

    if not os.path.isfile(req.script):
        raise ValueError(
            f"no such script {req.script!r}; give the path of a Python training script"
        )
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra("suanli doctor run needs PyTorch: pip install 'suanli[torch]'")
    from suanli.live.profiler import profile

    if req.replay >= req.steps - req.warmup:
        raise ValueError("--replay must leave steps to measure: lower it or raise --steps")
    saved_argv = sys.argv
    sys.argv = [req.script, *req.args]
    error = None
    exit_code = 0
    # The script's prints go to stderr while it runs, so that stdout holds only suanli's answer
    # (one JSON document with --json).
    quiet = contextlib.redirect_stdout(sys.stderr) if req.stdout_to_stderr else None
    try:
        recording = profile(max_steps=req.steps, replay_steps=req.replay)
        with recording as rec, quiet if quiet is not None else contextlib.nullcontext():
            runpy.run_path(req.script, run_name="__main__")
    except SystemExit as exc:  # the script's own sys.exit(N): its status is passed through
        exit_code = _exit_status(exc.code)
        if exit_code:
            error = f"sys.exit({exc.code!r})"
    except Exception as exc:  # the user's script failed: report what was recorded
        error = f"{type(exc).__name__}: {exc}"
        exit_code = 1
        if "out of memory" in str(exc).lower() and rec.model is not None:
            outcome = oom_autopsy(rec)
            if outcome is not None and on_autopsy is not None:
                on_autopsy(outcome)
    finally:
        sys.argv = saved_argv
    if len(rec.records) <= req.warmup:
        raise ValueError(
            f"only {len(rec.records)} optimizer steps were recorded"
            + (f" (the script failed: {error})" if error else "")
            + "; does the script call optimizer.step() in a loop?"
        )
    return run_answer(rec.report(warmup=req.warmup), error, exit_code)


def _exit_status(code: object) -> int:
    """The process status ``sys.exit(code)`` gives: None 0, an int itself, anything else 1."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1
