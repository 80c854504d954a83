"""The DCGM-exporter-compatible series of `suanli export` (names, units, labels as NVIDIA's
dcgm-exporter writes them) and the repo's Grafana dashboard and alert rules: importable, and every
expression over series the exporter really exposes."""

from __future__ import annotations

import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from suanli.live import exporter
from suanli.live.jobs import JobReport, job_families
from suanli.live.samples import DeviceSample

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
MIB = 2**20


def full_gpu(index: int = 0, **kw: Any) -> DeviceSample:
    """A reading with every field the exporter writes, throttled for two reasons."""
    fields: dict[str, Any] = dict(
        uuid=f"GPU-{index:08x}-1111-2222-3333-444444444444",
        memory_total_bytes=81_559 * MIB,
        memory_used_bytes=70_000 * MIB + 123,  # DCGM writes whole MiB: the 123 bytes go
        utilization_pct=97.0,
        memory_utilization_pct=41.0,
        encoder_pct=0.0,
        decoder_pct=3.0,
        power_w=650.25,
        power_limit_w=700.0,
        temperature_c=61.0,
        sm_clock_mhz=1980.0,
        memory_clock_mhz=2619.0,
        pcie_gen=4,
        pcie_gen_max=5,
        pcie_width=16,
        pcie_width_max=16,
        throttle_reasons=("sw_power_cap", "hw_thermal_slowdown"),
        ecc_corrected_volatile=3,
        ecc_uncorrected_volatile=0,
        ecc_corrected_aggregate=41,
        ecc_uncorrected_aggregate=1,
        xid_last=79,
    )
    fields.update(kw)
    return DeviceSample(index, "NVIDIA H100 80GB HBM3", "nvidia", **fields)


