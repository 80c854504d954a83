"""The one NVML layer: every read of an NVIDIA GPU through nvidia-ml-py (``pynvml``) goes here.

Used by the device provider (``top``, ``query``, ``export``, ``doctor``), the benchmarks' health
check and ``verify``. What it settles once for all of them, the way mature monitors (nvitop,
gpustat, DCGM) do:

- **Init once, shut down at exit.** :func:`library` calls ``nvmlInit`` once per process and
  registers one ``nvmlShutdown`` with :mod:`atexit`; a failed init is remembered (its error is
  :func:`init_error`) and never shut down.
- **Lost GPUs.** ``NVML_ERROR_GPU_IS_LOST`` on any read, or ``NVML_ERROR_UNKNOWN`` on an
  essential one (handle, name, UUID, memory), marks that device lost: nothing more is asked of it,
  the other devices are read as usual, and no exception leaves this module.
- **MIG.** On a GPU in MIG mode the memory belongs to its instances: :func:`devices` lists them
  (``nvmlDeviceGetMigDeviceHandleByIndex``), each with its own name, UUID (``MIG-...``) and
  memory, instead of the parent's totals as if the GPU were whole.
- **Memory info v2** (``nvmlDeviceGetMemoryInfo_v2``, drivers r510 and newer): the driver's
  reserved memory is separated from what processes use; older drivers fall back to v1.
- **UUIDs.** :func:`cuda_devices` maps ``CUDA_VISIBLE_DEVICES`` (indices, GPU or MIG UUIDs and
  their unique prefixes) to NVML devices; :func:`device_for_cuda` finds torch's ``cuda:N``.
- **Errors are logged** (``logging.getLogger(__name__)``; ``--debug`` or ``SUANLI_LOG=debug``
  shows them): "not supported" at debug level, a lost GPU as a warning.

``pynvml`` is imported inside :func:`library` only, never when this module is imported.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger(__name__)

NA = None
"""What a read returns when the device does not report the value."""

#: NVML return codes (nvml.h ``nvmlReturn_t``), used when the module does not name them.
ERROR_GPU_IS_LOST = 15
ERROR_UNKNOWN = 999
#: ``nvmlDeviceGetMigMode``'s current mode when MIG is on (nvml.h ``NVML_DEVICE_MIG_ENABLE``).
MIG_ENABLE = 1


class _Library:
    """The process's NVML session: the initialised module, or why there is none."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.module: Any = None
        self.error: str | None = None
        self.tried = False
        self.atexit_registered = False


_LIB = _Library()


def library() -> Any | None:
    """The initialised ``pynvml`` module, or ``None`` (no library, no driver, no device).

    ``nvmlInit`` runs once per process, whoever asks first; the first success registers
    :func:`shutdown` with :mod:`atexit` (once). A failure is remembered until :func:`shutdown`.
    """
    with _LIB.lock:
        if _LIB.tried:
            return _LIB.module
        _LIB.tried = True
        try:
            import pynvml  # type: ignore[import-untyped]

            pynvml.nvmlInit()
        except Exception as exc:  # no library, no driver, version mismatch, no device
            _LIB.error = f"{type(exc).__name__}: {exc}".strip()
            log.debug("NVML did not initialise: %s", _LIB.error)
            return None
        _LIB.module = pynvml
        if not _LIB.atexit_registered:
            atexit.register(shutdown)
            _LIB.atexit_registered = True
        return pynvml


def init_error() -> str | None:
    """Why NVML did not initialise (``ModuleNotFoundError: ...``, ``NVMLError_...: ...``)."""
    library()
    return _LIB.error


def shutdown() -> None:
    """``nvmlShutdown`` when NVML was initialised (never after a failed init), then forget the
    session so that a later :func:`library` initialises again. Safe to call more than once."""
    with _LIB.lock:
        module, _LIB.module, _LIB.tried, _LIB.error = _LIB.module, None, False, None
        if module is None:
            return
        try:
            module.nvmlShutdown()
        except Exception as exc:  # at exit the driver may already be gone
            log.debug("nvmlShutdown failed: %s", _describe(exc))


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _decode(value: Any) -> Any:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _fn_name(fn: Any) -> str:
    return str(getattr(fn, "__name__", fn))


def call(fn: Callable[..., Any] | None, *args: Any, default: Any = NA) -> Any:
    """A system-level NVML call (driver version, device count): ``default`` on any failure,
    logged at debug level."""
    if fn is None:
        return default
    try:
        return _decode(fn(*args))
    except Exception as exc:  # vendor libraries raise many types for "not supported"
        log.debug("%s failed: %s", _fn_name(fn), _describe(exc))
        return default


