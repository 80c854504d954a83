"""Training jobs report their step time, data-wait share and MFU to ``suanli export``.

The Hugging Face and Lightning callbacks (:mod:`suanli.live.callbacks`) with ``publish=True``
(or ``SUANLI_JOBS_DIR`` set) write one small JSON file per instrumented rank into the jobs folder
every :data:`PUBLISH_EVERY_S` seconds, atomically (a temporary file renamed over the old one),
and remove it when training ends. The exporter on the same node reads the folder on each scrape
and writes ``suanli_job_*`` series; a file older than :data:`STALE_S`, or written by a process
of this host that is gone, is ignored, so a killed job's figures do not linger.

The folder is ``SUANLI_JOBS_DIR``, else ``jobs/`` in suanli's state directory. Where the
exporter runs as another user (a system service), point both at one folder they can share.

Reading is bounded: at most :data:`MAX_REPORTS` files of at most :data:`MAX_REPORT_BYTES`, each
decoded against :class:`JobReport`'s types (msgspec); anything else is skipped, never raised.
"""

from __future__ import annotations

import logging
import math
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suanli.safe_files import UnsafeFileError, read_regular_bytes

log = logging.getLogger(__name__)

JOBS_ENV = "SUANLI_JOBS_DIR"
#: Seconds after which a report no longer counts (its job ended, hung or was killed).
STALE_S = 120.0
#: How often an instrumented rank rewrites its report (seconds).
PUBLISH_EVERY_S = 10.0
#: The recent steps a report's figures are averaged over.
WINDOW_STEPS = 50
MAX_REPORTS = 256
MAX_REPORT_BYTES = 64 * 1024
#: The labels of every job series (not ``job``: Prometheus sets that to the scrape job and
#: would rename ours ``exported_job``).
JOB_LABELS = ("training_job", "rank", "hostname")


@dataclass(frozen=True)
class JobReport:
    """One rank's recent steps, as the exporter reads them."""

    job: str
    rank: int
    hostname: str
    pid: int
    updated_unix_s: float
    steps: int
    """Steps recorded so far."""
    step_s: float
    """Mean step time over the last :data:`WINDOW_STEPS` steps."""
    data_wait_share: float
    """Share of those steps spent waiting for the next batch (0-1)."""
    mfu: float | None = None
    """Model FLOPs per second over the GPU's dense peak (0-1), when the job's FLOPs are known."""


def jobs_dir() -> Path:
    """``SUANLI_JOBS_DIR``, else ``jobs/`` in suanli's state directory."""
    value = os.environ.get(JOBS_ENV)
    if value:
        return Path(value).expanduser()
    from suanli.paths import state_dir

    return state_dir() / "jobs"


def _file_name(report: JobReport) -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "_", report.hostname)[:64]
    return f"{host}-{report.pid}-rank{report.rank}.json"


def write_report(report: JobReport, folder: Path) -> Path:
    """Write ``report`` into ``folder`` atomically (readers see the old file or the new one)."""
    import msgspec

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / _file_name(report)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(msgspec.json.encode(report))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def _valid(report: JobReport) -> bool:
    shares = [report.data_wait_share] + ([report.mfu] if report.mfu is not None else [])
    numbers = [report.step_s, report.updated_unix_s, *shares]
    return (
        all(math.isfinite(x) for x in numbers)
        and all(0.0 <= x <= 1.0 for x in shares)
        and report.step_s >= 0
        and report.steps >= 0
        and report.rank >= 0
    )


