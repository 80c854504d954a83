"""Memory bandwidth: a large ``copy_`` in device memory, or in host memory on the CPU."""

from __future__ import annotations

import statistics
from pathlib import Path

from suanli.i18n import N_
from suanli.live.bench.device import MiB, Timer, iteration_count, sync
from suanli.live.bench.profile import BandwidthResult

# --------------------------------------------------------------------------- bandwidth


def _last_level_cache_bytes() -> int:
    """The largest CPU cache (Linux sysfs), 32 MiB when unknown."""
    best = 0
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in base.glob("index*"):
            text = (idx / "size").read_text().strip().upper()
            mult = {"K": 1024, "M": MiB, "G": 1024 * MiB}.get(text[-1:], 1)
            digits = text.rstrip("KMG")
            if digits.isdigit():
                best = max(best, int(digits) * mult)
    except OSError:
        pass
    return best or 32 * MiB


def _copy_times(device: str, numel: int, target_s: float, high: int) -> list[float]:
    """Seconds per ``dst.copy_(src)`` of ``numel`` fp32 elements (the tensors die on return)."""
    import torch

    src = torch.ones(numel, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    timer = Timer(device, flush=False)
    for _ in range(3):  # first touch, warm-up
        dst.copy_(src)
    sync(device)
    per_call = statistics.median(timer.time(lambda: dst.copy_(src), 2))
    return timer.time(lambda: dst.copy_(src), iteration_count(per_call, target_s, 5, high))


def bench_memory(
    device: str = "cpu", *, quick: bool = True, nbytes: int | None = None
) -> BandwidthResult:
    """Device (or, on the CPU, host) memory bandwidth of ``dst.copy_(src)``: 2 x the tensor's
    bytes (one read, one write) per copy, median over iterations."""
    import torch

    cuda = device.startswith("cuda")
    if nbytes is None:
        if cuda:
            nbytes = (512 if quick else 2048) * MiB
        else:
            nbytes = max(4 * _last_level_cache_bytes(), (128 if quick else 512) * MiB)
    numel = nbytes // 4
    times = _copy_times(device, numel, 0.3 if quick else 1.5, 50 if quick else 100)
    median = statistics.median(times)
    moved = 2 * numel * 4
    name = N_("device memory (copy)") if cuda else N_("host memory (copy)")
    if cuda:
        torch.cuda.empty_cache()
    return BandwidthResult(name, moved / median, moved, median, len(times))
