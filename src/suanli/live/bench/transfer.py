"""Host<->device copy bandwidth, pinned and pageable, both directions (CUDA only)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from suanli.i18n import N_
from suanli.live.bench.device import MiB, Timer, sync
from suanli.live.bench.profile import BandwidthResult

# --------------------------------------------------------------------------- bandwidth


def _transfer_times(
    device: str, nbytes: int, direction: str, pinned: bool, quick: bool
) -> list[float]:
    """Seconds per host<->device copy of ``nbytes`` (the buffers die on return)."""
    import torch

    numel = nbytes // 4
    dev = torch.empty(numel, dtype=torch.float32, device=device)
    host = torch.ones(numel, dtype=torch.float32, pin_memory=pinned)
    if direction == "host->device":
        fn: Callable[[], Any] = lambda: dev.copy_(host, non_blocking=pinned)  # noqa: E731
    else:
        fn = lambda: host.copy_(dev, non_blocking=pinned)  # noqa: E731
    for _ in range(2):
        fn()
    sync(device)
    return Timer(device, flush=False).time(fn, 5 if quick else 20)


def bench_host_transfer(device: str = "cpu", *, quick: bool = True) -> tuple[BandwidthResult, ...]:
    """Host-to-device and device-to-host copy bandwidth from pinned and pageable host memory
    (CUDA only; on the CPU one entry saying it is not available)."""
    if not device.startswith("cuda"):
        return (BandwidthResult("host<->device", None, note=N_("not available: no CUDA device")),)
    import torch

    nbytes = (256 if quick else 1024) * MiB
    out = []
    for memory in ("pinned", "pageable"):
        for direction in ("host->device", "device->host"):
            times = _transfer_times(device, nbytes, direction, memory == "pinned", quick)
            median = statistics.median(times)
            out.append(
                BandwidthResult(
                    f"{direction} {memory}", nbytes / median, nbytes, median, len(times)
                )
            )
    torch.cuda.empty_cache()
    return tuple(out)
