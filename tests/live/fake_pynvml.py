"""A fake ``pynvml`` (nvidia-ml-py) for tests: GPUs described as data, NVML's error codes and
signatures as nvidia-ml-py 12/13 has them (``nvmlDeviceGetMemoryInfo(handle, version=None)``,
``nvmlDeviceGetMigMode`` -> ``[current, pending]``, ``NVMLError.value``).

Used in-process (``load()`` gives a fresh module to put in ``sys.modules``) and copied into a
child process's path as ``pynvml.py``, where ``FAKE_NVML_LOG`` names a file each init and
shutdown is written to.
"""

from __future__ import annotations

import os
import time
import types
from dataclasses import dataclass, field
from typing import Any

NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_UNKNOWN = 999
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_DEVICE_MIG_ENABLE = 1
nvmlEventTypeXidCriticalError = 0x8
nvmlMemory_v2 = 0x02000028

GiB = 2**30


class NVMLError(Exception):
    """NVML's error: ``value`` is the return code."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {15: "GPU is lost", 999: "Unknown Error", 3: "Not Supported"}.get(
            self.value, f"NVML Error with code {self.value}"
        )


@dataclass
class Memory:
    total: int
    used: int
    free: int
    reserved: int = 0
    version: int = 0


@dataclass
class Gpu:
    """One fake GPU (or MIG instance)."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    total: int = 80 * GiB
    reserved: int = GiB // 2
    used: int = 2 * GiB
    fails: int | None = None
    """Every call on the device raises this NVML code (15: lost, 999: unknown)."""
    fails_on: tuple[str, ...] = ()
    """Only these functions fail with ``fails`` (the others answer)."""
    mig: list[Gpu | None] | None = None
    """MIG mode on: the instances by slot (``None``: an empty slot)."""
    gi: int = 0
    ci: int = 0
    ecc: tuple[int, int, int, int] | None = (3, 0, 41, 1)
    """Corrected and uncorrected volatile, corrected and uncorrected aggregate ECC errors
    (None: no ECC, NOT_SUPPORTED as on GeForce boards)."""
    events: bool = True
    """The GPU accepts Xid event registration."""
    nvlinks: tuple[bool, ...] = (True,) * 18
    """Each NVLink's state (up or down); empty for a GPU without NVLink."""
    pcie: tuple[int, int] = (5, 16)
    """Current PCIe generation and width."""


@dataclass
class State:
    gpus: list[Gpu] = field(default_factory=list)
    v2: bool = True
    """The driver has nvmlDeviceGetMemoryInfo_v2."""
    init_fails: bool = False
    init_calls: int = 0
    shutdown_calls: int = 0
    xid_events: list[tuple[int, int]] = field(default_factory=list)
    """(GPU index, Xid) events the next waits deliver, in order."""
    event_sets_freed: int = 0


