"""Device providers: one interface over NVML, AMD SMI, the CPU, and table-driven fakes.

A field a device does not support comes back as ``None`` ("not available"), never as an
exception: every NVML read goes through one layer (:mod:`suanli.live.nvml`, init once, MIG,
lost GPUs, memory info v2, UUIDs), the other reads through ``_query``, the way nvitop's
``nvmlQuery`` does; each failure is logged at debug level (``--debug`` shows it). A GPU that
stops answering is reported as ``lost`` rather than raising. Every import of a vendor library
happens inside the provider that needs it.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from suanli.i18n import N_
from suanli.live import nvml

# The reading types live in samples.py (shared with the smi fallbacks); re-exported here.
from suanli.live.samples import NA as NA
from suanli.live.samples import DeviceSample as DeviceSample
from suanli.live.samples import DriverInfo as DriverInfo
from suanli.live.samples import ProcessInfo as ProcessInfo

log = logging.getLogger(__name__)


class Provider(Protocol):
    """What every device provider offers."""

    name: str

    def available(self) -> bool:
        """Whether this provider can see devices on this machine."""

    def driver(self) -> DriverInfo:
        """Driver facts (versions, device count)."""

    def sample(self) -> list[DeviceSample]:
        """One reading of every device."""


def _query(fn: Callable[..., Any], *args: Any, default: Any = NA) -> Any:
    """Call a vendor function; any failure ("not supported", "unknown") yields ``default``,
    logged at debug level."""
    try:
        value = fn(*args)
    except Exception as exc:  # vendor libraries raise many types for "not supported"
        log.debug("%s failed: %s: %s", getattr(fn, "__name__", fn), type(exc).__name__, exc)
        return default
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


# --- NVIDIA (NVML) ---------------------------------------------------------------------------

#: NVML clock-event (throttle) reason bits -> names (nvml.h, nvmlClocksEventReasons).
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def decode_throttle(mask: int | None) -> tuple[str, ...]:
    """Names of the set clock-event reason bits (idle alone is not a throttle)."""
    if not mask:
        return ()
    return tuple(name for bit, name in THROTTLE_REASONS.items() if mask & bit)


class NvmlProvider:
    """NVIDIA GPUs through nvidia-ml-py (``pynvml``), read through :mod:`suanli.live.nvml`.

    A GPU in MIG mode gives one sample per MIG instance (its name, ``MIG-`` UUID, memory and
    processes; the GPU's temperature, clocks and link, which the instances share; no power, which
    would be counted once per instance). Memory: with memory info v2 the total is what processes
    can allocate (the driver's reservation taken out, as CUDA's ``total_memory``) and used is
    what they hold, so total - used is NVML's free; with v1 the total is the whole memory.
    """

    name = "nvml"

    def __init__(self) -> None:
        self._nvml: Any = nvml.library()  # once per process; shut down at exit
        self._error: str | None = None if self._nvml is not None else nvml.init_error()

    def available(self) -> bool:
        """Whether NVML initialised."""
        return self._nvml is not None

    def driver(self) -> DriverInfo:
        """Driver and NVML versions, and the CUDA version the driver supports."""
        nv = self._nvml
        if nv is None:
            return DriverInfo(self.name, error=self._error)
        call = nvml.call
        cuda = call(nv.nvmlSystemGetCudaDriverVersion)
        cuda_str = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else NA
        return DriverInfo(
            self.name,
            driver_version=call(nv.nvmlSystemGetDriverVersion),
            cuda_driver_version=cuda_str,
            nvml_version=call(nv.nvmlSystemGetNVMLVersion),
            device_count=call(nv.nvmlDeviceGetCount, default=0),
        )

    def sample(self) -> list[DeviceSample]:
        """Read every GPU (or its MIG instances); a GPU that cannot be read is reported lost."""
        if self._nvml is None:
            return []
        out: list[DeviceSample] = []
        for dev in nvml.devices():
            if dev.mig_enabled and dev.instances:
                out.extend(_nvml_sample(inst, gpu=dev) for inst in dev.instances)
            else:
                out.append(_nvml_sample(dev))
        return out


def _nvml_sample(dev: Any, gpu: Any = None) -> DeviceSample:
    """One :class:`~suanli.live.nvml.NvmlDevice` as a sample; ``gpu`` is a MIG instance's parent,
    whose temperature, clocks and link the instance shares."""
    dev, mem = nvml.with_memory(dev)
    r = dev.reader
    if dev.lost or r is None:
        return _lost_sample(dev)
    phys = gpu.reader if gpu is not None and gpu.reader is not None else r
    nv = r.nv
    clk = getattr(nv, "NVML_CLOCK_SM", 1)
    mclk = getattr(nv, "NVML_CLOCK_MEM", 2)
    reasons = phys.get("nvmlDeviceGetCurrentClocksEventReasons")
    if reasons is None:
        reasons = phys.get("nvmlDeviceGetCurrentClocksThrottleReasons")
    util = r.get("nvmlDeviceGetUtilizationRates")
    ecc = nvml.ecc_counts(phys)
    # Power is the whole GPU's: given once, on the GPU, never on each of its instances.
    power = r.get("nvmlDeviceGetPowerUsage") if gpu is None else NA
    limit = r.get("nvmlDeviceGetEnforcedPowerLimit") if gpu is None else NA
    enc = r.get("nvmlDeviceGetEncoderUtilization")
    dec = r.get("nvmlDeviceGetDecoderUtilization")
    sample = DeviceSample(
        index=dev.index,
        name=str(dev.name),
        vendor="nvidia",
        uuid=dev.uuid,
        memory_total_bytes=mem.usable_bytes if mem else NA,
        memory_used_bytes=mem.used_bytes if mem else NA,
        utilization_pct=getattr(util, "gpu", NA),
        memory_utilization_pct=getattr(util, "memory", NA),
        power_w=power / 1000 if isinstance(power, (int, float)) else NA,
        power_limit_w=limit / 1000 if isinstance(limit, (int, float)) else NA,
        temperature_c=phys.get("nvmlDeviceGetTemperature", 0),
        sm_clock_mhz=phys.get("nvmlDeviceGetClockInfo", clk),
        sm_clock_max_mhz=phys.get("nvmlDeviceGetMaxClockInfo", clk),
        memory_clock_mhz=phys.get("nvmlDeviceGetClockInfo", mclk),
        memory_clock_max_mhz=phys.get("nvmlDeviceGetMaxClockInfo", mclk),
        throttle_reasons=decode_throttle(reasons),
        pcie_gen=phys.get("nvmlDeviceGetCurrPcieLinkGeneration"),
        pcie_gen_max=phys.get("nvmlDeviceGetMaxPcieLinkGeneration"),
        pcie_width=phys.get("nvmlDeviceGetCurrPcieLinkWidth"),
        pcie_width_max=phys.get("nvmlDeviceGetMaxPcieLinkWidth"),
        encoder_pct=enc[0] if isinstance(enc, (list, tuple)) else NA,
        decoder_pct=dec[0] if isinstance(dec, (list, tuple)) else NA,
        fan_pct=phys.get("nvmlDeviceGetFanSpeed"),
        ecc_corrected_volatile=ecc["ecc_corrected_volatile"],
        ecc_uncorrected_volatile=ecc["ecc_uncorrected_volatile"],
        ecc_corrected_aggregate=ecc["ecc_corrected_aggregate"],
        ecc_uncorrected_aggregate=ecc["ecc_uncorrected_aggregate"],
        processes=_nvml_processes(r),
    )
    if r.lost or phys.lost:  # it went away while being read
        return _lost_sample(dev)
    return sample


def _lost_sample(dev: Any) -> DeviceSample:
    from suanli.live.smi import lost_sample

    return lost_sample(DeviceSample(dev.index, dev.name or "unknown", "nvidia", uuid=dev.uuid))


def _nvml_processes(reader: Any) -> tuple[ProcessInfo, ...]:
    procs = []
    for getter in (
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses",
    ):
        for p in reader.get(getter, default=[]) or []:
            procs.append(_describe_process(int(p.pid), getattr(p, "usedGpuMemory", NA)))
    return tuple(procs)


def _describe_process(pid: int, memory: int | None) -> ProcessInfo:
    """Name, user and executable path of a process, when the OS lets us read them."""
    try:
        import psutil

        proc = psutil.Process(pid)
        return ProcessInfo(
            pid,
            _query(proc.name, default=""),
            _query(proc.username, default=""),
            _query(proc.exe, default=""),
            memory,
        )
    except Exception:
        return ProcessInfo(pid, memory_bytes=memory)


# --- AMD (amd-smi / rocm-smi JSON) -------------------------------------------------------------


class AmdSmiProvider:
    """AMD GPUs through ``amd-smi`` (``metric --json``, names from ``static --asic --vram
    --json``) or ``rocm-smi --showproductname --showmeminfo vram ... --json`` when installed.

    The tools run without a shell, for at most 5 s, their output capped
    (:func:`suanli.live.smi.run_tool`). Errors are handled as NVML's are: each is logged, none
    is raised, and when the tool stops answering the GPUs it listed before are reported lost
    (a hung GPU hangs the tool) rather than silently gone.
    """

    name = "amd-smi"

    def __init__(self, runner: Callable[[list[str]], str] | None = None) -> None:
        self._run = runner or _run_json_tool
        self._tool = shutil.which("amd-smi") or shutil.which("rocm-smi")
        self._static: Any = None
        self._seen: list[DeviceSample] = []

    def available(self) -> bool:
        """Whether an AMD SMI tool is on the PATH."""
        return self._tool is not None

    def driver(self) -> DriverInfo:
        """The device count (driver versions are not parsed yet)."""
        return DriverInfo(
            self.name,
            device_count=len(self.sample()),
            error=None if self._tool else N_("amd-smi/rocm-smi not found"),
        )

    def sample(self) -> list[DeviceSample]:
        """Parse the tool's JSON; anything missing stays not available."""
        if not self._tool:
            return []
        if os.path.basename(self._tool).split(".")[0] == "amd-smi":
            if self._static is None:  # names and VRAM size do not change: asked once
                try:
                    self._static = json.loads(
                        self._run([self._tool, "static", "--asic", "--vram", "--json"])
                    )
                except (ValueError, OSError, RuntimeError) as exc:
                    log.debug("amd-smi static failed: %s: %s", type(exc).__name__, exc)
                    self._static = []
            args = [self._tool, "metric", "--json"]
        else:
            from suanli.live.smi import ROCM_SMI_QUERY

            args = [self._tool, *ROCM_SMI_QUERY]
        try:
            data = json.loads(self._run(args))
        except (ValueError, OSError, RuntimeError) as exc:
            if not self._seen:
                log.debug("%s failed: %s: %s", args[0], type(exc).__name__, exc)
                return []
            log.warning("%s stopped answering (%s); its GPUs are reported lost", args[0], exc)
            from suanli.live.smi import lost_sample

            return [lost_sample(s) for s in self._seen]
        self._seen = parse_amd_json(data, self._static)
        return list(self._seen)


