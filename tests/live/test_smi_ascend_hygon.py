"""The ``npu-smi`` (Huawei Ascend) and ``hy-smi`` (Hygon DCU) readers, their place in the provider
order, and the doctor's CANN / torch_npu / driver agreement check, with fake executables on PATH
and a fake CANN install (no accelerator here)."""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
import types
from pathlib import Path

import pytest

from suanli.live import ascend_env, ascend_hygon_smi, devices, env, smi
from suanli.live.ascend_env import ascend_verdicts, cann_version
from suanli.live.ascend_hygon_smi import (
    HySmiProvider,
    NpuSmiProvider,
    parse_hy_smi_json,
    parse_hy_smi_table,
    parse_npu_smi_info,
)
from suanli.live.devices import DriverInfo, gpu_samples, providers
from suanli.live.env import diagnose, probe
from suanli.live.environment import Environment

from . import smi_fixtures as fx
from .test_smi_fallback import NoNvml

pytestmark = pytest.mark.skipif(os.name == "nt", reason="fake tools are POSIX shell scripts")

CAT = shutil.which("cat") or "/bin/cat"
SLEEP = shutil.which("sleep") or "/bin/sleep"
MIB = 2**20


def _tool(bindir: Path, name: str, body: str) -> Path:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _cat_tool(bindir: Path, name: str, text: str, *, status: int = 0) -> Path:
    data = bindir.parent / f"{name}.out"
    data.write_text(text, encoding="utf-8")
    args = bindir.parent / f"{name}.args"
    return _tool(bindir, name, f'echo "$@" >> "{args}"\n{CAT} "{data}"\nexit {status}\n')


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No NVML, no vendor tool, no /proc/driver/nvidia, no CANN: tests add what they need."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("SUANLI_FAKE_GPUS", raising=False)
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(devices, "NvmlProvider", NoNvml)
    monkeypatch.setattr(smi, "PROC_NVIDIA", str(tmp_path / "no-proc"))
    monkeypatch.setattr(ascend_env, "ASCEND_ROOT", str(tmp_path / "Ascend"))
    return bindir


def _cann(root: Path, version_cfg: str) -> None:
    latest = root / "Ascend" / "ascend-toolkit" / "latest"
    latest.mkdir(parents=True, exist_ok=True)
    (latest / "version.cfg").write_text(version_cfg, encoding="utf-8")


def _fake_torch(version: str) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.__version__ = version  # type: ignore[attr-defined]
    torch.version = types.SimpleNamespace(cuda=None, hip=None)  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: False, device_count=lambda: 0, get_arch_list=lambda: []
    )
    torch.backends = types.SimpleNamespace()  # type: ignore[attr-defined]
    return torch


# --- npu-smi --------------------------------------------------------------------------------


def test_npu_smi_info_parses_the_910b_table() -> None:
    samples, driver = parse_npu_smi_info(fx.NPU_SMI_INFO)
    assert driver == "24.1.rc1"
    assert [s.name for s in samples] == ["Ascend 910B3", "Ascend 910B3"]
    first, busy = samples
    assert first.vendor == "ascend" and first.index == 0 and busy.index == 1
    assert first.memory_total_bytes == 65536 * MIB and first.memory_used_bytes == 3318 * MIB
    assert first.power_w == 101.8 and first.temperature_c == 43 and first.utilization_pct == 0
    assert busy.memory_used_bytes == 59784 * MIB and busy.utilization_pct == 87


def test_npu_smi_info_reads_hbm_not_ddr_and_survives_noise() -> None:
    (sample,), driver = parse_npu_smi_info(fx.NPU_SMI_INFO_910)
    assert driver == "23.0.3"
    assert sample.memory_total_bytes == 32768 * MIB and sample.memory_used_bytes == 0
    assert parse_npu_smi_info("") == ([], None)
    assert parse_npu_smi_info("dcmi module initialize failed. ret is -8005\n") == ([], None)
    na = fx.NPU_SMI_INFO_910.replace("68.5        40", "NA          40")
    assert parse_npu_smi_info(na)[0][0].power_w is None


def test_npu_smi_provider_on_path(machine: Path) -> None:
    _cat_tool(machine, "npu-smi", fx.NPU_SMI_INFO)
    provs = providers()
    assert [p.name for p in provs] == ["npu-smi", "cpu"]
    drv = provs[0].driver()
    assert drv.driver_version == "24.1.rc1" and drv.device_count == 2
    assert [s.name for s in gpu_samples(provs)] == ["Ascend 910B3"] * 2
    assert (machine.parent / "npu-smi.args").read_text().split() == ["info"]