def _log(event: str) -> None:
    path = os.environ.get("FAKE_NVML_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(event + "\n")


def load(state: State) -> types.ModuleType:
    """A module object that behaves like ``pynvml`` over ``state``."""
    mod = types.ModuleType("pynvml")
    for name, value in globals().items():
        if name.startswith(("NVML_", "nvmlMemory", "nvmlEventType")) or name == "NVMLError":
            setattr(mod, name, value)
    mod.state = state  # type: ignore[attr-defined]

    def dev(handle: Gpu, fn: str) -> Gpu:
        if handle.fails is not None and (not handle.fails_on or fn in handle.fails_on):
            raise NVMLError(handle.fails)
        return handle

    def nvmlInit() -> None:
        state.init_calls += 1
        _log("init")
        if state.init_fails:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def nvmlShutdown() -> None:
        state.shutdown_calls += 1
        _log("shutdown")

    def nvmlDeviceGetHandleByIndex(i: int) -> Gpu:
        if not 0 <= i < len(state.gpus):
            raise NVMLError(2)
        gpu = state.gpus[i]
        return dev(gpu, "nvmlDeviceGetHandleByIndex")

    def nvmlDeviceGetMemoryInfo(handle: Gpu, version: int | None = None) -> Any:
        gpu = dev(handle, "nvmlDeviceGetMemoryInfo")
        if version:
            if not state.v2:
                raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
            free = gpu.total - gpu.reserved - gpu.used
            return Memory(gpu.total, gpu.used, free, gpu.reserved, version)
        # v1: the reservation is counted as used.
        used = gpu.used + gpu.reserved
        return types.SimpleNamespace(total=gpu.total, used=used, free=gpu.total - used)

    def nvmlDeviceGetMigMode(handle: Gpu) -> list[int]:
        gpu = dev(handle, "nvmlDeviceGetMigMode")
        if gpu.mig is None:
            return [0, 0]
        return [NVML_DEVICE_MIG_ENABLE, NVML_DEVICE_MIG_ENABLE]

    def nvmlDeviceGetMaxMigDeviceCount(handle: Gpu) -> int:
        return len(dev(handle, "nvmlDeviceGetMaxMigDeviceCount").mig or [])

    def nvmlDeviceGetMigDeviceHandleByIndex(handle: Gpu, j: int) -> Gpu:
        gpu = dev(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        slot = (gpu.mig or [])[j]
        if slot is None:
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return slot

    def nvmlDeviceGetTotalEccErrors(handle: Gpu, error_type: int, counter_type: int) -> int:
        gpu = dev(handle, "nvmlDeviceGetTotalEccErrors")
        if gpu.ecc is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu.ecc[error_type + 2 * counter_type]

    def nvmlDeviceGetNvLinkState(handle: Gpu, link: int) -> int:
        gpu = dev(handle, "nvmlDeviceGetNvLinkState")
        if link >= len(gpu.nvlinks):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED if not gpu.nvlinks else 2)
        return 1 if gpu.nvlinks[link] else 0

    def nvmlDeviceRegisterEvents(handle: Gpu, kinds: int, event_set: Any) -> None:
        gpu = dev(handle, "nvmlDeviceRegisterEvents")
        if not gpu.events or kinds != nvmlEventTypeXidCriticalError:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)

    def nvmlEventSetWait_v2(event_set: Any, timeout_ms: int) -> Any:
        if state.xid_events:
            index, xid = state.xid_events.pop(0)
            return types.SimpleNamespace(
                device=state.gpus[index], eventType=nvmlEventTypeXidCriticalError, eventData=xid
            )
        time.sleep(min(timeout_ms, 20) / 1000)
        raise NVMLError(NVML_ERROR_TIMEOUT)

    def nvmlEventSetFree(event_set: Any) -> None:
        state.event_sets_freed += 1

    def simple(attr: str | None, value: Any = None) -> Any:
        def fn(handle: Gpu, *args: Any) -> Any:
            gpu = dev(handle, fn.__name__)
            if attr is None:
                if value is None:
                    raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
                return value
            return getattr(gpu, attr)

        return fn

    functions: dict[str, Any] = {
        "nvmlInit": nvmlInit,
        "nvmlShutdown": nvmlShutdown,
        "nvmlDeviceGetCount": lambda: len(state.gpus),
        "nvmlSystemGetDriverVersion": lambda: b"550.54.15",
        "nvmlSystemGetCudaDriverVersion": lambda: 12040,
        "nvmlSystemGetNVMLVersion": lambda: "12.550.54.15",
        "nvmlDeviceGetHandleByIndex": nvmlDeviceGetHandleByIndex,
        "nvmlDeviceGetMemoryInfo": nvmlDeviceGetMemoryInfo,
        "nvmlDeviceGetMigMode": nvmlDeviceGetMigMode,
        "nvmlDeviceGetMaxMigDeviceCount": nvmlDeviceGetMaxMigDeviceCount,
        "nvmlDeviceGetMigDeviceHandleByIndex": nvmlDeviceGetMigDeviceHandleByIndex,
        "nvmlDeviceGetName": simple("name"),
        "nvmlDeviceGetUUID": simple("uuid"),
        "nvmlDeviceGetGpuInstanceId": simple("gi"),
        "nvmlDeviceGetComputeInstanceId": simple("ci"),
        "nvmlDeviceGetUtilizationRates": simple(None, types.SimpleNamespace(gpu=97, memory=40)),
        "nvmlDeviceGetPowerUsage": simple(None, 650_000),
        "nvmlDeviceGetEnforcedPowerLimit": simple(None, 700_000),
        "nvmlDeviceGetTemperature": simple(None, 61),
        "nvmlDeviceGetClockInfo": simple(None, 1980),
        "nvmlDeviceGetMaxClockInfo": simple(None, 1980),
        "nvmlDeviceGetCurrentClocksEventReasons": simple(None, 0x4),
        "nvmlDeviceGetCurrPcieLinkGeneration": lambda h: dev(h, "pcie").pcie[0],
        "nvmlDeviceGetMaxPcieLinkGeneration": simple(None, 5),
        "nvmlDeviceGetCurrPcieLinkWidth": lambda h: dev(h, "pcie").pcie[1],
        "nvmlDeviceGetMaxPcieLinkWidth": simple(None, 16),
        "nvmlDeviceGetFanSpeed": simple(None),  # not supported (a passively cooled card)
        "nvmlDeviceGetComputeRunningProcesses": simple(None, []),
        "nvmlDeviceGetTotalEccErrors": nvmlDeviceGetTotalEccErrors,
        "nvmlDeviceGetNvLinkState": nvmlDeviceGetNvLinkState,
        "nvmlEventSetCreate": lambda: object(),
        "nvmlDeviceRegisterEvents": nvmlDeviceRegisterEvents,
        "nvmlEventSetWait_v2": nvmlEventSetWait_v2,
        "nvmlEventSetFree": nvmlEventSetFree,
        "nvmlDeviceGetIndex": lambda handle: state.gpus.index(handle),
    }
    for name, fn in functions.items():
        fn.__name__ = name
        setattr(mod, name, fn)
    return mod


# As a plain ``pynvml.py`` in a child process: one healthy GPU.
if __name__ == "pynvml":
    _module = load(State([Gpu()]))
    globals().update({k: getattr(_module, k) for k in dir(_module) if k.startswith("nvml")})
