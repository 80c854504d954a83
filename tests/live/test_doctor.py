"""Doctor rules on table-driven environments (the traps users fall into)."""

from __future__ import annotations

import pytest

from suanli.live.devices import DriverInfo
from suanli.live.env import diagnose, pip_command, probe, torch_wheel_tag
from suanli.live.environment import Environment

DRIVER_124 = DriverInfo("nvml", driver_version="550.54.15", cuda_driver_version="12.4")
H100 = ("NVIDIA H100 80GB HBM3",)


def _statuses(env: Environment) -> dict[str, str]:
    return {v.check: v.status for v in diagnose(env)}


def test_cpu_only_pytorch_on_a_gpu_machine_is_the_first_trap() -> None:
    env = Environment(driver=DRIVER_124, gpu_names=H100, torch_version="2.5.1")
    verdicts = {v.check: v for v in diagnose(env)}
    assert verdicts["cpu-only-build"].status == "fail"
    assert "download.pytorch.org/whl/cu124" in verdicts["cpu-only-build"].fix


def test_runtime_newer_than_driver() -> None:
    env = Environment(
        driver=DriverInfo("nvml", cuda_driver_version="11.8"),
        gpu_names=H100,
        torch_version="2.5.1",
        torch_cuda="12.4",
        torch_device_count=1,
        torch_cuda_available=True,
    )
    verdict = next(v for v in diagnose(env) if v.check == "cuda-vs-driver")
    assert verdict.status == "fail" and "cu118" in verdict.fix


def test_missing_architecture() -> None:
    env = Environment(
        driver=DRIVER_124,
        gpu_names=("NVIDIA B200",),
        gpu_capabilities=("sm_100",),
        torch_version="2.1.0",
        torch_cuda="12.1",
        torch_device_count=1,
        torch_cuda_available=True,
        torch_arch_list=("sm_80", "sm_86", "sm_90"),
    )
    assert _statuses(env)["gpu-architecture"] == "fail"
    ptx = Environment(
        driver=DRIVER_124,
        gpu_names=H100,
        gpu_capabilities=("sm_90",),
        torch_version="2.1.0",
        torch_cuda="12.1",
        torch_device_count=1,
        torch_cuda_available=True,
        torch_arch_list=("sm_80", "compute_80"),
    )
    assert _statuses(ptx)["gpu-architecture"] == "ok"  # PTX JIT covers newer arches


def test_device_count_mismatch_and_driver_library_mismatch() -> None:
    env = Environment(
        driver=DRIVER_124,
        gpu_names=H100 * 8,
        torch_version="2.5.1",
        torch_cuda="12.4",
        torch_device_count=4,
        torch_cuda_available=True,
    )
    verdict = next(v for v in diagnose(env) if v.check == "device-count")
    assert verdict.status == "warn" and "CUDA_VISIBLE_DEVICES" in verdict.fix
    broken = Environment(
        driver=DriverInfo("nvml", error="NVMLError: Driver/library version mismatch")
    )
    assert _statuses(broken)["driver"] == "fail"


def test_healthy_machine_has_no_failures() -> None:
    env = Environment(
        driver=DRIVER_124,
        gpu_names=H100,
        gpu_capabilities=("sm_90",),
        torch_version="2.5.1",
        torch_cuda="12.4",
        torch_device_count=1,
        torch_cuda_available=True,
        torch_arch_list=("sm_80", "sm_90"),
        nccl_version="2.21.5",
    )
    assert all(v.status != "fail" for v in diagnose(env))


@pytest.mark.parametrize(
    ("driver", "tag"),
    [("12.4", "cu124"), ("12.5", "cu124"), ("13.1", "cu130"), ("11.8", "cu118"), ("11.4", None)],
)
def test_wheel_tag_for_driver(driver: str, tag: str | None) -> None:
    assert torch_wheel_tag(driver) == tag
    if tag is None:
        assert "upgrade the NVIDIA driver" in pip_command(driver)


def test_probe_on_this_machine() -> None:
    """The real probe runs here: no GPU, a CPU-only torch; no failure verdict."""
    env = probe()
    verdicts = diagnose(env)
    assert verdicts and all(v.status != "fail" for v in verdicts)