def test_npu_smi_failing_or_hanging_is_not_available(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cat_tool(machine, "npu-smi", "dcmi module initialize failed. ret is -8005\n", status=1)
    provider = NpuSmiProvider()
    assert not provider.available()
    assert "exited with status 1" in (provider.driver().error or "")
    assert [p.name for p in providers()] == ["cpu"]
    _tool(machine, "npu-smi", f"{SLEEP} 5\n")
    monkeypatch.setattr(
        ascend_hygon_smi, "run_tool", functools.partial(smi.run_tool, timeout_s=0.3)
    )
    slow = NpuSmiProvider()
    assert not slow.available()
    assert "did not answer within 0.3 s" in (slow.driver().error or "")


def test_npu_smi_not_installed(machine: Path) -> None:
    provider = NpuSmiProvider()
    assert not provider.available()
    assert provider.sample() == []
    assert provider.driver().error == "npu-smi not found on PATH"


# --- hy-smi ---------------------------------------------------------------------------------


def test_hy_smi_json_with_missing_commas_and_text_around_it() -> None:
    first, second = parse_hy_smi_json(fx.HY_SMI_JSON)
    assert first.name == "BW" and first.vendor == "hygon"
    assert first.memory_total_bytes == 65520 * MIB and first.memory_used_bytes == 64169 * MIB
    assert first.utilization_pct == 12.5 and first.power_w == 91.0 and first.temperature_c == 57
    assert second.index == 1 and second.memory_used_bytes == 1166 * MIB
    assert parse_hy_smi_json("not json") == []


def test_hy_smi_json_older_dcu_keys_in_bytes() -> None:
    old = (
        '{"card0": {"Card series": "K100_AI", "DCU use (%)": "37", '
        '"Average Graphics Package Power (W)": "181.0", "VRAM Total Memory (B)": "68702699520", '
        '"VRAM Total Used Memory (B)": "1073741824", "Temperature (Sensor edge) (C)": "41.0"}}'
    )
    (s,) = parse_hy_smi_json(old)
    assert s.name == "K100_AI" and s.utilization_pct == 37 and s.temperature_c == 41
    assert s.memory_total_bytes == 68702699520 and s.memory_used_bytes == 2**30


def test_hy_smi_table() -> None:
    idle, busy = parse_hy_smi_table(fx.HY_SMI_TABLE)
    assert idle.name == "Hygon DCU" and idle.temperature_c == 50 and idle.power_w == 80
    assert busy.utilization_pct == 97.5 and busy.memory_total_bytes is None
    assert parse_hy_smi_table("") == []


def test_hy_smi_provider_prefers_json_and_replaces_rocm_smi(machine: Path) -> None:
    json_out = machine.parent / "hy.json"
    json_out.write_text(fx.HY_SMI_JSON, encoding="utf-8")
    table = machine.parent / "hy.txt"
    table.write_text(fx.HY_SMI_TABLE, encoding="utf-8")
    _tool(
        machine,
        "hy-smi",
        'case "$*" in\n'
        f'  *--json*) {CAT} "{json_out}" ;;\n'
        "  --showdriverversion) echo 'Driver Version: 6.3.8' ;;\n"
        f'  *) {CAT} "{table}" ;;\n'
        "esac\n",
    )
    _cat_tool(machine, "rocm-smi", "{}")  # Hygon's rocm-smi sees the same DCUs
    provs = providers()
    assert [p.name for p in provs] == ["hy-smi", "cpu"]
    assert [s.name for s in gpu_samples(provs)] == ["BW", "BW"]
    assert provs[0].driver().driver_version == "6.3.8"


def test_hy_smi_falls_back_to_the_table(machine: Path) -> None:
    table = machine.parent / "hy.txt"
    table.write_text(fx.HY_SMI_TABLE, encoding="utf-8")
    _tool(
        machine,
        "hy-smi",
        f'case "$*" in\n  *--json*) echo "unrecognized arguments"; exit 2 ;;\n'
        f'  *) {CAT} "{table}" ;;\nesac\n',
    )
    provider = HySmiProvider()
    assert provider.available()
    assert [s.utilization_pct for s in provider.sample()] == [0.0, 97.5]
    assert provider.driver().driver_version is None


def test_provider_order_nvidia_amd_then_ascend_then_hygon(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cat_tool(machine, "npu-smi", fx.NPU_SMI_INFO)
    _cat_tool(machine, "hy-smi", fx.HY_SMI_JSON)
    assert [p.name for p in providers()] == ["npu-smi", "hy-smi", "cpu"]


# --- doctor: CANN / torch_npu / driver --------------------------------------------------------


def _ascend_env(cann: str | None, npu: str | None, torch: str | None, driver: str) -> Environment:
    return Environment(
        driver=DriverInfo("npu-smi", driver_version=driver, device_count=1),
        gpu_names=("Ascend 910B3",),
        gpu_vendors=("ascend",),
        cann_version=cann,
        torch_npu_version=npu,
        torch_version=torch,
    )


def test_doctor_ascend_matching_versions_are_ok() -> None:
    verdicts = {v.check: v for v in diagnose(_ascend_env("8.0.RC3", "2.4.0", "2.4.0", "24.1.rc3"))}
    assert verdicts["cann-vs-driver"].status == "ok"
    assert verdicts["cann-vs-torch-npu"].status == "ok"
    assert "torch-vs-torch-npu" not in verdicts
    assert "CUDA" not in verdicts["driver"].detail
    assert not [v for v in verdicts.values() if v.status == "fail"]


def test_doctor_ascend_torch_npu_built_for_another_cann_fails_with_the_fix() -> None:
    verdicts = {
        v.check: v for v in diagnose(_ascend_env("8.0.RC3", "2.1.0.post12", "2.1.0", "24.1.rc3"))
    }
    bad = verdicts["cann-vs-torch-npu"]
    assert bad.status == "fail"
    assert "CANN 8.1.RC1" in bad.detail
    assert "pip install torch_npu==2.1.0.post8" in bad.fix
    assert "github.com/Ascend/pytorch" in bad.fix


def test_doctor_ascend_driver_older_than_cann_needs_fails() -> None:
    verdict = next(
        v
        for v in ascend_verdicts(_ascend_env("8.1.RC1", "2.5.1", "2.5.1", "24.1.rc2"))
        if v.check == "cann-vs-driver"
    )
    assert verdict.status == "fail" and "25.0.RC1" in verdict.detail
    newer = ascend_verdicts(_ascend_env("8.1.RC1", "2.5.1", "2.5.1", "25.0.rc1.1"))
    assert {v.check: v.status for v in newer}["cann-vs-driver"] == "ok"


def test_doctor_ascend_torch_and_torch_npu_disagree() -> None:
    verdicts = {
        v.check: v for v in ascend_verdicts(_ascend_env("8.1.RC1", "2.5.1", "2.6.0", "25.0.rc1"))
    }
    assert verdicts["torch-vs-torch-npu"].status == "fail"
    assert "pip install torch==2.5.1" in verdicts["torch-vs-torch-npu"].fix


def test_doctor_ascend_missing_pieces_are_warnings() -> None:
    verdicts = {
        v.check: v.status for v in ascend_verdicts(_ascend_env(None, None, "2.5.1", "24.1.0"))
    }
    assert verdicts == {"cann": "warn", "torch-npu": "warn"}
    unknown = {
        v.check: v.status for v in ascend_verdicts(_ascend_env("9.9.9", "3.0.0", None, "30.0.0"))
    }
    assert unknown == {"cann-vs-driver": "info", "cann-vs-torch-npu": "info"}


def test_doctor_cann_version_from_version_cfg_or_info(tmp_path: Path) -> None:
    assert cann_version(tmp_path) is None
    _cann(tmp_path.parent / "a", "# version: 1.0\nruntime_running_version=[7.5.0.1.129:8.0.RC3]\n")
    assert cann_version(tmp_path.parent / "a" / "Ascend") == "8.0.RC3"
    latest = tmp_path / "ascend-toolkit" / "latest" / "aarch64-linux"
    latest.mkdir(parents=True)
    (latest / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.1.RC1\n", encoding="utf-8"
    )
    assert cann_version(tmp_path) == "8.1.RC1"


def test_doctor_probe_on_a_fake_ascend_machine(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cat_tool(machine, "npu-smi", fx.NPU_SMI_INFO.replace("24.1.rc1", "24.1.rc2"))
    _cann(machine.parent, "toolkit_running_version=[7.6.0.1.220:8.1.RC1]\n")
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("2.5.1"))
    monkeypatch.setattr(env, "torch_npu_version", lambda: "2.4.0.post2")
    snapshot = probe()
    assert snapshot.cann_version == "8.1.RC1" and snapshot.torch_npu_version == "2.4.0.post2"
    assert snapshot.gpu_vendors == ("ascend", "ascend")
    statuses = {v.check: v.status for v in diagnose(snapshot)}
    assert statuses["cann-vs-driver"] == "fail"  # 24.1.rc2 < 25.0.RC1
    assert statuses["cann-vs-torch-npu"] == "fail"  # 2.4.0.post2 is for CANN 8.0.0
    assert statuses["torch-vs-torch-npu"] == "fail"  # torch 2.5.1 vs 2.4.0
    assert "cpu-only-build" not in statuses  # torch is a CPU wheel by design on Ascend
