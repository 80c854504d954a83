"""Why is my training loop slow? Run an unmodified PyTorch script under instrumentation and give
one verdict (input-, sync-, launch-, communication- or compute-bound) with ranked, quantified
fixes (``suanli doctor run SCRIPT``).

PyTorch is imported when the script runs, never when this module is imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer
from suanli.errors import MissingExtra
from suanli.i18n import N_
from suanli.live.autopsy import OomAutopsy as OomAutopsy
from suanli.live.autopsy import oom_autopsy as oom_autopsy
from suanli.live.diagnosis import Fix, Report

if TYPE_CHECKING:
    from suanli.live.supervisor import ChildRun


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
    timeout_s: float | None = 1800.0
    """Stop the script after this many seconds (``None``: no limit); the steps recorded by then
    are reported."""


@dataclass(frozen=True, kw_only=True)
class ProcessRun:
    """One process of a script that trains in several (forks, ranks)."""

    label: str
    """``script`` (the process suanli started), ``rank N`` (``RANK`` set), ``fork of PID``."""
    pid: int
    steps: int
    step_time_s: float
    verdict: str
    ended: str
    """``finished`` (all steps recorded), ``returned``, ``exit``, ``raise``, ``interrupted``,
    or ``killed`` (``os._exit`` or a signal: the steps saved up to then)."""


@dataclass(frozen=True, kw_only=True)
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
    """The script's exit status (``sys.exit(N)`` or ``os._exit(N)``: N; an exception: 1; a
    signal N: 128 + N; the --timeout: 124), 0 when it ran to the end or suanli stopped it after
    its steps; ``suanli doctor run`` exits with it."""
    processes: tuple[ProcessRun, ...] | None = field(default=None, metadata=OMIT_NONE)
    """Each process that recorded steps, when there were several (forks, ranks)."""
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


class ScriptEndedEarly(ValueError):
    """The script failed before enough steps were recorded: one sentence, and the script's exit
    status, which ``suanli doctor run`` exits with."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def doctor_run(
    req: DoctorRunRequest, *, on_autopsy: Callable[[OomAutopsy], None] | None = None
) -> DoctorRunAnswer:
    """Run ``req.script`` with ``req.args`` under the profiler, in a child process that suanli
    supervises, and diagnose the recorded steps.

    The report comes whatever way the script ends (returning, ``sys.exit``, an exception,
    ``os._exit``, a signal, ``req.timeout_s``), with the script's exit status in
    ``script_exit_code``; every process that recorded steps (forks, ranks) is listed. When the
    script runs out of GPU memory, ``on_autopsy`` is called with what filled it. Raises
    ``ValueError`` on a missing script, bad step counts, or too few recorded steps;
    :class:`MissingExtra` without PyTorch.
    """
    import os

    if not os.path.isfile(req.script):
        raise ValueError(
            N_("no such script {script!r}; give the path of a Python training script").format(
                script=req.script
            )
        )
    if importlib.util.find_spec("torch") is None:
        raise MissingExtra(N_("suanli doctor run needs PyTorch: pip install 'suanli[torch]'"))
    if req.replay >= req.steps - req.warmup:
        raise ValueError(N_("--replay must leave steps to measure: lower it or raise --steps"))
    from suanli.live.supervisor import supervise

    run = supervise(
        req.script,
        req.args,
        steps=req.steps,
        replay=req.replay,
        timeout_s=req.timeout_s,
        stdout_to_stderr=req.stdout_to_stderr,
    )
    error = _how_it_ended(run, req.timeout_s)
    for doc in run.reports:
        autopsy = doc.get("autopsy")
        if isinstance(autopsy, dict) and on_autopsy is not None:
            on_autopsy(OomAutopsy(doc=autopsy.get("doc"), error=autopsy.get("error")))
    primary = _primary(run.reports, run.main_pid)
    recorded = len(primary["snapshot"]["records"]) if primary else 0
    if recorded <= req.warmup and run.exit_code != 0:
        # The script failed (a syntax error: 1, sys.exit(3): 3, --timeout: 124) before its
        # steps: suanli says so and exits as the script did.
        raise ScriptEndedEarly(
            N_("the script ended before {need} optimizer steps were recorded ({error})").format(
                need=req.warmup + 1, error=error or run.ended_by
            ),
            run.exit_code,
        )
    if recorded <= req.warmup:
        raise ValueError(
            N_(
                "only {recorded} optimizer steps were recorded (the script: {error}); does the "
                "script call optimizer.step() in a loop?"
            ).format(recorded=recorded, error=error)
            if error
            else N_(
                "only {recorded} optimizer steps were recorded; does the script call "
                "optimizer.step() in a loop?"
            ).format(recorded=recorded)
        )
    assert primary is not None
    from suanli.live.profiler import report_from_snapshot

    report = report_from_snapshot(primary["snapshot"], req.warmup)
    processes = tuple(_process_run(doc, run.main_pid, req.warmup) for doc in run.reports)
    answer = run_answer(report, error, run.exit_code)
    return replace(answer, processes=processes if len(processes) > 1 else None)


def _how_it_ended(run: ChildRun, timeout_s: float | None) -> str | None:
    """One phrase for an ending other than a clean one, ``None`` for a clean one."""
    if run.ended_by == "timeout":
        return N_("stopped at the {timeout:g} s --timeout").format(timeout=timeout_s)
    if run.ended_by.startswith("SIG"):
        return N_("stopped by {signal} sent to suanli").format(signal=run.ended_by)
    if run.ended_by == "suanli" or run.exit_code == 0:
        return None
    main = next((d for d in run.reports if d["pid"] == run.main_pid), None)
    ending = main.get("ending") if main else None
    if isinstance(ending, dict) and ending.get("error"):
        return str(ending["error"])
    if run.exit_code > 128:
        return N_("killed by signal {signal}").format(signal=run.exit_code - 128)
    return N_("exit status {code} without an exception (os._exit or a crash)").format(
        code=run.exit_code
    )


def _primary(reports: list[dict[str, Any]], main_pid: int) -> dict[str, Any] | None:
    """The recording the verdict is on: the script's own process, or when it trained in other
    processes (forks, ranks), rank 0's or the one with the most steps."""
    with_steps = [d for d in reports if d["snapshot"]["records"]]
    if not with_steps:
        return None
    for doc in with_steps:
        if doc["pid"] == main_pid:
            return doc
    return max(with_steps, key=lambda d: (d.get("rank") == "0", len(d["snapshot"]["records"])))


def _process_run(doc: dict[str, Any], main_pid: int, warmup: int) -> ProcessRun:
    """One process's line in a multi-process report."""
    from suanli.live.profiler import report_from_snapshot

    if doc["pid"] == main_pid:
        label = "script"
    elif doc.get("rank") is not None:
        label = N_("rank {rank}").format(rank=doc["rank"])
    else:
        label = N_("fork of {parent}").format(parent=doc.get("forked_from"))
    report = report_from_snapshot(doc["snapshot"], warmup)
    ending = doc.get("ending") or {}
    return ProcessRun(
        label=label,
        pid=int(doc["pid"]),
        steps=report.steps,
        step_time_s=report.step_time_s,
        verdict=report.verdict,
        ended=str(ending.get("kind", "killed")),
    )
