"""Device helpers shared by the measurements: the device name, synchronisation, the timer
and the iteration count for a time budget."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from suanli.i18n import N_

#: Bytes in a mebibyte.
MiB = 1024**2


# --------------------------------------------------------------------------- device helpers


def resolve_device(device: str | None) -> str:
    """``cpu`` or ``cuda:N``; None picks CUDA when available. ValueError for anything else."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = device.strip().lower()
    if device == "cpu":
        return "cpu"
    if device == "cuda" or re.fullmatch(r"cuda:\d+", device):
        if not torch.cuda.is_available():
            raise ValueError(N_("CUDA is not available on this machine; use --device cpu"))
        index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
        if index >= torch.cuda.device_count():
            raise ValueError(
                N_("no CUDA device {index}; this machine has {count}").format(
                    index=index, count=torch.cuda.device_count()
                )
            )
        return f"cuda:{index}"
    raise ValueError(N_("unknown device {device!r}; use cpu or cuda").format(device=device))


def sync(device: str) -> None:
    """Wait for the work queued on ``device`` (CUDA only; the CPU is synchronous)."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


class Timer:
    """Times single calls: CUDA events on CUDA, perf_counter on the CPU; an optional L2 flush
    (a write to a buffer larger than L2) runs before each timed call, outside the timing."""

    def __init__(self, device: str, flush: bool) -> None:
        import torch

        self.device = device
        self.cuda = device.startswith("cuda")
        self.flush_buf: Any = None
        if self.cuda and flush:
            props = torch.cuda.get_device_properties(device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 50 * MiB)
            # mamf-finder writes 256 MB (the largest LLC, MI300X); at least twice L2 here.
            size = max(2 * l2, 256 * MiB)
            self.flush_buf = torch.empty(size, dtype=torch.int8, device=device)

    def time(self, fn: Callable[[], Any], iterations: int) -> list[float]:
        """Seconds per call for ``iterations`` calls of ``fn``."""
        import torch

        if self.cuda:
            pairs = []
            for _ in range(iterations):
                if self.flush_buf is not None:
                    self.flush_buf.zero_()
                start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                start.record()
                fn()
                end.record()
                pairs.append((start, end))
            torch.cuda.synchronize(self.device)
            return [s.elapsed_time(e) / 1e3 for s, e in pairs]
        times = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times


def iteration_count(per_call_s: float, target_s: float, low: int, high: int) -> int:
    """Timed calls that fill ``target_s`` at ``per_call_s`` each, kept within ``[low, high]``
    (``high`` when the call time is unknown)."""
    if per_call_s <= 0:
        return high
    return max(low, min(high, int(target_s / per_call_s)))
