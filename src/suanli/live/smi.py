"""The command-line readers: NVIDIA GPUs through ``nvidia-smi`` (and ``/proc/driver/nvidia``) when
the NVML library cannot load, and the runner and base class the other vendors' tools share
(Huawei Ascend's ``npu-smi`` and Hygon's ``hy-smi``: :mod:`suanli.live.ascend_hygon_smi`).

The vendor tools are run without a shell, with a 5 s limit and a cap on the output they may
write (:func:`run_tool`); anything they do not report stays ``None``. AMD's ``amd-smi`` /
``rocm-smi`` go through the same runner (see :class:`suanli.live.devices.AmdSmiProvider`).

Formats:

- ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``: one line per GPU, the fields in
  the order asked, separated by ``", "``; memory in MiB, power in W, temperature in C; a field
  the GPU does not support reads ``[N/A]`` or ``[Not Supported]`` (``nvidia-smi --help-query-gpu``
  and the nvidia-smi(1) manual page).
- The plain ``nvidia-smi`` table's header carries ``CUDA Version: X.Y``, the newest CUDA the
  driver supports (there is no ``--query-gpu`` field for it).
- ``/proc/driver/nvidia/version`` (``NVRM version: ... Kernel Module  550.54.15 ...``) and
  ``/proc/driver/nvidia/gpus/<bus id>/information`` (``Model: NVIDIA GeForce RTX 4090``) exist
  whenever the Linux kernel module is loaded.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from suanli.i18n import N_
from suanli.live.samples import NA, DeviceSample, DriverInfo

log = logging.getLogger(__name__)

#: Seconds a vendor tool may run.
TOOL_TIMEOUT_S = 5.0
#: Bytes of output read from a vendor tool; more is treated as a failure.
TOOL_MAX_BYTES = 2 * 2**20

#: Where the Linux kernel module lists its version and GPUs.
PROC_NVIDIA = "/proc/driver/nvidia"

#: The ``--query-gpu`` fields read, in order.
NVIDIA_SMI_FIELDS = (
    "index",
    "name",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "driver_version",
)
NVIDIA_SMI_QUERY = (
    "--query-gpu=" + ",".join(NVIDIA_SMI_FIELDS),
    "--format=csv,noheader,nounits",
)
#: rocm-smi's query for name, VRAM, utilisation, power and temperature as JSON; Hygon's hy-smi,
#: derived from rocm-smi, takes the same flags.
ROCM_SMI_QUERY = (
    "--showproductname",
    "--showmeminfo",
    "vram",
    "--showuse",
    "--showpower",
    "--showtemp",
    "--json",
)

#: Minimum Linux driver for each CUDA release (CUDA Toolkit release notes, "CUDA Toolkit and
#: Corresponding Driver Versions", GA releases), newest first. Used only when the ``nvidia-smi``
#: header does not say which CUDA version the driver supports.
CUDA_MIN_DRIVER = (
    ("13.0", (580, 65, 6)),
    ("12.9", (575, 51, 3)),
    ("12.8", (570, 26)),
    ("12.6", (560, 28, 3)),
    ("12.5", (555, 42, 2)),
    ("12.4", (550, 54, 14)),
    ("12.3", (545, 23, 6)),
    ("12.2", (535, 54, 3)),
    ("12.1", (530, 30, 2)),
    ("12.0", (525, 60, 13)),
    ("11.8", (520, 61, 5)),
)


class ToolError(RuntimeError):
    """A vendor tool could not be run, failed, ran too long or wrote too much."""


def run_tool(
    args: list[str], *, timeout_s: float = TOOL_TIMEOUT_S, max_bytes: int = TOOL_MAX_BYTES
) -> str:
    """Run ``args`` (no shell) and return what it wrote to stdout, decoded.

    Raises :class:`ToolError` when the program is missing, exits non-zero, runs past
    ``timeout_s`` or writes more than ``max_bytes``.
    """
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            shell=False,
        )
    except OSError as exc:
        raise ToolError(f"{os.path.basename(args[0])}: {exc.strerror or exc}") from exc
    timed_out = threading.Event()

    def _kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout_s, _kill)
    timer.start()
    data = b""
    try:
        assert proc.stdout is not None
        data = proc.stdout.read(max_bytes + 1)
    finally:
        timer.cancel()
        if len(data) > max_bytes:
            proc.kill()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out.set()
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    name = os.path.basename(args[0])
    if timed_out.is_set():
        raise ToolError(
            N_("{tool} did not answer within {seconds:g} s").format(tool=name, seconds=timeout_s)
        )
    if len(data) > max_bytes:
        raise ToolError(
            N_("{tool} wrote more than {limit} bytes").format(tool=name, limit=max_bytes)
        )
    if proc.returncode != 0:
        first = data.decode(errors="replace").strip().splitlines()[:1]
        raise ToolError(
            N_("{tool} exited with status {status}: {output}").format(
                tool=name, status=proc.returncode, output=first[0]
            )
            if first
            else N_("{tool} exited with status {status}").format(tool=name, status=proc.returncode)
        )
    return data.decode(errors="replace")


def _value(text: str) -> str | None:
    """A CSV cell, or ``None`` for ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``..."""
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NOT SUPPORTED"):
        return NA
    return text


def _float(text: str) -> float | None:
    value = _value(text)
    if value is None:
        return NA
    try:
        return float(value.split()[0])
    except ValueError:
        return NA


def parse_nvidia_smi_csv(text: str) -> tuple[list[DeviceSample], str | None]:
    """The GPUs and the driver version from ``nvidia-smi --query-gpu=<NVIDIA_SMI_FIELDS>
    --format=csv,noheader,nounits``; lines that are not GPU rows are skipped."""
    samples: list[DeviceSample] = []
    driver: str | None = NA
    n = len(NVIDIA_SMI_FIELDS)
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < n or not cells[0].isdigit():
            continue
        # A name with a comma in it: everything between the index and the last six fields.
        index = int(cells[0])
        name = ", ".join(cells[1 : len(cells) - (n - 2)])
        total, used, util, temp, power, drv = cells[len(cells) - (n - 2) :]
        total_mib, used_mib = _float(total), _float(used)
        lost = "lost" in line.lower()
        samples.append(
            DeviceSample(
                index=index,
                name=_value(name) or ("unknown (lost)" if lost else "NVIDIA GPU"),
                vendor="nvidia",
                memory_total_bytes=int(total_mib * 2**20) if total_mib is not None else NA,
                memory_used_bytes=int(used_mib * 2**20) if used_mib is not None else NA,
                utilization_pct=_float(util),
                temperature_c=_float(temp),
                power_w=_float(power),
                lost=lost,
            )
        )
        driver = driver or _value(drv)
    return samples, driver


_CUDA_RE = re.compile(r"CUDA Version:\s*(\d+\.\d+)")


def parse_cuda_version(text: str) -> str | None:
    """``12.4`` from the plain ``nvidia-smi`` header (``... CUDA Version: 12.4 |``)."""
    match = _CUDA_RE.search(text)
    return match.group(1) if match else NA


def cuda_for_driver(driver_version: str | None) -> str | None:
    """The newest CUDA release a Linux driver of this version supports (``CUDA_MIN_DRIVER``)."""
    if not driver_version:
        return NA
    try:
        have = tuple(int(p) for p in driver_version.strip().split("."))
    except ValueError:
        return NA
    for cuda, minimum in CUDA_MIN_DRIVER:
        if have >= minimum:
            return cuda
    return NA


def lost_sample(sample: DeviceSample) -> DeviceSample:
    """A device seen before that stopped answering, flagged lost (as the NVML provider does)."""
    name = sample.name if sample.name.endswith("(lost)") else f"{sample.name} (lost)"
    return DeviceSample(sample.index, name, sample.vendor, uuid=sample.uuid, lost=True)


class SmiTableProvider:
    """A vendor tool asked once at ``available()``; that reading is used by the first
    ``sample()``. Subclasses set ``name``/``tool`` and implement ``_parse``."""

    name = ""
    tool = ""
    vendor_label = ""

    def __init__(self, tool: str | None = None) -> None:
        self._tool = tool or shutil.which(self.tool)
        self._error: str | None = (
            None if self._tool else N_("{tool} not found on PATH").format(tool=self.tool)
        )
        self._seen: bool | None = None
        self._pending: list[DeviceSample] = []
        self._last: list[DeviceSample] = []
        self._count = 0
        self._driver_version: str | None = NA

    def _parse(self, tool: str) -> tuple[list[DeviceSample], str | None]:
        raise NotImplementedError

    def _read(self) -> list[DeviceSample]:
        if not self._tool:
            return []
        try:
            samples, driver = self._parse(self._tool)
        except ToolError as exc:
            self._error = str(exc)
            if not self._last:
                log.debug("%s failed: %s", self.tool, exc)
                return []
            # As with NVML: devices that stop answering are lost, not silently gone.
            log.warning("%s stopped answering (%s); its devices are reported lost", self.tool, exc)
            return [lost_sample(s) for s in self._last]
        self._last = samples
        self._driver_version = driver or self._driver_version
        self._count = len(samples)
        if not samples:
            self._error = N_("{tool} listed no {device}").format(
                tool=self.tool, device=self.vendor_label
            )
        return samples

    def available(self) -> bool:
        """Whether the tool runs and lists at least one device (asked once)."""
        if self._seen is None:
            self._pending = self._read()
            self._seen = bool(self._pending)
        return self._seen

    def driver(self) -> DriverInfo:
        """The driver version the tool reports and the device count."""
        if not self.available():
            return DriverInfo(self.name, error=self._error)
        return DriverInfo(self.name, driver_version=self._driver_version, device_count=self._count)

    def sample(self) -> list[DeviceSample]:
        """One reading of every device (the reading taken by ``available()`` is used once)."""
        if self._pending:
            pending, self._pending = self._pending, []
            return pending
        return self._read()


class NvidiaSmiProvider(SmiTableProvider):
    """NVIDIA GPUs through the ``nvidia-smi`` command, for when the NVML library cannot load.

    Reads name, memory, utilisation, temperature and power; the other fields stay ``None``.
    """

    name = "nvidia-smi"
    tool = "nvidia-smi"
    vendor_label = "GPU"

    def _parse(self, tool: str) -> tuple[list[DeviceSample], str | None]:
        return parse_nvidia_smi_csv(run_tool([tool, *NVIDIA_SMI_QUERY]))

    def driver(self) -> DriverInfo:
        """The driver version (from the query) and the CUDA version (from the table header)."""
        if not self.available():
            return DriverInfo(self.name, error=self._error)
        cuda: str | None = NA
        try:
            cuda = parse_cuda_version(run_tool([str(self._tool)]))
        except ToolError as exc:
            log.debug("nvidia-smi header not read: %s", exc)
        return DriverInfo(
            self.name,
            driver_version=self._driver_version,
            cuda_driver_version=cuda or cuda_for_driver(self._driver_version),
            device_count=self._count,
        )


class ProcNvidiaProvider:
    """NVIDIA GPUs named by the Linux kernel module (``/proc/driver/nvidia``): proof that a GPU
    and a driver are there when neither NVML nor ``nvidia-smi`` can be used. Names only."""

    name = "proc-nvidia"

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self._root = Path(root if root is not None else PROC_NVIDIA)

    def available(self) -> bool:
        """Whether the kernel module lists a GPU."""
        return bool(self.sample())

    def driver(self) -> DriverInfo:
        """The kernel module's version; the CUDA version it supports, from the release table."""
        version: str | None = NA
        try:
            text = (self._root / "version").read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
        if match:
            version = match.group(1)
        count = len(self.sample())
        return DriverInfo(
            self.name,
            driver_version=version,
            cuda_driver_version=cuda_for_driver(version),
            device_count=count,
            error=None if count else N_("{root} lists no GPU").format(root=self._root),
        )

    def sample(self) -> list[DeviceSample]:
        """One sample per GPU directory, with the model name when the module gives it."""
        try:
            dirs = sorted(p for p in (self._root / "gpus").iterdir() if p.is_dir())
        except OSError:
            return []
        out = []
        for i, gpu_dir in enumerate(dirs):
            name = "NVIDIA GPU"
            try:
                info = (gpu_dir / "information").read_text(encoding="utf-8", errors="replace")
            except OSError:
                info = ""
            for line in info.splitlines():
                if line.lower().startswith("model:"):
                    name = line.split(":", 1)[1].strip() or name
                    break
            out.append(DeviceSample(index=i, name=name, vendor="nvidia"))
        return out