def parsed(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Family name -> [(labels, value)] as prometheus_client's parser reads ``text``."""
    return {
        f.name: [(dict(s.labels), s.value) for s in f.samples]
        for f in text_string_to_metric_families(text)
    }


def job_report(**kw: Any) -> JobReport:
    """A training rank's report, fresh and from this (live) process."""
    fields: dict[str, Any] = dict(
        job="llama-sft",
        rank=0,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        updated_unix_s=time.time(),
        steps=120,
        step_s=0.85,
        data_wait_share=0.4,
        mfu=0.38,
    )
    fields.update(kw)
    return JobReport(**fields)


def exposed_names() -> set[str]:
    """Every family name the exporter writes for a fully reported (and a lost) GPU and a job
    that reports through the training callbacks."""
    collector = exporter.GpuCollector(
        read=lambda: [full_gpu(0), DeviceSample(1, "lost", "nvidia", lost=True)],
        jobs=lambda: job_families([job_report()]),
    )
    text = generate_latest(exporter.registry_for(collector)).decode()
    return set(parsed(text))


def test_dcgm_names_units_and_labels() -> None:
    got = parsed(exporter.render([full_gpu(0), full_gpu(1, power_w=80.0)], hostname="node-7"))
    labels = {
        "gpu": "0",
        "UUID": "GPU-00000000-1111-2222-3333-444444444444",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": "node-7",
    }

    def value(metric: str, gpu: str = "0") -> float:
        rows = [v for lab, v in got[metric] if lab["gpu"] == gpu]
        assert len(rows) == 1, metric
        return rows[0]

    assert got["DCGM_FI_DEV_GPU_UTIL"][0][0] == labels  # DCGM's spelling
    assert value("DCGM_FI_DEV_GPU_UTIL") == 97.0  # %, not a ratio
    assert value("DCGM_FI_DEV_MEM_COPY_UTIL") == 41.0
    assert value("DCGM_FI_DEV_DEC_UTIL") == 3.0
    assert value("DCGM_FI_DEV_FB_USED") == 70_000  # MiB, whole
    assert value("DCGM_FI_DEV_FB_FREE") == 81_559 - 70_000 - 1  # 123 bytes used of that MiB
    assert value("DCGM_FI_DEV_FB_TOTAL") == 81_559
    assert value("DCGM_FI_DEV_GPU_TEMP") == 61.0  # C
    assert value("DCGM_FI_DEV_POWER_USAGE") == 650.25  # W
    assert value("DCGM_FI_DEV_POWER_USAGE", "1") == 80.0
    assert value("DCGM_FI_DEV_POWER_MGMT_LIMIT") == 700.0
    assert value("DCGM_FI_DEV_SM_CLOCK") == 1980.0  # MHz, not Hz
    assert value("DCGM_FI_DEV_MEM_CLOCK") == 2619.0
    assert value("DCGM_FI_DEV_PCIE_LINK_GEN") == 4
    assert value("DCGM_FI_DEV_PCIE_MAX_LINK_GEN") == 5
    assert value("DCGM_FI_DEV_PCIE_LINK_WIDTH") == 16
    assert value("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL") == 3
    assert value("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") == 0
    assert value("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL") == 41
    assert value("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL") == 1
    assert value("DCGM_FI_DEV_XID_ERRORS") == 79
    # suanli's own series stay as they were, in base units, next to the DCGM ones
    assert [v for lab, v in got["suanli_gpu_sm_clock_hertz"] if lab["gpu"] == "0"] == [1.98e9]
    reasons = {lab["reason"] for lab, v in got["suanli_gpu_throttle_reason"] if lab["gpu"] == "0"}
    assert reasons == {"sw_power_cap", "hw_thermal_slowdown"}


def test_only_reported_fields_and_no_series_for_a_lost_gpu() -> None:
    sparse = DeviceSample(5, "NVIDIA T4", "nvidia", memory_used_bytes=0, utilization_pct=0.0)
    lost = DeviceSample(4, "unknown (lost)", "nvidia", lost=True)
    got = parsed(exporter.render([sparse, lost]))
    dcgm = {name: rows for name, rows in got.items() if name.startswith("DCGM_")}
    # used without total gives no free; no UUID becomes an empty label, as before
    assert set(dcgm) == {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"}
    assert all(lab["gpu"] == "5" and lab["UUID"] == "" for rows in dcgm.values() for lab, _ in rows)
    assert got["suanli_gpu_throttle_reason"] == []
    assert {lab["gpu"]: v for lab, v in got["suanli_gpu_lost"]} == {"5": 0.0, "4": 1.0}


#: The parts of Grafana's dashboard model an import needs (Grafana's own schema is CUE, in
#: grafana/kinds; this is the subset it insists on plus what panels need to draw).
DASHBOARD_SCHEMA = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels", "templating", "time"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "uid": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 36},
        "time": {"type": "object", "required": ["from", "to"]},
        "templating": {
            "type": "object",
            "required": ["list"],
            "properties": {
                "list": {
                    "type": "array",
                    "items": {"type": "object", "required": ["name", "type"]},
                }
            },
        },
        "panels": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "type", "title", "gridPos", "targets", "datasource"],
                "properties": {
                    "id": {"type": "integer"},
                    "type": {"enum": ["timeseries", "stat", "state-timeline", "gauge", "table"]},
                    "gridPos": {
                        "type": "object",
                        "required": ["h", "w", "x", "y"],
                        "properties": {
                            "w": {"type": "integer", "minimum": 1, "maximum": 24},
                            "x": {"type": "integer", "minimum": 0, "maximum": 23},
                        },
                    },
                    "targets": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "object", "required": ["refId", "expr"]},
                    },
                },
            },
        },
    },
}

PROMQL_WORDS = {
    "and", "or", "unless", "on", "by", "without", "ignoring", "group_left", "group_right",
    "sum", "count", "avg", "max", "min", "vector", "rate", "label_values",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The series names an expression reads (label matchers, strings and functions removed)."""
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"label_values\(([^,]*),\s*\w+\)", r"\1", bare)  # Grafana's: (series, label)
    bare = re.sub(r"\b(on|by|without|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    bare = re.sub(r"\{[^}]*\}", "", bare)
    bare = re.sub(r"\$\w+", "", bare)
    return {w for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare) if w not in PROMQL_WORDS}


def dashboard() -> dict[str, Any]:
    """The repo's dashboard as Grafana would import it."""
    loaded: dict[str, Any] = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return loaded


def test_dashboard_imports_and_reads_only_exported_series() -> None:
    dash = dashboard()
    jsonschema.validate(dash, DASHBOARD_SCHEMA)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:  # no two panels overlap on Grafana's 24-column grid
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dash["templating"]["list"] if "definition" in v]
    known = exposed_names() | {"up"}  # up: Prometheus' own per target
    read = set()
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        assert names <= known, (expr, names - known)
        read |= names
    # the DCGM series the issue names and suanli's own throttle reasons all have a panel
    for name in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "suanli_gpu_throttle_reason",
        "suanli_scrape_error",
        "suanli_job_data_wait_ratio",
        "suanli_job_mfu_ratio",
        "suanli_gpu_flag",
    ):
        assert name in read


