"""The readings every device provider returns (:mod:`suanli.live.devices`, the command-line
fallbacks in :mod:`suanli.live.smi`): plain data, no vendor library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NA = None
"""What a field holds when the device or driver does not report it."""


@dataclass(frozen=True)
class ProcessInfo:
    """A process using a device."""

    pid: int
    name: str = ""
    user: str = ""
    path: str = ""
    memory_bytes: int | None = NA


@dataclass(frozen=True)
class DeviceSample:
    """One reading of one device. ``None`` means not available."""

    index: int
    name: str
    vendor: str
    """``nvidia``, ``amd``, ``cpu``, ``fake`` ..."""
    uuid: str | None = NA
    memory_total_bytes: int | None = NA
    memory_used_bytes: int | None = NA
    utilization_pct: float | None = NA
    memory_utilization_pct: float | None = NA
    power_w: float | None = NA
    power_limit_w: float | None = NA
    temperature_c: float | None = NA
    sm_clock_mhz: float | None = NA
    sm_clock_max_mhz: float | None = NA
    memory_clock_mhz: float | None = NA
    memory_clock_max_mhz: float | None = NA
    throttle_reasons: tuple[str, ...] = ()
    pcie_gen: int | None = NA
    pcie_gen_max: int | None = NA
    pcie_width: int | None = NA
    pcie_width_max: int | None = NA
    encoder_pct: float | None = NA
    decoder_pct: float | None = NA
    fan_pct: float | None = NA
    ecc_corrected_volatile: int | None = NA
    """Corrected (single-bit) memory errors since the driver loaded (NVML's volatile count)."""
    ecc_uncorrected_volatile: int | None = NA
    """Uncorrected (double-bit) memory errors since the driver loaded."""
    ecc_corrected_aggregate: int | None = NA
    """Corrected memory errors over the board's life (NVML's aggregate count)."""
    ecc_uncorrected_aggregate: int | None = NA
    xid_last: int | None = NA
    """The last Xid error the driver reported since the exporter started watching (0: none;
    None: not watched)."""
    processes: tuple[ProcessInfo, ...] = ()
    lost: bool = False
    """The device stopped answering (NVML's GPU_IS_LOST)."""

    def field(self, name: str) -> Any:
        """A field by its attribute name (``None`` when not available)."""
        return getattr(self, name, NA)


@dataclass(frozen=True)
class DriverInfo:
    """What the driver layer reports."""

    provider: str
    driver_version: str | None = NA
    cuda_driver_version: str | None = NA
    """The highest CUDA runtime the driver supports (NVML), e.g. ``12.4``."""
    nvml_version: str | None = NA
    device_count: int = 0
    error: str | None = NA
    """Why the provider could not read the devices, when it could not."""