def read_reports(
    folder: Path, now_unix_s: float | None = None, stale_s: float = STALE_S
) -> list[JobReport]:
    """The current reports in ``folder``: fresh, from live processes, well-formed."""
    import msgspec

    now = time.time() if now_unix_s is None else now_unix_s
    host = socket.gethostname()
    try:
        paths = sorted(p for p in folder.iterdir() if p.suffix == ".json")[:MAX_REPORTS]
    except OSError:
        return []
    out = []
    for path in paths:
        try:
            # A FIFO, a device, a symlink to /dev/zero or an oversized file is skipped unread.
            report = msgspec.json.decode(read_regular_bytes(path, MAX_REPORT_BYTES), type=JobReport)
        except (OSError, UnsafeFileError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.debug("job report %s skipped: %s", path, exc)
            continue
        if not _valid(report) or now - report.updated_unix_s > stale_s:
            continue
        if report.hostname == host and not _alive(report.pid):
            continue
        out.append(report)
    return out


def job_families(reports: Sequence[JobReport], now_unix_s: float | None = None) -> list[Any]:
    """``suanli_job_*`` gauge families for the reports (imports prometheus_client)."""
    from prometheus_client.core import GaugeMetricFamily

    now = time.time() if now_unix_s is None else now_unix_s
    spec: list[tuple[str, str, Callable[[JobReport], float | None]]] = [
        ("suanli_job_step_seconds", "Mean training step time, recent steps", lambda r: r.step_s),
        (
            "suanli_job_data_wait_ratio",
            "Share of the recent steps spent waiting for data (0-1)",
            lambda r: r.data_wait_share,
        ),
        ("suanli_job_mfu_ratio", "Model FLOPs utilisation (0-1)", lambda r: r.mfu),
        ("suanli_job_steps", "Steps the job has recorded", lambda r: float(r.steps)),
        (
            "suanli_job_report_age_seconds",
            "Seconds since the job last reported",
            lambda r: max(now - r.updated_unix_s, 0.0),
        ),
    ]
    families = []
    for name, help_text, read in spec:
        family = GaugeMetricFamily(name, help_text, labels=JOB_LABELS)
        for r in reports:
            value = read(r)
            if value is not None:
                family.add_metric([r.job, str(r.rank), r.hostname], float(value))
        families.append(family)
    return families


def jobs_collector(folder: Path | None = None) -> Callable[[], list[Any]]:
    """What the exporter calls on each scrape: the families of the reports in ``folder``
    (default :func:`jobs_dir`, looked up at each scrape)."""

    def collect() -> list[Any]:
        return job_families(read_reports(folder if folder is not None else jobs_dir()))

    return collect


class JobPublisher:
    """Called after each recorded step (the profiler's ``on_step``): every
    :data:`PUBLISH_EVERY_S` seconds, writes this rank's report from the recent steps."""

    def __init__(
        self,
        job: str,
        rank: int,
        folder: Path | None = None,
        every_s: float = PUBLISH_EVERY_S,
        peak_flops: float | None = None,
    ) -> None:
        self.job = job
        self.rank = rank
        self.folder = folder if folder is not None else jobs_dir()
        self.every_s = every_s
        self.peak_flops = peak_flops
        """The GPU's dense peak FLOP/s at the training precision (None: no MFU)."""
        self.flops_per_step: float | None = None
        """Model FLOPs of one step on this rank (set by the callback or the user)."""
        self._last = -math.inf
        self.path: Path | None = None

    def report(self, records: Sequence[Any]) -> JobReport | None:
        """The report for the recorded steps (None before the first)."""
        recent = list(records)[-WINDOW_STEPS:]
        total = sum(r.total for r in recent)
        if not recent or total <= 0:
            return None
        step_s = total / len(recent)
        mfu = None
        if self.flops_per_step and self.peak_flops:
            mfu = min(self.flops_per_step / step_s / self.peak_flops, 1.0)
        return JobReport(
            job=self.job,
            rank=self.rank,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            updated_unix_s=time.time(),
            steps=len(records),
            step_s=step_s,
            data_wait_share=min(sum(r.data for r in recent) / total, 1.0),
            mfu=mfu,
        )

    def __call__(self, recorder: Any) -> None:
        """Publish when :attr:`every_s` has passed since the last report (never raises: a full
        disk must not stop training)."""
        now = time.monotonic()
        if now - self._last < self.every_s:
            return
        self._last = now
        try:
            report = self.report(recorder.records)
            if report is not None:
                self.path = write_report(report, self.folder)
        except Exception as exc:
            log.debug("the job report could not be written: %s", exc)

    def close(self) -> None:
        """Remove this rank's report: the job no longer runs."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
