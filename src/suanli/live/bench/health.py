"""Read-only state of the device before and during a run: GPU health from NVML, and how
busy the host CPUs are."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict
from typing import Any

from suanli.i18n import N_
from suanli.live.bench.profile import Health

# --------------------------------------------------------------------------- health (NVML)


def gpu_health(device: str) -> Health:
    """Read-only NVML queries (throttle reasons, clocks, other processes, PCIe link) for the
    GPU behind ``device``; an empty :class:`Health` without CUDA or nvidia-ml-py."""
    if not device.startswith("cuda"):
        return Health()
    try:
        import pynvml  # type: ignore[import-untyped]
        import torch
    except ImportError:
        return Health()
    try:
        pynvml.nvmlInit()
    except Exception:  # NVML missing or no driver access
        return Health()
    try:
        # The same GPU as torch's: by UUID (CUDA_VISIBLE_DEVICES may renumber), else by index.
        handle = None
        uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "")
        if uuid:
            with contextlib.suppress(Exception):
                handle = pynvml.nvmlDeviceGetHandleByUUID(
                    uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
                )
        if handle is None:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(device.split(":")[1]))

        def query(fn: str, *args: Any) -> Any:
            try:
                return getattr(pynvml, fn)(handle, *args)
            except Exception:
                return None

        reasons_mask = query("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons_mask is None:
            reasons_mask = query("nvmlDeviceGetCurrentClocksThrottleReasons")
        names = {
            0x2: "application clocks set below max",
            0x4: "software power cap",
            0x8: "hardware slowdown",
            0x20: "software thermal slowdown",
            0x40: "hardware thermal slowdown",
            0x80: "power brake",
        }
        reasons = tuple(v for bit, v in names.items() if reasons_mask and reasons_mask & bit)
        procs = query("nvmlDeviceGetComputeRunningProcesses")
        others = None if procs is None else sum(1 for p in procs if p.pid != os.getpid())
        return Health(
            throttle_reasons=reasons,
            other_processes=others,
            sm_clock_mhz=query("nvmlDeviceGetClockInfo", pynvml.NVML_CLOCK_SM),
            max_sm_clock_mhz=query("nvmlDeviceGetMaxClockInfo", pynvml.NVML_CLOCK_SM),
            temperature_c=query("nvmlDeviceGetTemperature", pynvml.NVML_TEMPERATURE_GPU),
            pcie_gen=query("nvmlDeviceGetCurrPcieLinkGeneration"),
            pcie_width=query("nvmlDeviceGetCurrPcieLinkWidth"),
            max_pcie_gen=query("nvmlDeviceGetMaxPcieLinkGeneration"),
            max_pcie_width=query("nvmlDeviceGetMaxPcieLinkWidth"),
        )
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _proc_stat() -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs from /proc/stat, None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_health(window_s: float = 0.25) -> Health:
    """How busy the host's CPUs are (sampled over ``window_s`` while this process sleeps)."""
    before = _proc_stat()
    busy = None
    if before is not None:
        time.sleep(window_s)
        after = _proc_stat()
        if after is not None and after[1] > before[1]:
            busy = 100.0 * (after[0] - before[0]) / (after[1] - before[1])
    return Health(cpu_busy_percent=busy, cpu_count=os.cpu_count())


def busy_cpu_note(health: Health) -> str:
    """A note when other work keeps the CPUs busy (>= 25% of them), else ''."""
    if health.cpu_busy_percent is None or health.cpu_busy_percent < 25:
        return ""
    return N_(
        "busy CPU: other processes used {busy:.0f}% of {cores} cores just before the run; "
        "figures may be low"
    ).format(busy=health.cpu_busy_percent, cores=health.cpu_count)


def merge_health(a: Health, b: Health) -> Health:
    """``b`` where it has a value, else ``a``; throttle reasons united."""
    merged = {k: (v if v is not None else getattr(a, k)) for k, v in asdict(b).items()}
    merged["throttle_reasons"] = tuple(dict.fromkeys(a.throttle_reasons + b.throttle_reasons))
    return Health(**merged)