class DeviceReader:
    """Reads one device through its handle: the choke point that never raises.

    A failed read returns its default (logged at debug level). ``NVML_ERROR_GPU_IS_LOST`` on any
    read, or ``NVML_ERROR_UNKNOWN`` on an ``essential`` one, marks the device :attr:`lost`
    (logged once as a warning) and every later read returns its default without asking.
    """

    def __init__(self, nv: Any, handle: Any, label: str) -> None:
        self.nv = nv
        self.handle = handle
        self.label = label
        self.lost = False
        self.error: str | None = None

    def get(
        self, fn: Callable[..., Any] | str | None, *args: Any, default: Any = NA, **kwargs: Any
    ) -> Any:
        """``fn(handle, *args, **kwargs)``; ``fn`` may be a name looked up on the module.

        ``essential=True`` (a keyword) says the device is unusable without this value."""
        essential = bool(kwargs.pop("essential", False))
        if isinstance(fn, str):
            fn = getattr(self.nv, fn, None)
        if fn is None or self.lost:
            return default
        try:
            return _decode(fn(self.handle, *args, **kwargs))
        except Exception as exc:
            self.failed(_fn_name(fn), exc, essential=essential)
            return default

    def failed(self, what: str, exc: BaseException, *, essential: bool = False) -> None:
        """Record a failed read: lost when NVML says so, else a debug line."""
        code = _code(exc)
        lost_code = getattr(self.nv, "NVML_ERROR_GPU_IS_LOST", ERROR_GPU_IS_LOST)
        unknown_code = getattr(self.nv, "NVML_ERROR_UNKNOWN", ERROR_UNKNOWN)
        if code == lost_code or (essential and code == unknown_code):
            self.lost = True
            self.error = _describe(exc)
            log.warning("%s is lost (%s failed: %s)", self.label, what, self.error)
        else:
            log.debug("%s: %s failed: %s", self.label, what, _describe(exc))


#: nvml.h: ``nvmlMemoryErrorType_t`` (corrected 0, uncorrected 1) and ``nvmlEccCounterType_t``
#: (volatile 0: since the driver loaded; aggregate 1: the board's life).
ECC_COUNTERS = {
    "ecc_corrected_volatile": (0, 0),
    "ecc_uncorrected_volatile": (1, 0),
    "ecc_corrected_aggregate": (0, 1),
    "ecc_uncorrected_aggregate": (1, 1),
}


def ecc_counts(reader: DeviceReader) -> dict[str, int | None]:
    """The four ECC error totals (``nvmlDeviceGetTotalEccErrors``); None where the board has no
    ECC or it is off (GeForce cards answer NOT_SUPPORTED)."""
    out: dict[str, int | None] = {}
    for name, (error_type, counter_type) in ECC_COUNTERS.items():
        value = reader.get("nvmlDeviceGetTotalEccErrors", error_type, counter_type)
        out[name] = int(value) if isinstance(value, int) else None
    return out


@dataclass(frozen=True)
class MemoryInfo:
    """Device memory as NVML reports it, in bytes."""

    total_bytes: int
    used_bytes: int
    """What processes (and their CUDA contexts) hold; with v1 the reserved memory too."""
    free_bytes: int
    reserved_bytes: int | None = NA
    """Held back by the driver and firmware (v2 only; ``None`` with v1, where it is in used)."""
    version: int = 1

    @property
    def usable_bytes(self) -> int:
        """What processes can allocate: the total less the driver's reservation (CUDA's
        ``total_memory``); the total itself with v1."""
        return self.total_bytes - (self.reserved_bytes or 0)


_FAILED = object()


def memory_info(reader: DeviceReader) -> MemoryInfo | None:
    """Memory info v2 where the driver and bindings support it, else v1; ``None`` when neither
    answers (then a lost device is marked so)."""
    nv = reader.nv
    version = getattr(nv, "nvmlMemory_v2", None)
    if version is not None:
        # Old bindings take no version (TypeError); old drivers lack the _v2 entry point.
        mem = reader.get(nv.nvmlDeviceGetMemoryInfo, version=version, default=_FAILED)
        if mem is not _FAILED and getattr(mem, "reserved", None) is not None:
            return MemoryInfo(
                int(mem.total), int(mem.used), int(mem.free), int(mem.reserved), version=2
            )
        if reader.lost:
            return None
    mem = reader.get(nv.nvmlDeviceGetMemoryInfo, default=None, essential=True)
    if mem is None:
        return None
    return MemoryInfo(int(mem.total), int(mem.used), int(mem.free), version=1)


