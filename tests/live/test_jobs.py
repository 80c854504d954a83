"""Training jobs reporting to ``suanli export``: the reports' folder, atomic writes, what a
scrape ignores (stale, dead, malformed, oversized, out of range), and the callbacks publishing
from a real training loop while it runs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from suanli.live.diagnosis import StepRecord
from suanli.live.jobs import (
    JOBS_ENV,
    MAX_REPORT_BYTES,
    STALE_S,
    JobPublisher,
    JobReport,
    jobs_dir,
    read_reports,
    write_report,
)

HOST = socket.gethostname()


def _report(**kw: object) -> JobReport:
    fields: dict[str, object] = dict(
        job="sft",
        rank=0,
        hostname=HOST,
        pid=os.getpid(),
        updated_unix_s=time.time(),
        steps=10,
        step_s=0.5,
        data_wait_share=0.25,
        mfu=None,
    )
    fields.update(kw)
    return JobReport(**fields)  # type: ignore[arg-type]


def test_jobs_dir_from_the_environment_or_the_state_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(JOBS_ENV, str(tmp_path / "shared"))
    assert jobs_dir() == tmp_path / "shared"
    monkeypatch.delenv(JOBS_ENV)
    monkeypatch.setenv("SUANLI_STATE", str(tmp_path / "state"))
    assert jobs_dir() == tmp_path / "state" / "jobs"


def test_a_report_round_trips_and_is_replaced_whole(tmp_path: Path) -> None:
    first = write_report(_report(steps=10), tmp_path)
    again = write_report(_report(steps=20, mfu=0.41), tmp_path)
    assert first == again  # one file per host, process and rank
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary left behind
    (got,) = read_reports(tmp_path)
    assert (got.steps, got.mfu, got.job) == (20, 0.41, "sft")


def test_what_a_scrape_ignores(tmp_path: Path) -> None:
    now = time.time()
    write_report(_report(rank=0), tmp_path)
    write_report(_report(rank=1, updated_unix_s=now - STALE_S - 1), tmp_path)  # stale
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    write_report(_report(rank=2, pid=int(dead.stdout)), tmp_path)  # its process is gone
    write_report(_report(rank=3, pid=int(dead.stdout), hostname="other-node"), tmp_path)
    write_report(_report(rank=4, data_wait_share=1.5), tmp_path)  # not a share
    write_report(_report(rank=5, step_s=float("nan")), tmp_path)
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "wrong-types.json").write_text(json.dumps({"job": 1, "rank": "a"}))
    (tmp_path / "huge.json").write_bytes(b" " * (MAX_REPORT_BYTES + 1))
    ranks = sorted(r.rank for r in read_reports(tmp_path, now_unix_s=now))
    # rank 3 is on another host: its process cannot be checked from here, its age can
    assert ranks == [0, 3]
    assert read_reports(tmp_path / "missing") == []


def test_publisher_averages_the_recent_steps_and_computes_mfu(tmp_path: Path) -> None:
    pub = JobPublisher("sft", 1, folder=tmp_path, every_s=3600, peak_flops=1e15)
    steps = [StepRecord(data=0.1, forward=0.2, backward=0.2) for _ in range(4)]
    pub.flops_per_step = 2e14  # 0.2 PFLOP a step of 0.5 s on a 1 PFLOP/s GPU: 40%
    report = pub.report(steps)
    assert report is not None
    assert report.step_s == pytest.approx(0.5)
    assert report.data_wait_share == pytest.approx(0.2)
    assert report.mfu == pytest.approx(0.4)
    assert pub.report([]) is None

    class Rec:
        records = steps

    pub(Rec())
    pub(Rec())  # within every_s: not written again
    assert pub.path is not None and pub.path.exists()
    mtime = pub.path.stat().st_mtime_ns
    pub(Rec())
    assert pub.path.stat().st_mtime_ns == mtime
    pub.close()
    assert list(tmp_path.iterdir()) == []


def test_the_callbacks_publish_while_training_and_remove_the_report_at_the_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from suanli.live.callbacks import hf_callback

    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(JOBS_ENV, str(tmp_path))  # publishing is on when the folder is set
    cb = hf_callback(warmup=0, echo=False, job="tiny")
    cb.on_train_begin(None, None, None)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.TensorDataset(torch.randn(48, 4), torch.randn(48, 1))
    for x, y in torch.utils.data.DataLoader(data, batch_size=8):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    (report,) = read_reports(tmp_path)
    assert (report.job, report.rank, report.pid) == ("tiny", 0, os.getpid())
    assert report.steps >= 1 and report.step_s > 0 and 0 <= report.data_wait_share <= 1
    assert report.mfu is None  # on the CPU there is no peak to divide by
    cb.on_train_end(None, None, None)
    assert read_reports(tmp_path) == []


def test_no_publishing_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from suanli.live.callbacks import hf_callback

    monkeypatch.delenv(JOBS_ENV, raising=False)
    assert hf_callback(echo=False).session.publish is False
    assert hf_callback(echo=False, publish=True).session.publish is True
