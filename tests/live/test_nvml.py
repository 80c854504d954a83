"""The one NVML layer (``suanli.live.nvml``) over a fake ``pynvml``: init once and shut down once,
MIG instances, lost GPUs, memory info v2 against v1, UUIDs and ``CUDA_VISIBLE_DEVICES``; and the
AMD / nvidia-smi readers' matching lost handling."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from suanli.live import nvml
from suanli.live.bench.health import gpu_health
from suanli.live.devices import AmdSmiProvider, NvmlProvider
from suanli.live.smi import NvidiaSmiProvider, ToolError

from . import fake_pynvml as fake
from .fake_pynvml import GiB, Gpu, State

UUID_A = "GPU-aaaaaaaa-0000-0000-0000-000000000000"
UUID_B = "GPU-bbbbbbbb-0000-0000-0000-000000000000"
UUID_C = "GPU-cccccccc-0000-0000-0000-000000000000"
MIG_1 = "MIG-11111111-0000-0000-0000-000000000000"
MIG_2 = "MIG-22222222-0000-0000-0000-000000000000"

Install = Callable[..., State]


@pytest.fixture(autouse=True)
def _propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let caplog see suanli's records even after a CLI test ran with ``--debug`` (which stops
    the ``suanli`` logger from propagating)."""
    monkeypatch.setattr(logging.getLogger("suanli"), "propagate", True)


def _mig_gpu() -> Gpu:
    """An A100 80GB in MIG mode: a 3g.40gb and a 2g.20gb instance, one empty slot between."""
    return Gpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid=UUID_C,
        mig=[
            Gpu("NVIDIA A100-SXM4-80GB MIG 3g.40gb", MIG_1, 40 * GiB, 0, GiB, gi=1, ci=0),
            None,
            Gpu("NVIDIA A100-SXM4-80GB MIG 2g.20gb", MIG_2, 20 * GiB, 0, 0, gi=2, ci=0),
        ],
    )


# --- init and shutdown ---------------------------------------------------------------------------


def test_nvml_is_initialised_once_and_shut_down_once(install: Install) -> None:
    state = install([Gpu(uuid=UUID_A)])
    for _ in range(3):
        provider = NvmlProvider()
        assert provider.available()
        provider.sample()
        provider.driver()
    nvml.devices()
    assert state.init_calls == 1
    nvml.shutdown()
    nvml.shutdown()
    assert state.shutdown_calls == 1
    NvmlProvider()  # after a shutdown, the next user initialises again
    assert state.init_calls == 2


def test_a_failed_init_is_remembered_and_never_shut_down(install: Install) -> None:
    state = install([Gpu()], init_fails=True)
    first, second = NvmlProvider(), NvmlProvider()
    assert not first.available() and second.sample() == []
    assert (first.driver().error or "").startswith("NVMLError")
    assert state.init_calls == 1
    nvml.shutdown()
    assert state.shutdown_calls == 0


def test_shutdown_runs_once_at_exit(tmp_path: Path) -> None:
    """In a fresh process: several users of NVML, one nvmlInit, one nvmlShutdown at exit."""
    shutil.copy(Path(fake.__file__), tmp_path / "pynvml.py")
    events = tmp_path / "events.txt"
    code = (
        "from suanli.live.devices import NvmlProvider\n"
        "from suanli.live import nvml\n"
        "for _ in range(3):\n"
        "    NvmlProvider().sample()\n"
        "assert len(nvml.devices()) == 1\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "FAKE_NVML_LOG": str(events),
    }
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert events.read_text().split() == ["init", "shutdown"]


# --- MIG ----------------------------------------------------------------------------------------


def test_a_gpu_in_mig_mode_is_listed_as_its_instances(install: Install) -> None:
    install([Gpu(uuid=UUID_A), _mig_gpu()])
    samples = NvmlProvider().sample()
    assert [s.uuid for s in samples] == [UUID_A, MIG_1, MIG_2]
    whole, big, small = samples
    assert [big.index, small.index] == [1, 1]  # the parent's NVML index
    assert big.name.endswith("MIG 3g.40gb")
    # Each instance's own memory, not the parent's 80 GiB once per instance.
    assert big.memory_total_bytes == 40 * GiB and big.memory_used_bytes == GiB
    assert small.memory_total_bytes == 20 * GiB
    # Shared readings come from the GPU; power (the whole GPU's) is not given per instance.
    assert big.temperature_c == 61 and big.throttle_reasons == ("sw_power_cap",)
    assert big.power_w is None and whole.power_w == 650.0
    devs = nvml.devices()
    assert devs[1].mig_enabled and [m.mig_index for m in devs[1].instances] == [0, 2]
    assert {m.parent_uuid for m in devs[1].instances} == {UUID_C}


