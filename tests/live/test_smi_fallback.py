"""The command-line fallback (nvidia-smi, rocm-smi, amd-smi, /proc/driver/nvidia) and the doctor
on a default install, with fake vendor executables on PATH and a fake torch (no GPU here)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.live import devices, smi
from suanli.live.devices import DriverInfo, gpu_samples, parse_amd_json, providers
from suanli.live.env import diagnose, probe
from suanli.live.environment import Environment
from suanli.live.fake_devices import FakeProvider
from suanli.live.smi import (
    NvidiaSmiProvider,
    ProcNvidiaProvider,
    ToolError,
    cuda_for_driver,
    parse_cuda_version,
    parse_nvidia_smi_csv,
    run_tool,
)

from . import smi_fixtures as fx

pytestmark = pytest.mark.skipif(os.name == "nt", reason="fake tools are POSIX shell scripts")

#: The fake tools run with only their own directory on PATH: helpers by absolute path.
CAT = shutil.which("cat") or "/bin/cat"
SLEEP = shutil.which("sleep") or "/bin/sleep"


class NoNvml:
    """NVML that cannot load, as on a machine whose library is missing."""

    name = "nvml"

    def __init__(self, error: str = "NVMLError_LibraryNotFound: NVML Shared Library Not Found"):
        self._error = error

    def available(self) -> bool:
        return False

    def driver(self) -> DriverInfo:
        return DriverInfo("nvml", error=self._error)

    def sample(self) -> list[Any]:
        return []


def _tool(bindir: Path, name: str, body: str) -> Path:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _fixture(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no NVML, no vendor tool, no /proc/driver/nvidia, no fake GPUs: tests add
    the tools they need to the returned bin directory (the only thing on PATH)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("SUANLI_FAKE_GPUS", raising=False)
    monkeypatch.setattr(devices, "NvmlProvider", NoNvml)
    monkeypatch.setattr(smi, "PROC_NVIDIA", str(tmp_path / "no-proc"))
    return bindir


def _nvidia_smi(bindir: Path) -> Path:
    csv = _fixture(bindir.parent, "query.csv", fx.NVIDIA_SMI_QUERY_CSV)
    table = _fixture(bindir.parent, "table.txt", fx.NVIDIA_SMI_TABLE)
    args = bindir.parent / "args.txt"
    return _tool(
        bindir,
        "nvidia-smi",
        f'echo "$@" >> "{args}"\n'
        'case "$1" in\n'
        f'  --query-gpu=*) {CAT} "{csv}" ;;\n'
        f'  *) {CAT} "{table}" ;;\n'
        "esac\n",
    )


def _failing_tool(bindir: Path, name: str) -> Path:
    message = _fixture(bindir.parent, "no-driver.txt", fx.NVIDIA_SMI_NO_DRIVER)
    return _tool(bindir, name, f'{CAT} "{message}"\nexit 9\n')


def _fake_torch(version: str, cuda: str | None, available: bool = False) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.__version__ = version  # type: ignore[attr-defined]
    torch.version = types.SimpleNamespace(cuda=cuda, hip=None)  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: available,
        device_count=lambda: 0,
        get_arch_list=lambda: [],
    )
    torch.backends = types.SimpleNamespace()  # type: ignore[attr-defined]
    return torch


# --- parsing ------------------------------------------------------------------------------------


def test_nvidia_smi_csv_parses_units_and_missing_fields() -> None:
    samples, driver = parse_nvidia_smi_csv(fx.NVIDIA_SMI_QUERY_CSV)
    assert driver == "550.54.15"
    assert [s.name for s in samples] == ["NVIDIA GeForce RTX 4090"] * 2 + [
        "NVIDIA GeForce RTX 3060 Laptop GPU"
    ]
    first, _, laptop = samples
    assert first.memory_total_bytes == 24564 * 2**20 and first.memory_used_bytes == 18230 * 2**20
    assert first.utilization_pct == 97 and first.temperature_c == 71 and first.power_w == 412.35
    assert laptop.power_w is None and laptop.vendor == "nvidia" and not laptop.lost


def test_nvidia_smi_csv_skips_noise_and_keeps_commas_in_names() -> None:
    text = "No devices were found\n0, Weird, Name GPU, 100, 1, [Not Supported], 30, 20.5, 535.1\n"
    (sample,), driver = parse_nvidia_smi_csv(text)
    assert sample.name == "Weird, Name GPU" and sample.utilization_pct is None
    assert driver == "535.1"
    assert parse_nvidia_smi_csv("") == ([], None)


def test_cuda_version_from_the_header_or_the_release_table() -> None:
    assert parse_cuda_version(fx.NVIDIA_SMI_TABLE) == "12.4"
    assert parse_cuda_version("nothing here") is None
    assert cuda_for_driver("550.54.15") == "12.4"
    assert cuda_for_driver("535.104.05") == "12.2"
    assert cuda_for_driver("580.82.07") == "13.0"
    assert cuda_for_driver("470.82.01") is None
    assert cuda_for_driver("garbage") is None


def test_rocm_smi_json_gives_names_and_skips_na_sensors() -> None:
    first, second = parse_amd_json(json.loads(fx.ROCM_SMI_JSON))
    assert first.name == "AMD Instinct MI300X OAM" and first.vendor == "amd"
    assert first.memory_total_bytes == 206141652992
    assert first.temperature_c == 45.0 and first.power_w == 133.0  # edge N/A -> junction
    assert second.utilization_pct == 12 and second.memory_used_bytes == 10737418240


def test_amd_smi_metric_with_static_names() -> None:
    (s,) = parse_amd_json(json.loads(fx.AMD_SMI_METRIC_JSON), json.loads(fx.AMD_SMI_STATIC_JSON))
    assert s.name == "AMD Instinct MI300X"
    assert s.memory_total_bytes == 196592 * 2**20 and s.memory_used_bytes == 150000 * 2**20
    assert s.utilization_pct == 87 and s.power_w == 650 and s.temperature_c == 70
    wrapped = {"gpu_data": json.loads(fx.AMD_SMI_METRIC_JSON)}
    assert len(parse_amd_json(wrapped)) == 1


# --- the bounded runner -------------------------------------------------------------------------


def test_run_tool_is_bounded_in_time_size_and_status(machine: Path) -> None:
    slow = _tool(machine, "slow", f"exec {SLEEP} 30\n")
    start = time.monotonic()
    with pytest.raises(ToolError, match="did not answer"):
        run_tool([str(slow)], timeout_s=0.5)
    assert time.monotonic() - start < 5
    chatty = _tool(machine, "chatty", "while :; do echo 0123456789abcdef; done\n")
    with pytest.raises(ToolError, match="more than 1000 bytes"):
        run_tool([str(chatty)], max_bytes=1000)
    failing = _failing_tool(machine, "failing")
    with pytest.raises(ToolError, match="status 9: NVIDIA-SMI has failed"):
        run_tool([str(failing)])
    with pytest.raises(ToolError):
        run_tool([str(machine / "missing")])
    # No shell: a metacharacter is an argument, not a command.
    echo = _tool(machine, "echo-args", 'printf "%s|" "$@"\n')
    assert run_tool([str(echo), "a;b", "$(id)"]) == "a;b|$(id)|"


# --- the fallback order -------------------------------------------------------------------------


def test_nvidia_smi_is_used_when_nvml_cannot_load(machine: Path) -> None:
    _nvidia_smi(machine)
    provs = providers()
    assert [p.name for p in provs] == ["nvidia-smi", "cpu"]
    samples = gpu_samples(provs)
    assert len(samples) == 3 and samples[0].name == "NVIDIA GeForce RTX 4090"
    assert len(gpu_samples(provs)) == 3  # a second reading runs the tool again
    drv = provs[0].driver()
    assert drv.driver_version == "550.54.15" and drv.cuda_driver_version == "12.4"
    assert drv.device_count == 3
    calls = (machine.parent / "args.txt").read_text().splitlines()
    assert calls[0] == " ".join(smi.NVIDIA_SMI_QUERY)


def test_nvml_wins_over_nvidia_smi(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _nvidia_smi(machine)
    fake = FakeProvider([devices.DeviceSample(0, "H100", "nvidia")], name="nvml")
    monkeypatch.setattr(devices, "NvmlProvider", lambda: fake)
    assert [p.name for p in providers()] == ["nvml", "cpu"]
    assert not (machine.parent / "args.txt").exists()  # nvidia-smi never ran


def test_a_failing_nvidia_smi_means_no_gpu(machine: Path) -> None:
    _failing_tool(machine, "nvidia-smi")
    provider = NvidiaSmiProvider()
    assert not provider.available()
    assert "couldn't communicate" in str(provider.driver().error)
    assert [p.name for p in providers()] == ["cpu"]


def test_proc_driver_nvidia_is_the_last_nvidia_fallback(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = machine.parent / "proc-nvidia"
    gpu = root / "gpus" / "0000:01:00.0"
    gpu.mkdir(parents=True)
    (root / "version").write_text(fx.PROC_NVIDIA_VERSION)
    (gpu / "information").write_text(fx.PROC_NVIDIA_INFORMATION)
    monkeypatch.setattr(smi, "PROC_NVIDIA", str(root))
    provs = providers()
    assert [p.name for p in provs] == ["proc-nvidia", "cpu"]
    (s,) = gpu_samples(provs)
    assert s.name == "NVIDIA GeForce RTX 4090" and s.memory_total_bytes is None
    drv = provs[0].driver()
    assert drv.driver_version == "550.54.15" and drv.cuda_driver_version == "12.4"
    assert ProcNvidiaProvider(machine.parent / "absent").sample() == []


def test_rocm_smi_on_path(machine: Path) -> None:
    data = _fixture(machine.parent, "rocm.json", fx.ROCM_SMI_JSON)
    args = machine.parent / "rocm-args.txt"
    _tool(machine, "rocm-smi", f'echo "$@" > "{args}"\n{CAT} "{data}"\n')
    provs = providers()
    assert [p.name for p in provs] == ["amd-smi", "cpu"]
    names = [s.name for s in gpu_samples(provs)]
    assert names == ["AMD Instinct MI300X OAM"] * 2
    assert "--showproductname --showmeminfo vram" in args.read_text()


def test_amd_smi_on_path(machine: Path) -> None:
    metric = _fixture(machine.parent, "metric.json", fx.AMD_SMI_METRIC_JSON)
    static = _fixture(machine.parent, "static.json", fx.AMD_SMI_STATIC_JSON)
    _tool(
        machine,
        "amd-smi",
        f'case "$1" in\n  static) {CAT} "{static}" ;;\n  *) {CAT} "{metric}" ;;\nesac\n',
    )
    (s,) = gpu_samples()
    assert s.name == "AMD Instinct MI300X" and s.utilization_pct == 87


def test_nothing_found_is_the_cpu(machine: Path) -> None:
    assert [p.name for p in providers()] == ["cpu"]
    assert gpu_samples() == []


# --- the doctor on a default install ------------------------------------------------------------


def test_doctor_catches_cpu_only_torch_through_nvidia_smi(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nvidia_smi(machine)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("2.5.1+cpu", None))
    env = probe()
    assert env.driver.provider == "nvidia-smi" and env.gpu_vendors == ("nvidia",) * 3
    verdicts = {v.check: v for v in diagnose(env)}
    assert verdicts["driver"].status == "ok"
    assert verdicts["nvml"].status == "warn"
    trap = verdicts["cpu-only-build"]
    assert trap.status == "fail" and "torch.version.cuda is None" in trap.detail
    assert "pip install --force-reinstall torch --index-url" in trap.fix
    assert "download.pytorch.org/whl/cu124" in trap.fix
    assert "2.5.1+cpu" in verdicts["pytorch"].detail


def test_doctor_json_on_an_nvidia_machine_is_unhealthy(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from suanli.cli.main import cli

    _nvidia_smi(machine)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("2.5.1+cpu", None))
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    assert doc["healthy"] is False
    assert any(v["check"] == "cpu-only-build" for v in doc["verdicts"])
    assert "No module named" not in result.output


def test_doctor_catches_cpu_only_torch_through_proc(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = machine.parent / "proc-nvidia"
    (root / "gpus" / "0000:01:00.0").mkdir(parents=True)
    (root / "version").write_text(fx.PROC_NVIDIA_VERSION)
    monkeypatch.setattr(smi, "PROC_NVIDIA", str(root))
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("2.5.1", None))
    statuses = {v.check: v.status for v in diagnose(probe())}
    assert statuses["cpu-only-build"] == "fail"


def test_doctor_without_a_gpu_stays_sensible(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("2.5.1+cpu", None))
    verdicts = diagnose(probe())
    assert all(v.status != "fail" for v in verdicts)
    driver = next(v for v in verdicts if v.check == "driver")
    assert driver.status == "info" and "nvidia-smi not found" in driver.detail


def test_doctor_never_names_a_missing_module(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a broken install (pynvml gone) is said as a fix, not as an import error."""
    monkeypatch.setattr(
        devices,
        "NvmlProvider",
        lambda: NoNvml("ModuleNotFoundError: No module named 'pynvml'"),
    )
    monkeypatch.setitem(sys.modules, "torch", None)  # PyTorch not installed
    verdicts = diagnose(probe())
    text = json.dumps([v.__dict__ for v in verdicts])
    assert "No module named" not in text and "pip install nvidia-ml-py" in text
    _nvidia_smi(machine)
    verdicts = diagnose(probe())
    nvml = next(v for v in verdicts if v.check == "nvml")
    assert "No module named" not in nvml.detail and "nvidia-ml-py" in nvml.detail


