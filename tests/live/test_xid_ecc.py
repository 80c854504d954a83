"""ECC error totals and Xid events through the one NVML layer, over the fake ``pynvml``: the
counts NVML's ``nvmlDeviceGetTotalEccErrors`` gives, boards without ECC, and Xid events waited
for on a thread as ``suanli export`` does while it serves."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pytest

from suanli.live import exporter, nvml
from suanli.live.devices import NvmlProvider
from suanli.live.xid import XidWatcher

from .fake_pynvml import Gpu, State

Install = Callable[..., State]
UUID_B = "GPU-bbbbbbbb-0000-0000-0000-000000000000"


def test_ecc_totals_by_kind_and_none_without_ecc(install: Install) -> None:
    install([Gpu(ecc=(5, 2, 70, 3)), Gpu(name="NVIDIA GeForce RTX 4090", uuid=UUID_B, ecc=None)])
    h100, rtx = NvmlProvider().sample()
    assert (
        h100.ecc_corrected_volatile,
        h100.ecc_uncorrected_volatile,
        h100.ecc_corrected_aggregate,
        h100.ecc_uncorrected_aggregate,
    ) == (5, 2, 70, 3)
    assert rtx.ecc_corrected_volatile is None and rtx.ecc_uncorrected_aggregate is None
    assert not rtx.lost  # NOT_SUPPORTED is a missing field, not a lost GPU


def _wait_until(check: Callable[[], bool], seconds: float = 5.0) -> None:
    stop = time.monotonic() + seconds
    while time.monotonic() < stop and not check():
        time.sleep(0.01)


def test_xid_events_are_kept_per_gpu_and_exported(install: Install) -> None:
    state = install([Gpu(), Gpu(uuid=UUID_B), Gpu(uuid="GPU-c", events=False)])
    watcher = XidWatcher()
    assert watcher.start()
    try:
        assert (watcher.last(0), watcher.last(1), watcher.last(2)) == (0, 0, None)
        state.xid_events += [(1, 48), (1, 79)]
        _wait_until(lambda: watcher.count(1) == 2)
        assert (watcher.last(1), watcher.count(1), watcher.last(0)) == (79, 2, 0)
        collector = exporter.GpuCollector(read=NvmlProvider().sample, hostname="n", xid=watcher)
        text = exporter.generate_latest(exporter.registry_for(collector)).decode()
        xid = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_XID_ERRORS{")]
        # GPU 2 refused registration: no series rather than a false 0
        assert [line.split('gpu="')[1][0] + " " + line.split()[-1] for line in xid] == [
            "0 0.0",
            "1 79.0",
        ]
    finally:
        watcher.stop()
    assert state.event_sets_freed == 1


def test_no_events_without_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml.shutdown()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails: no NVML here
    try:
        watcher = XidWatcher()
        assert not watcher.start()
        assert watcher.last(0) is None
        watcher.stop()  # harmless
    finally:
        nvml.shutdown()


def test_topology_summary_groups_gpus_and_shows_the_odd_one(install: Install) -> None:
    links_down = (True,) * 16 + (False, False)
    install(
        [Gpu(), Gpu(uuid=UUID_B), Gpu(uuid="GPU-c", nvlinks=links_down, pcie=(5, 8)), Gpu(uuid="d")]
    )
    assert nvml.topology_summary() == "3x(NVLink 18, PCIe 5x16) 1x(NVLink 16, PCIe 5x8)"


def test_topology_summary_of_pcie_cards_and_of_no_gpu(install: Install) -> None:
    install([Gpu(name="NVIDIA L40S", nvlinks=(), pcie=(4, 16))] * 2)
    assert nvml.topology_summary() == "2x(PCIe 4x16)"
    nvml.shutdown()  # a fresh NVML session over the next fake
    install([])
    assert nvml.topology_summary() is None