def _amd_items(data: Any) -> list[Any]:
    """The per-GPU objects: amd-smi's list (bare or under a key such as ``gpu_data``), or
    rocm-smi's dict keyed ``card0``, ``card1``..."""
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return []
    cards = [k for k in data if str(k).startswith("card") and str(k)[4:].isdigit()]
    if cards:
        return [data[k] for k in sorted(cards, key=lambda k: int(str(k)[4:]))]
    lists = [v for v in data.values() if isinstance(v, list)]
    return lists[0] if lists else []


def parse_amd_json(data: Any, static: Any = None) -> list[DeviceSample]:
    """Devices from amd-smi (a list of GPU objects) or rocm-smi (a dict keyed by card);
    ``static`` (amd-smi's ``static --asic --vram --json``) adds names and VRAM size."""
    static_items = _amd_items(static) if static is not None else []
    out = []
    for i, item in enumerate(_amd_items(data)):
        flat = _flatten(static_items[i]) if i < len(static_items) else {}
        flat.update(_flatten(item))
        total = _num(flat, ("vram_total", "VRAM Total Memory (B)", "total_vram", "size"))
        used = _num(flat, ("vram_used", "VRAM Total Used Memory (B)", "used_vram"))
        scale = 2**20 if total is not None and total < 10_000_000 else 1  # amd-smi reports MiB
        name = (
            flat.get("market_name")
            or flat.get("Card Series")
            or flat.get("Card series")
            or flat.get("Card SKU")
            or "AMD GPU"
        )
        out.append(
            DeviceSample(
                index=i,
                name=str(name),
                vendor="amd",
                memory_total_bytes=int(total * scale) if total is not None else NA,
                memory_used_bytes=int(used * scale) if used is not None else NA,
                utilization_pct=_num(flat, ("gfx_activity", "GPU use (%)")),
                power_w=_num(
                    flat,
                    (
                        "socket_power",
                        "Average Graphics Package Power (W)",
                        "Current Socket Graphics Package Power (W)",
                    ),
                ),
                temperature_c=_num(
                    flat,
                    (
                        "hotspot",
                        "edge",
                        "Temperature (Sensor edge) (C)",
                        "Temperature (Sensor junction) (C)",
                    ),
                ),
            )
        )
    return out