@dataclass(frozen=True)
class NvmlDevice:
    """One NVML device: a whole GPU, or one MIG instance of a GPU in MIG mode."""

    index: int
    """NVML's index of the GPU (PCI order); a MIG instance carries its parent's."""
    handle: Any = None
    name: str | None = NA
    uuid: str | None = NA
    """``GPU-...``, or ``MIG-...`` for an instance."""
    lost: bool = False
    error: str | None = NA
    mig_enabled: bool = False
    """The GPU is in MIG mode: its memory is in :attr:`instances`, not its own."""
    instances: tuple[NvmlDevice, ...] = ()
    mig_index: int | None = NA
    """The instance's position under its parent (``None`` for a GPU)."""
    parent_uuid: str | None = NA
    gpu_instance_id: int | None = NA
    compute_instance_id: int | None = NA
    reader: DeviceReader | None = field(default=None, compare=False, repr=False)
    """The reader the device was found with (for further reads)."""


def _mig_instances(reader: DeviceReader, index: int, parent_uuid: str | None) -> list[NvmlDevice]:
    nv = reader.nv
    out = []
    for j in range(reader.get("nvmlDeviceGetMaxMigDeviceCount", default=0) or 0):
        # An empty slot answers NOT_FOUND (a debug line), a lost parent marks the reader.
        mig_handle = reader.get("nvmlDeviceGetMigDeviceHandleByIndex", j)
        if reader.lost:
            return []
        if mig_handle is None:
            continue
        mig = DeviceReader(nv, mig_handle, f"GPU {index} MIG {j}")
        name = mig.get("nvmlDeviceGetName", essential=True)
        uuid = mig.get("nvmlDeviceGetUUID", essential=True)
        out.append(
            NvmlDevice(
                index,
                mig_handle,
                name=str(name) if name is not None else NA,
                uuid=uuid,
                lost=mig.lost,
                error=mig.error,
                mig_index=j,
                parent_uuid=parent_uuid,
                gpu_instance_id=mig.get("nvmlDeviceGetGpuInstanceId"),
                compute_instance_id=mig.get("nvmlDeviceGetComputeInstanceId"),
                reader=mig,
            )
        )
    return out


def devices() -> list[NvmlDevice]:
    """Every GPU NVML lists, in its order, each with its MIG instances when in MIG mode; a GPU
    that cannot be read is returned ``lost`` (never raised). Empty without NVML."""
    nv = library()
    if nv is None:
        return []
    out = []
    for i in range(call(nv.nvmlDeviceGetCount, default=0) or 0):
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(i)
        except Exception as exc:  # lost, no permission (a container), unknown
            log.warning("GPU %d cannot be read (%s)", i, _describe(exc))
            out.append(NvmlDevice(i, lost=True, error=_describe(exc)))
            continue
        reader = DeviceReader(nv, handle, f"GPU {i}")
        name = reader.get("nvmlDeviceGetName", essential=True)
        uuid = reader.get("nvmlDeviceGetUUID", essential=True)
        mode = reader.get("nvmlDeviceGetMigMode")
        mig_on = isinstance(mode, (list, tuple)) and bool(mode) and mode[0] == MIG_ENABLE
        instances = _mig_instances(reader, i, uuid) if mig_on and not reader.lost else []
        out.append(
            NvmlDevice(
                i,
                handle,
                name=str(name) if name is not None else NA,
                uuid=uuid,
                lost=reader.lost,
                error=reader.error,
                mig_enabled=mig_on,
                instances=tuple(instances),
                reader=reader,
            )
        )
    return out


# --- CUDA_VISIBLE_DEVICES <-> NVML -----------------------------------------------------------