def test_nvml_mismatch_is_not_hidden_by_the_fallback(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = machine.parent / "proc-nvidia"
    (root / "gpus" / "0000:01:00.0").mkdir(parents=True)
    monkeypatch.setattr(smi, "PROC_NVIDIA", str(root))
    monkeypatch.setattr(
        devices,
        "NvmlProvider",
        lambda: NoNvml("NVMLError_LibRmVersionMismatch: RM detected an NVML/RM version mismatch."),
    )
    monkeypatch.setitem(sys.modules, "torch", None)
    statuses = {v.check: v.status for v in diagnose(probe())}
    assert statuses["driver"] == "fail"


def test_cuda_torch_that_cannot_see_the_gpu_fails() -> None:
    env = Environment(
        driver=DriverInfo("nvidia-smi", driver_version="550.54.15", cuda_driver_version="12.4"),
        gpu_names=("NVIDIA GeForce RTX 4090",),
        gpu_vendors=("nvidia",),
        torch_version="2.5.1",
        torch_build_tag="cu124",
        torch_cuda="12.4",
        torch_cuda_available=False,
        torch_device_count=0,
    )
    verdict = next(v for v in diagnose(env) if v.check == "device-count")
    assert verdict.status == "fail" and "is_available() is False" in verdict.detail


def test_cpu_only_torch_on_an_amd_machine() -> None:
    env = Environment(
        driver=DriverInfo("amd-smi"),
        gpu_names=("AMD Radeon RX 7900 XTX",),
        gpu_vendors=("amd",),
        torch_version="2.5.1",
        torch_build_tag="cpu",
    )
    verdict = next(v for v in diagnose(env) if v.check == "cpu-only-build")
    assert verdict.status == "fail" and "whl/rocm" in verdict.fix