def _flatten(obj: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, dict) and set(value) >= {"value"}:
                out[str(key)] = value["value"]
            elif isinstance(value, dict):
                _flatten(value, out)
            else:
                out[str(key)] = value
    return out


def _num(flat: dict[str, Any], keys: Sequence[str]) -> float | None:
    for key in keys:
        value = flat.get(key)
        try:
            if value is not None and str(value).upper() != "N/A":
                return float(str(value).split()[0])
        except ValueError:
            continue
    return NA


def _run_json_tool(args: list[str]) -> str:
    """Run a vendor tool: no shell, 5 s at most, output capped (``ToolError`` otherwise)."""
    from suanli.live.smi import run_tool

    return run_tool(args)


# --- CPU (psutil) ----------------------------------------------------------------------------


class CpuProvider:
    """The host CPU and its memory, through psutil: always available."""

    name = "cpu"

    def available(self) -> bool:
        """psutil is a dependency of the live commands."""
        try:
            import psutil  # noqa: F401
        except ImportError:
            return False
        return True

    def driver(self) -> DriverInfo:
        """No driver layer for the CPU."""
        return DriverInfo(self.name, device_count=1)

    def sample(self) -> list[DeviceSample]:
        """CPU utilisation, host memory, frequency, temperature when the OS reports one."""
        import psutil

        vm = psutil.virtual_memory()
        freq = _query(psutil.cpu_freq)
        temps = (
            _query(psutil.sensors_temperatures, default={})
            if hasattr(psutil, "sensors_temperatures")
            else {}
        )
        temp = NA
        for readings in (temps or {}).values():
            if readings:
                temp = readings[0].current
                break
        return [
            DeviceSample(
                index=0,
                name=cpu_name(),
                vendor="cpu",
                memory_total_bytes=int(vm.total),
                memory_used_bytes=int(vm.total - vm.available),
                utilization_pct=float(psutil.cpu_percent(interval=0.1)),
                memory_utilization_pct=float(vm.percent),
                sm_clock_mhz=getattr(freq, "current", NA) or NA,
                sm_clock_max_mhz=getattr(freq, "max", NA) or NA,
                temperature_c=temp,
            )
        ]


