"""Xid errors as the driver reports them, for ``suanli export``'s ``DCGM_FI_DEV_XID_ERRORS``.

An Xid is the NVIDIA driver's numbered report of a GPU error (79: fallen off the bus, 48: a
double-bit ECC error, 63/64: row remapping, 13/31/43: an application's fault; NVIDIA's "Xid
Errors" guide). NVML delivers them as events (``nvmlEventTypeXidCriticalError``): a
:class:`XidWatcher` registers every GPU in one event set and a daemon thread waits on it,
keeping the last Xid and the count per GPU index, as dcgm-exporter's field "Value of the last XID
error encountered" does (0 until one arrives).

Nothing here raises: a driver without events, a GPU that refuses registration (MIG instances,
some consumer boards) or a failed wait leaves that GPU unwatched, logged at debug level.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from suanli.live import nvml

log = logging.getLogger(__name__)

#: nvml.h: ``nvmlEventTypeXidCriticalError`` and the wait's ``NVML_ERROR_TIMEOUT``.
EVENT_XID_CRITICAL = 0x0000000000000008
ERROR_TIMEOUT = 10
#: How long one wait blocks (ms): also how long :meth:`XidWatcher.stop` may take.
WAIT_MS = 500


class XidWatcher:
    """The last Xid error and the count per GPU index, since :meth:`start`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[int, int] = {}
        self._count: dict[int, int] = {}
        self._watched: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nv: Any = None
        self._set: Any = None

    def start(self) -> bool:
        """Register every GPU and start waiting; False when NVML has no events here."""
        nv = nvml.library()
        create = getattr(nv, "nvmlEventSetCreate", None) if nv is not None else None
        if nv is None or create is None:
            return False
        try:
            event_set = create()
        except Exception as exc:
            log.debug("Xid events unavailable: %s", exc)
            return False
        kind = getattr(nv, "nvmlEventTypeXidCriticalError", EVENT_XID_CRITICAL)
        for dev in nvml.devices():
            if dev.lost or dev.handle is None:
                continue
            try:
                nv.nvmlDeviceRegisterEvents(dev.handle, kind, event_set)
            except Exception as exc:  # not supported on this board: it stays unwatched
                log.debug("GPU %s: Xid events not registered: %s", dev.index, exc)
                continue
            self._watched.add(dev.index)
        if not self._watched:
            self._free(nv, event_set)
            return False
        self._nv, self._set = nv, event_set
        self._thread = threading.Thread(target=self._run, name="suanli-xid", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        nv = self._nv
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        timeout = getattr(nv, "NVML_ERROR_TIMEOUT", ERROR_TIMEOUT)
        while not self._stop.is_set():
            try:
                data = wait(self._set, WAIT_MS)
            except Exception as exc:
                if getattr(exc, "value", None) == timeout:
                    continue
                log.debug("waiting for Xid events failed, no longer watching: %s", exc)
                return
            try:
                index = int(nv.nvmlDeviceGetIndex(data.device))
                self.record(index, int(data.eventData))
            except Exception as exc:
                log.debug("an Xid event could not be read: %s", exc)

    def record(self, index: int, xid: int) -> None:
        """Note Xid ``xid`` on GPU ``index`` (the event thread calls this)."""
        log.warning("GPU %s reported Xid %s", index, xid)
        with self._lock:
            self._last[index] = xid
            self._count[index] = self._count.get(index, 0) + 1

    def last(self, index: int) -> int | None:
        """The last Xid of GPU ``index`` (0: none yet; None: not watched)."""
        with self._lock:
            if index not in self._watched:
                return None
            return self._last.get(index, 0)

    def count(self, index: int) -> int | None:
        """Xid events of GPU ``index`` since :meth:`start` (None: not watched)."""
        with self._lock:
            if index not in self._watched:
                return None
            return self._count.get(index, 0)

    def stop(self) -> None:
        """Stop waiting and free the event set (within :data:`WAIT_MS`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * WAIT_MS / 1000)
        if self._set is not None:
            self._free(self._nv, self._set)
            self._set = None

    @staticmethod
    def _free(nv: Any, event_set: Any) -> None:
        try:
            nv.nvmlEventSetFree(event_set)
        except Exception as exc:
            log.debug("nvmlEventSetFree failed: %s", exc)
