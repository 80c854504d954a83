"""What the environment doctor looks at (:class:`Environment`) and what it says (:class:`Verdict`):
plain data, filled by :func:`suanli.live.env.probe` or by a test, read by the rules."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

from suanli.live.devices import DriverInfo


@dataclass(frozen=True)
class Environment:
    """Everything the doctor looks at."""

    python: str = platform.python_version()
    driver: DriverInfo = field(default_factory=lambda: DriverInfo("none"))
    gpu_names: tuple[str, ...] = ()
    """GPUs the driver reports."""
    gpu_capabilities: tuple[str, ...] = ()
    """``sm_90`` style, per driver GPU, when known."""
    torch_version: str | None = None
    torch_build_tag: str | None = None
    """The local part of ``torch.__version__`` (``cpu``, ``cu124``, ``rocm6.2``), if any."""
    torch_cuda: str | None = None
    """``torch.version.cuda`` (None on CPU-only and ROCm builds)."""
    torch_hip: str | None = None
    torch_cuda_available: bool = False
    torch_device_count: int = 0
    torch_arch_list: tuple[str, ...] = ()
    torch_error: str | None = None
    """Why ``torch.cuda`` failed to initialise, if it did."""
    nccl_version: str | None = None
    mps_available: bool = False
    xpu_available: bool = False
    directml_available: bool = False
    gpu_vendors: tuple[str, ...] = ()
    """``nvidia``/``amd`` per driver GPU, when known."""
    nvml_error: str | None = None
    """Why the NVML library did not load, when the GPUs were read another way."""
    cann_version: str | None = None
    """The CANN toolkit release (``8.0.RC3``), read from its install directory (Ascend only)."""
    torch_npu_version: str | None = None
    """The installed ``torch_npu`` distribution's version (Ascend only)."""


@dataclass(frozen=True)
class Verdict:
    """One check: ``ok``, ``warn``, ``fail`` or ``info``, what was seen, and the fix."""

    check: str
    status: str
    detail: str
    fix: str = ""
