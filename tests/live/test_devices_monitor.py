"""Providers (fakes and the real CPU), flags and query fields (the Prometheus text and the
exporter: tests/live/test_exporter.py)."""

from __future__ import annotations

import json

import pytest

from suanli.live import monitor
from suanli.live.devices import (
    CpuProvider,
    NvmlProvider,
    decode_throttle,
    gpu_samples,
    parse_amd_json,
)
from suanli.live.fake_devices import fake_provider


def test_cpu_provider_reads_this_machine() -> None:
    (cpu,) = CpuProvider().sample()
    assert cpu.vendor == "cpu" and cpu.name
    assert cpu.memory_total_bytes and cpu.memory_total_bytes > 2**30
    assert cpu.utilization_pct is not None and 0 <= cpu.utilization_pct <= 100


def test_nvml_without_a_driver_is_unavailable_not_an_exception() -> None:
    nvml = NvmlProvider()
    if nvml.available():
        pytest.skip("an NVIDIA driver is present")
    assert nvml.sample() == []
    assert nvml.driver().error


def test_fake_scenarios_cover_unsupported_fields_and_a_lost_gpu() -> None:
    samples = fake_provider("problems").sample()
    t4 = next(s for s in samples if s.name == "NVIDIA T4")
    assert t4.power_w is None and t4.temperature_c is None  # not supported -> not available
    assert any(s.lost for s in samples)
    with pytest.raises(ValueError, match="unknown fake scenario"):
        fake_provider("nope")


def test_flags_find_each_problem() -> None:
    kinds = {f.kind for s in fake_provider("problems").sample() for f in monitor.flags(s)}
    assert kinds == {
        "idle-memory-full",
        "throttling",
        "pcie-downtrained",
        "unknown-process",
        "lost",
    }
    assert not [f for s in fake_provider("healthy-8xh100").sample() for f in monitor.flags(s)]


def test_throttle_bits_decode() -> None:
    assert decode_throttle(0x4 | 0x40) == ("sw_power_cap", "hw_thermal_slowdown")
    assert decode_throttle(0) == ()


def test_query_csv_and_json_match_nvidia_smi_units() -> None:
    samples = fake_provider("healthy-8xh100").sample()
    text = monitor.format_rows(
        samples[:1], ["index", "memory.total", "memory.free", "power.draw"], "csv"
    )
    assert text.splitlines() == ["index,memory.total,memory.free,power.draw", "0,81559,11559,650.0"]
    row = json.loads(monitor.format_rows(samples[:1], ["utilization.gpu"], "json"))
    assert row == {"utilization.gpu": 97.0}
    with pytest.raises(ValueError, match="unknown query field"):
        monitor.parse_fields("memory.totl")


def test_amd_json_parsing() -> None:
    data = [
        {
            "gpu": 0,
            "usage": {"gfx_activity": {"value": 87, "unit": "%"}},
            "power": {"socket_power": {"value": 650, "unit": "W"}},
            "mem_usage": {
                "total_vram": {"value": 196592, "unit": "MB"},
                "used_vram": {"value": 1024, "unit": "MB"},
            },
            "temperature": {"hotspot": {"value": 70, "unit": "C"}},
        }
    ]
    (s,) = parse_amd_json(data)
    assert s.utilization_pct == 87 and s.power_w == 650 and s.temperature_c == 70
    assert s.memory_total_bytes == 196592 * 2**20


def test_gpu_samples_uses_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_FAKE_GPUS", "healthy-8xh100")
    assert len(gpu_samples()) == 8
