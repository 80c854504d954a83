"""Read-only state of the device before and during a run: GPU health from NVML, and how
busy the host CPUs are."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict

from suanli.i18n import N_
from suanli.live.bench.profile import Health

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- health (NVML)

#: NVML clock-event reason bits (nvml.h) -> the cause a benchmark grade quotes.
THROTTLE_NAMES = {
    0x2: "application clocks set below max",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power brake",
}


def gpu_health(device: str) -> Health:
    """Read-only NVML queries (throttle reasons, clocks, other processes, PCIe link) for the
    GPU behind ``device``, found through :mod:`suanli.live.nvml` (by the UUID torch reports, else
    by its place in ``CUDA_VISIBLE_DEVICES``); an empty :class:`Health` without CUDA or NVML.

    For a MIG instance the clocks, temperature and link are its GPU's (they are shared) and the
    processes are the instance's own."""
    if not device.startswith("cuda"):
        return Health()
    try:
        import torch
    except ImportError:
        return Health()
    from suanli.live import nvml

    if nvml.library() is None:  # NVML missing or no driver access; shut down once, at exit
        return Health()
    try:
        cuda_index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
        uuid = str(getattr(torch.cuda.get_device_properties(cuda_index), "uuid", "") or "")
    except Exception as exc:  # torch without CUDA, a bad index
        log.debug("no CUDA device %s: %s", device, exc)
        return Health()
    devs = nvml.devices()
    unit = nvml.device_for_cuda(cuda_index, uuid, os.environ.get("CUDA_VISIBLE_DEVICES"), devs)
    if unit is None or unit.reader is None or unit.lost:
        log.debug("no NVML device for %s (torch UUID %r)", device, uuid)
        return Health()
    parent = next((d for d in devs if unit.parent_uuid and d.uuid == unit.parent_uuid), None)
    phys = parent.reader if parent is not None and parent.reader is not None else unit.reader
    sm = getattr(phys.nv, "NVML_CLOCK_SM", 1)
    reasons_mask = phys.get("nvmlDeviceGetCurrentClocksEventReasons")
    if reasons_mask is None:
        reasons_mask = phys.get("nvmlDeviceGetCurrentClocksThrottleReasons")
    reasons = tuple(v for bit, v in THROTTLE_NAMES.items() if reasons_mask and reasons_mask & bit)
    procs = unit.reader.get("nvmlDeviceGetComputeRunningProcesses")
    others = None if procs is None else sum(1 for p in procs if p.pid != os.getpid())
    return Health(
        throttle_reasons=reasons,
        other_processes=others,
        sm_clock_mhz=phys.get("nvmlDeviceGetClockInfo", sm),
        max_sm_clock_mhz=phys.get("nvmlDeviceGetMaxClockInfo", sm),
        temperature_c=phys.get("nvmlDeviceGetTemperature", 0),  # NVML_TEMPERATURE_GPU
        pcie_gen=phys.get("nvmlDeviceGetCurrPcieLinkGeneration"),
        pcie_width=phys.get("nvmlDeviceGetCurrPcieLinkWidth"),
        max_pcie_gen=phys.get("nvmlDeviceGetMaxPcieLinkGeneration"),
        max_pcie_width=phys.get("nvmlDeviceGetMaxPcieLinkWidth"),
    )


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