# --- lost GPUs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fails_on"),
    [
        (fake.NVML_ERROR_GPU_IS_LOST, ()),
        (fake.NVML_ERROR_GPU_IS_LOST, ("nvmlDeviceGetHandleByIndex",)),
        (fake.NVML_ERROR_GPU_IS_LOST, ("nvmlDeviceGetPowerUsage",)),  # lost while being read
        (fake.NVML_ERROR_UNKNOWN, ("nvmlDeviceGetMemoryInfo",)),
        (fake.NVML_ERROR_UNKNOWN, ()),
    ],
)
def test_a_lost_gpu_is_reported_and_the_others_still_read(
    install: Install, caplog: pytest.LogCaptureFixture, code: int, fails_on: tuple[str, ...]
) -> None:
    install([Gpu(uuid=UUID_A), Gpu(uuid=UUID_B, fails=code, fails_on=fails_on), _mig_gpu()])
    with caplog.at_level(logging.WARNING, logger="suanli.live.nvml"):
        samples = NvmlProvider().sample()
    assert [s.lost for s in samples] == [False, True, False, False]
    assert samples[1].index == 1 and samples[1].name.endswith("(lost)")
    assert samples[0].memory_total_bytes and samples[2].memory_total_bytes
    assert any("GPU 1" in r.getMessage() for r in caplog.records)


def test_an_unknown_error_on_one_field_is_not_a_lost_gpu(
    install: Install, caplog: pytest.LogCaptureFixture
) -> None:
    install([Gpu(fails=fake.NVML_ERROR_UNKNOWN, fails_on=("nvmlDeviceGetTemperature",))])
    with caplog.at_level(logging.DEBUG, logger="suanli.live.nvml"):
        (sample,) = NvmlProvider().sample()
    assert not sample.lost and sample.temperature_c is None and sample.power_w == 650.0
    # Not supported (the fan) and the failed field are logged at debug level, not swallowed.
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any("nvmlDeviceGetTemperature failed: NVMLError: Unknown Error" in m for m in debug)
    assert any("nvmlDeviceGetFanSpeed failed" in m for m in debug)


# --- memory info v2 / v1 ------------------------------------------------------------------------


