"""On a GPU host: NVML readings agree with PyTorch, and the doctor is healthy."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_nvml_reads_the_devices_torch_sees() -> None:
    torch = pytest.importorskip("torch")
    from suanli.live.devices import NvmlProvider

    nvml = NvmlProvider()
    if not nvml.available():
        pytest.skip("no NVML on this GPU host")
    samples = nvml.sample()
    assert len(samples) >= torch.cuda.device_count()
    first = samples[0]
    total = torch.cuda.get_device_properties(0).total_memory
    assert first.memory_total_bytes is not None
    assert abs(first.memory_total_bytes - total) / total < 0.02
    assert first.power_limit_w is None or first.power_limit_w > 50
    assert first.pcie_gen is None or 1 <= first.pcie_gen <= 6


def test_doctor_is_healthy_on_a_working_gpu_host() -> None:
    pytest.importorskip("torch")
    from suanli.live.env import diagnose, probe

    verdicts = diagnose(probe())
    assert not [v for v in verdicts if v.status == "fail"], verdicts
