"""A real Prometheus (Debian's ``prometheus`` package) scrapes `suanli export` on loopback and
stores the DCGM-named series with their labels; it loads the repo's alert rules and evaluates them
over what it scraped; ``promtool`` accepts the rules and the example configuration. Each test
skips cleanly where its binary is not installed (``apt-get install prometheus``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from suanli.live import exporter
from suanli.live.jobs import JobReport, jobs_collector, write_report
from suanli.live.samples import DeviceSample

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
MIB = 2**20
#: How long to wait for Prometheus to start, scrape and evaluate (a bound, not a measurement:
#: it takes a few seconds; the bound only keeps a broken setup from hanging the suite).
DEADLINE_S = 90.0

needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool absent")
needs_prometheus = pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="prometheus absent (apt-get install prometheus)"
)


@needs_promtool
def test_promtool_accepts_the_rules_and_the_example_config() -> None:
    for args in (
        ["check", "rules", str(MONITORING / "suanli-alerts.yml")],
        ["check", "config", str(MONITORING / "prometheus.yml")],
    ):
        done = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "SUCCESS" in done.stdout


def samples() -> list[DeviceSample]:
    """GPU 0 hot and throttled, GPU 1 lost."""
    hot = DeviceSample(
        0,
        "NVIDIA H100 80GB HBM3",
        "nvidia",
        uuid="GPU-0f0f0f0f-1111-2222-3333-444444444444",
        memory_total_bytes=81_559 * MIB,
        memory_used_bytes=80_000 * MIB,
        utilization_pct=99.0,
        temperature_c=91.0,
        power_w=700.0,
        sm_clock_mhz=1200.0,
        pcie_gen=5,
        pcie_gen_max=5,
        pcie_width=8,
        pcie_width_max=16,
        throttle_reasons=("hw_thermal_slowdown",),
        ecc_uncorrected_volatile=2,
        xid_last=79,
    )
    return [hot, DeviceSample(1, "unknown (lost)", "nvidia", lost=True)]


def free_port() -> int:
    """A loopback port free right now (Prometheus takes it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def api(port: int, path: str, **query: str) -> Any:
    """The ``data`` of one Prometheus HTTP API answer, or None while it is not up."""
    url = f"http://127.0.0.1:{port}/api/v1/{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return json.load(answer)["data"]
    except (urllib.error.URLError, OSError):
        return None


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[int]:
    """A Prometheus scraping a fake-GPU exporter every second; yields its API port."""
    jobs = tmp_path / "jobs"
    report = JobReport("llama-sft", 3, socket.gethostname(), os.getpid(), time.time(), 50, 0.9, 0.6)
    write_report(report, jobs)
    collector = exporter.GpuCollector(read=samples, hostname="node-7", jobs=jobs_collector(jobs))
    server = exporter.make_server("127.0.0.1", 0, collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{json.dumps(str(MONITORING / 'suanli-alerts.yml'))}]\n"
        "scrape_configs:\n"
        "  - job_name: suanli\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{server.server_port}']}}]\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def wait_for(what: str, check: Any, log: Path) -> Any:
    """Poll ``check`` until it returns something truthy, or fail with Prometheus' log."""
    stop = time.monotonic() + DEADLINE_S
    while time.monotonic() < stop:
        got = check()
        if got:
            return got
        time.sleep(0.5)
    pytest.fail(f"{what} did not happen; prometheus said:\n{log.read_text()[-3000:]}")


@needs_prometheus
def test_real_prometheus_stores_dcgm_series_and_evaluates_the_rules(
    prometheus: int, tmp_path: Path
) -> None:
    log = tmp_path / "prometheus.log"

    def query(expr: str) -> list[dict[str, Any]]:
        data = api(prometheus, "query", query=expr)
        return [] if data is None else list(data["result"])

    used = wait_for("a scrape of DCGM_FI_DEV_FB_USED", lambda: query("DCGM_FI_DEV_FB_USED"), log)
    assert len(used) == 1  # the lost GPU has none
    labels = used[0]["metric"]
    assert labels["__name__"] == "DCGM_FI_DEV_FB_USED"
    assert labels["gpu"] == "0"
    assert labels["UUID"] == "GPU-0f0f0f0f-1111-2222-3333-444444444444"
    assert labels["modelName"] == "NVIDIA H100 80GB HBM3"
    assert labels["Hostname"] == "node-7"
    assert labels["job"] == "suanli"
    assert float(used[0]["value"][1]) == 80_000
    assert float(query("DCGM_FI_DEV_SM_CLOCK")[0]["value"][1]) == 1200.0
    assert float(query("DCGM_FI_DEV_PCIE_LINK_WIDTH")[0]["value"][1]) == 8.0
    assert float(query('up{job="suanli"}')[0]["value"][1]) == 1.0
    assert float(query("DCGM_FI_DEV_XID_ERRORS")[0]["value"][1]) == 79.0
    (wait,) = query("suanli_job_data_wait_ratio")
    assert wait["metric"]["training_job"] == "llama-sft"
    assert wait["metric"]["job"] == "suanli"  # Prometheus' own, not overwritten
    assert (wait["metric"]["rank"], float(wait["value"][1])) == ("3", 0.6)

    # every rule evaluates without error over the scraped series, and the problems in the
    # samples put their alerts in the pending state (each has a `for:` longer than this test)
    def pending() -> set[str]:
        data = api(prometheus, "alerts")
        return {a["labels"]["alertname"] for a in (data or {}).get("alerts", [])}

    expected = {
        "GpuMemoryNearlyFull",
        "GpuThermalThrottling",
        "GpuPcieLinkDownTrained",
        "GpuLost",
        "GpuXidError",
        "GpuUncorrectedEccErrors",
        "TrainingJobDataBound",
    }
    wait_for(f"alerts {sorted(expected)}", lambda: expected <= pending(), log)
    assert "GpuIdleHoldingMemory" not in pending()  # 99% busy is not idle

    def health() -> dict[str, tuple[str, str]]:
        groups = (api(prometheus, "rules") or {}).get("groups", [])
        return {
            r["name"]: (r["health"], r.get("lastError", "")) for g in groups for r in g["rules"]
        }

    # "unknown" until a rule's group is first evaluated, "err" with lastError if it fails
    wait_for("a first evaluation of every rule", lambda: "unknown" not in str(health()), log)
    assert len(health()) == 12
    assert all(h == "ok" for h, _ in health().values()), health()