def cpu_name() -> str:
    """The CPU model name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def providers() -> list[Any]:
    """The providers to ask on this machine: a fake when ``SUANLI_FAKE_GPUS`` names one.

    Otherwise NVIDIA through NVML; when the NVML library cannot load, through ``nvidia-smi``;
    failing that, the names the Linux kernel module lists in ``/proc/driver/nvidia``. AMD through
    ``amd-smi``/``rocm-smi`` when installed, then Huawei Ascend NPUs through ``npu-smi`` and Hygon
    DCUs through ``hy-smi`` (on a Hygon machine ``hy-smi`` replaces ``rocm-smi``, which would list
    the same DCUs). The CPU provider always comes last, so with no GPU the answer is the CPU's.
    """
    scenario = os.environ.get("SUANLI_FAKE_GPUS")
    if scenario:
        from suanli.live.fake_devices import fake_provider

        return [fake_provider(scenario), CpuProvider()]
    from suanli.live.ascend_hygon_smi import HySmiProvider, NpuSmiProvider
    from suanli.live.smi import NvidiaSmiProvider, ProcNvidiaProvider

    found: list[Any] = []
    nvml = NvmlProvider()
    if nvml.available():
        found.append(nvml)
    else:
        for fallback in (NvidiaSmiProvider(), ProcNvidiaProvider()):
            if fallback.available():
                found.append(fallback)
                break
    hygon = HySmiProvider()
    amd = AmdSmiProvider()
    if amd.available() and not hygon.available():
        found.append(amd)
    npu = NpuSmiProvider()
    if npu.available():
        found.append(npu)
    if hygon.available():
        found.append(hygon)
    found.append(CpuProvider())
    return found


def gpu_samples(provs: Sequence[Any] | None = None) -> list[DeviceSample]:
    """All GPU samples (the CPU provider excluded)."""
    out: list[DeviceSample] = []
    for provider in provs if provs is not None else providers():
        if provider.name != "cpu":
            out.extend(provider.sample())
    return out