def test_memory_info_v2_separates_the_reserved_memory(install: Install) -> None:
    install([Gpu(total=80 * GiB, reserved=GiB // 2, used=2 * GiB)])
    (dev,) = nvml.devices()
    _, mem = nvml.with_memory(dev)
    assert mem is not None and mem.version == 2 and mem.reserved_bytes == GiB // 2
    (sample,) = NvmlProvider().sample()
    assert sample.memory_used_bytes == 2 * GiB  # what processes hold, the reservation apart
    assert sample.memory_total_bytes == 80 * GiB - GiB // 2  # what they can allocate
    assert sample.memory_total_bytes - sample.memory_used_bytes == mem.free_bytes


@pytest.mark.parametrize("old", ["driver", "bindings"])
def test_memory_info_falls_back_to_v1(install: Install, old: str) -> None:
    state = install([Gpu(total=80 * GiB, reserved=GiB // 2, used=2 * GiB)], v2=old != "driver")
    if old == "bindings":  # nvidia-ml-py before 11.510 has no nvmlMemory_v2
        del sys.modules["pynvml"].nvmlMemory_v2
    (dev,) = nvml.devices()
    _, mem = nvml.with_memory(dev)
    assert mem is not None and mem.version == 1 and mem.reserved_bytes is None
    (sample,) = NvmlProvider().sample()
    assert sample.memory_total_bytes == 80 * GiB
    assert sample.memory_used_bytes == 2 * GiB + GiB // 2  # v1 counts the reservation as used
    assert not sample.lost and state.init_calls == 1


# --- UUIDs and CUDA_VISIBLE_DEVICES -------------------------------------------------------------


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, [UUID_A, UUID_B, MIG_1, MIG_2]),
        ("1,0", [UUID_B, UUID_A]),
        ("GPU-bbbb", [UUID_B]),  # a unique prefix
        ("gpu-BBBBBBBB-0000-0000-0000-000000000000, 0", [UUID_B, UUID_A]),
        (MIG_2, [MIG_2]),
        (f"MIG-{UUID_C}/2/0", [MIG_2]),  # the R450 form
        ("2", [MIG_1, MIG_2]),  # a GPU in MIG mode stands for its instances
        ("0,7,1", [UUID_A]),  # CUDA stops at the first entry naming no device
        ("GPU-", []),  # ambiguous prefix
        ("0,0", [UUID_A]),
        ("", []),
        ("-1,0", []),
    ],
)
def test_cuda_visible_devices_maps_to_nvml(
    install: Install, visible: str | None, expected: list[str]
) -> None:
    install([Gpu(uuid=UUID_A), Gpu(uuid=UUID_B), _mig_gpu()])
    assert [d.uuid for d in nvml.cuda_devices(nvml.devices(), visible)] == expected


def test_torch_device_is_found_by_uuid_then_by_position(install: Install) -> None:
    install([Gpu(uuid=UUID_A), Gpu(uuid=UUID_B), _mig_gpu()])
    devs = nvml.devices()
    # torch prints the UUID bare; found whatever the ordering says.
    found = nvml.device_for_cuda(0, "bbbbbbbb-0000-0000-0000-000000000000", "0", devs)
    assert found is not None and found.uuid == UUID_B
    found = nvml.device_for_cuda(0, MIG_2[4:], None, devs)
    assert found is not None and found.uuid == MIG_2 and found.index == 2
    by_position = nvml.device_for_cuda(1, None, "1,0", devs)
    assert by_position is not None and by_position.uuid == UUID_A
    assert nvml.device_for_cuda(5, None, None, devs) is None


def test_bench_health_reads_torch_gpu_through_the_layer(
    install: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    install([Gpu(uuid=UUID_A), _mig_gpu()])
    uuids = {0: MIG_1[4:]}
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        current_device=lambda: 0,
        get_device_properties=lambda i: types.SimpleNamespace(uuid=uuids[int(str(i)[-1])]),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    health = gpu_health("cuda:0")
    # The MIG instance's GPU: its clocks, link and throttle reasons.
    assert health.sm_clock_mhz == 1980 and health.pcie_gen == 5
    assert health.throttle_reasons == ("software power cap",)
    assert health.other_processes == 0
    assert gpu_health("cpu").sm_clock_mhz is None


# --- the same for AMD and nvidia-smi ------------------------------------------------------------


def test_amd_gpus_that_stop_answering_are_reported_lost(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[str | Exception] = [
        json.dumps({"card0": {"Card Series": "AMD Instinct MI300X", "GPU use (%)": "5"}}),
        ToolError("rocm-smi did not answer within 5 s"),
    ]

    def runner(args: list[str]) -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(shutil, "which", lambda name: "/opt/rocm/bin/rocm-smi")
    provider = AmdSmiProvider(runner)
    (first,) = provider.sample()
    assert not first.lost and first.utilization_pct == 5.0
    with caplog.at_level(logging.WARNING, logger="suanli.live.devices"):
        (again,) = provider.sample()
    assert again.lost and again.name == "AMD Instinct MI300X (lost)" and again.vendor == "amd"
    assert any("stopped answering" in r.getMessage() for r in caplog.records)


def test_nvidia_smi_devices_that_stop_answering_are_reported_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = "0, NVIDIA H100 80GB HBM3, 81559, 1024, 0, 35, 70.00, 550.54.15\n"
    answers: list[str | Exception] = [rows, ToolError("nvidia-smi failed")]

    def run_tool(args: list[str]) -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr("suanli.live.smi.run_tool", run_tool)
    provider = NvidiaSmiProvider(tool="/usr/bin/nvidia-smi")
    assert [s.lost for s in provider.sample()] == [False]
    (lost,) = provider.sample()
    assert lost.lost and lost.index == 0 and lost.name == "NVIDIA H100 80GB HBM3 (lost)"