def parse_visible_devices(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` split into entries (``None`` when unset: every device)."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _bare(uuid: str | None) -> str:
    """A UUID without its ``GPU-``/``MIG-`` prefix, lower-cased (torch prints it bare)."""
    text = (uuid or "").strip().lower()
    for prefix in ("mig-", "gpu-"):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _cuda_units(dev: NvmlDevice) -> list[NvmlDevice]:
    """What CUDA sees of a GPU: the GPU itself, or its MIG instances in MIG mode."""
    if dev.mig_enabled:
        return [m for m in dev.instances if not m.lost]
    return [] if dev.lost else [dev]


def _match(entry: str, devs: Sequence[NvmlDevice]) -> list[NvmlDevice] | None:
    """The devices one entry names, or ``None`` when it names none (or several: ambiguous)."""
    text = entry.strip()
    if text.lstrip("-").isdigit():
        index = int(text)
        found = [d for d in devs if d.index == index]
        return _cuda_units(found[0]) if found and index >= 0 else None
    lower = text.lower()
    if lower.startswith("mig-gpu-"):  # the R450 form: MIG-GPU-<parent uuid>/<gi>/<ci>
        parent, _, rest = text[4:].partition("/")
        gi, _, ci = rest.partition("/")
        for dev in devs:
            if _bare(dev.uuid) == _bare(parent):
                for m in dev.instances:
                    if str(m.gpu_instance_id) == gi and str(m.compute_instance_id) == ci:
                        return [m]
        return None
    candidates = [m for d in devs for m in d.instances] if lower.startswith("mig-") else list(devs)
    # CUDA accepts any unique prefix of a UUID.
    hits = [d for d in candidates if d.uuid and d.uuid.lower().startswith(lower)]
    if len(hits) != 1:
        return None
    return [hits[0]] if hits[0].mig_index is not None else _cuda_units(hits[0])


def cuda_devices(devs: Sequence[NvmlDevice], visible: str | None) -> list[NvmlDevice]:
    """The devices a CUDA process numbers 0, 1, ... for ``CUDA_VISIBLE_DEVICES=visible``.

    Entries are NVML indices (CUDA's own numbering matches NVML's with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``), ``GPU-`` or ``MIG-`` UUIDs or unique prefixes of them, or
    the older ``MIG-GPU-<uuid>/<gi>/<ci>``. As in CUDA, the list stops at the first entry that
    names no device, and a device named twice counts once. A GPU in MIG mode stands for its
    instances (recent drivers let one CUDA process use only the first of them).
    """
    entries = parse_visible_devices(visible)
    if entries is None:
        return [u for d in devs for u in _cuda_units(d)]
    out: list[NvmlDevice] = []
    for entry in entries:
        found = _match(entry, devs)
        if found is None:
            log.debug("CUDA_VISIBLE_DEVICES entry %r names no device; CUDA stops there", entry)
            break
        out.extend(f for f in found if all(f.uuid != o.uuid or f.index != o.index for o in out))
    return out


def device_for_cuda(
    cuda_index: int,
    torch_uuid: str | None = None,
    visible: str | None = None,
    devs: Sequence[NvmlDevice] | None = None,
) -> NvmlDevice | None:
    """The NVML device behind torch's ``cuda:<cuda_index>``: by the UUID torch reports when it
    gives one (exact whatever the ordering), else by position in ``CUDA_VISIBLE_DEVICES``."""
    devs = devices() if devs is None else devs
    if torch_uuid:
        want = _bare(torch_uuid)
        for dev in devs:
            for unit in (dev, *dev.instances):
                if unit.uuid and _bare(unit.uuid) == want:
                    return unit
    order = cuda_devices(devs, visible)
    return order[cuda_index] if 0 <= cuda_index < len(order) else None


def with_memory(dev: NvmlDevice) -> tuple[NvmlDevice, MemoryInfo | None]:
    """A device and its memory info; the device marked lost when the memory read lost it."""
    reader = dev.reader
    if reader is None or dev.lost:
        return dev, None
    mem = memory_info(reader)
    if reader.lost:
        return replace(dev, lost=True, error=reader.error), None
    return dev, mem


#: nvml.h ``NVML_NVLINK_MAX_LINKS`` (18 on Hopper; older GPUs answer an error past their last).
NVLINK_MAX_LINKS = 18
#: ``nvmlDeviceGetNvLinkState``'s answer for an active link (``NVML_FEATURE_ENABLED``).
FEATURE_ENABLED = 1


def active_nvlinks(reader: DeviceReader) -> int:
    """How many of a GPU's NVLinks are up (0 without NVLink, or where NVML cannot tell)."""
    nv = reader.nv
    up = 0
    for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS))):
        state = reader.get("nvmlDeviceGetNvLinkState", link)
        if state is None:  # past the GPU's last link, or no NVLink at all
            break
        up += state == getattr(nv, "NVML_FEATURE_ENABLED", FEATURE_ENABLED)
    return up


def topology_summary() -> str | None:
    """This node's GPU links, one entry per kind of GPU with its count: ``8x(NVLink 18, PCIe
    5x16)``. A GPU with a link down or a PCIe slot trained below the others makes its own
    entry, so nodes that should match compare equal. None without NVML or GPUs."""
    kinds: dict[str, int] = {}
    for dev in devices():
        reader = dev.reader
        if reader is None or dev.lost:
            kinds["lost"] = kinds.get("lost", 0) + 1
            continue
        parts = []
        links = active_nvlinks(reader)
        if links:
            parts.append(f"NVLink {links}")
        gen = reader.get("nvmlDeviceGetCurrPcieLinkGeneration")
        width = reader.get("nvmlDeviceGetCurrPcieLinkWidth")
        if gen is not None and width is not None:
            parts.append(f"PCIe {gen}x{width}")
        key = ", ".join(parts) or "?"
        kinds[key] = kinds.get(key, 0) + 1
    if not kinds:
        return None
    return " ".join(f"{n}x({k})" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