def test_metric_names_sees_through_matchers() -> None:
    expr = 'count(a_b{x=~"c|d"} < 5 and on(gpu) e:f > 1) or vector(0) + g{h="$Hostname"}'
    assert metric_names(expr) == {"a_b", "e:f", "g"}
    assert metric_names('sum by (gpu) (label_values(x{a=~"$a"}, Hostname))') == {"x"}


def test_alert_rules_read_only_exported_series() -> None:
    yaml = pytest.importorskip("yaml")
    rules = yaml.safe_load((MONITORING / "suanli-alerts.yml").read_text())
    alerts = {r["alert"]: r["expr"] for g in rules["groups"] for r in g["rules"]}
    assert {
        "GpuIdleHoldingMemory",
        "GpuMemoryNearlyFull",
        "GpuThermalThrottling",
        "GpuPcieLinkDownTrained",
        "GpuXidError",
        "GpuUncorrectedEccErrors",
        "TrainingJobDataBound",
        "SuanliScrapeError",
    } <= set(alerts)
    known = exposed_names() | {"up"}
    for name, expr in alerts.items():
        assert metric_names(expr) and metric_names(expr) <= known, name


def test_job_series_next_to_the_gpus_and_a_broken_job_reader_spares_them() -> None:
    def broken() -> list[Any]:
        raise OSError("the jobs folder went away")

    collector = exporter.GpuCollector(
        read=lambda: [full_gpu(0)], hostname="n1", jobs=lambda: job_families([job_report()])
    )
    got = parsed(generate_latest(exporter.registry_for(collector)).decode())
    ((labels, ratio),) = got["suanli_job_data_wait_ratio"]
    assert labels == {"training_job": "llama-sft", "rank": "0", "hostname": socket.gethostname()}
    assert ratio == 0.4
    assert got["suanli_job_mfu_ratio"][0][1] == 0.38
    assert got["suanli_job_step_seconds"][0][1] == 0.85
    spared = exporter.GpuCollector(read=lambda: [full_gpu(0)], hostname="n1", jobs=broken)
    got = parsed(generate_latest(exporter.registry_for(spared)).decode())
    assert "suanli_job_data_wait_ratio" not in got
    assert got["DCGM_FI_DEV_GPU_UTIL"] and got["suanli_scrape_error"][0][1] == 0.0


def test_no_ecc_or_xid_series_where_the_gpu_reports_none() -> None:
    geforce = full_gpu(
        0,
        ecc_corrected_volatile=None,
        ecc_uncorrected_volatile=None,
        ecc_corrected_aggregate=None,
        ecc_uncorrected_aggregate=None,
        xid_last=None,
    )
    got = parsed(exporter.render([geforce]))
    assert not any(name.startswith(("DCGM_FI_DEV_ECC", "DCGM_FI_DEV_XID")) for name in got)


def test_top_flags_are_series_too() -> None:
    idle_full = DeviceSample(
        2, "NVIDIA A100", "nvidia", memory_total_bytes=80 * 2**30,
        memory_used_bytes=76 * 2**30, utilization_pct=3.0,
    )  # fmt: skip
    got = parsed(exporter.render([full_gpu(0), idle_full], hostname="n"))
    kinds = {(lab["gpu"], lab["kind"]) for lab, v in got["suanli_gpu_flag"] if v == 1.0}
    # the same rules as suanli top: the idle-but-allocated GPU, and GPU 0 throttled on a link
    # at Gen4 of Gen5 while busy
    assert kinds == {("2", "idle-memory-full"), ("0", "throttling"), ("0", "pcie-downtrained")}
