"""This machine's CPU as a device like any catalog GPU (``--gpu local-cpu``).

Its peaks are measured, not looked up: a ``suanli bench`` profile for this host when one exists
(``cpu-<host>.toml`` in :func:`suanli.paths.calibration_dir`), otherwise a quick measurement here
(a few matmuls per dtype with the BLAS torch uses, and a large copy), about two seconds. Memory
is the host's RAM. torch and psutil are imported inside the functions.
"""

from __future__ import annotations

import platform
import socket
import statistics
import time
from functools import lru_cache
from typing import Any

from suanli.catalog.gpu import GPU, Source
from suanli.i18n import N_

LOCAL_NAMES = ("local-cpu", "localcpu", "local", "cpu", "this-cpu")


def is_local_cpu(name: str) -> bool:
    """Whether a ``--gpu`` name means this machine's CPU."""
    return name.strip().lower().replace(" ", "-") in LOCAL_NAMES


def _measure_matmul(dtype_name: str, n: int = 1024, repeat: int = 5) -> float:
    import torch

    dtype = getattr(torch, {"fp32": "float32", "bf16": "bfloat16"}[dtype_name])
    a = torch.randn(n, n, dtype=dtype)
    b = torch.randn(n, n, dtype=dtype)
    a @ b  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times)


def _measure_copy(nbytes: int = 256 * 2**20, repeat: int = 5) -> float:
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - start)
    return 2 * nbytes / statistics.median(times)  # bytes read plus written


def _from_profile() -> dict[str, float] | None:
    from suanli.catalog.loader import CatalogError
    from suanli.estimate.device import read_calibration
    from suanli.paths import local_calibration_path

    path = local_calibration_path(f"cpu-{socket.gethostname()}")
    if not path.is_file():
        return None
    try:
        rows = read_calibration(path)
    except CatalogError:
        return None
    out: dict[str, float] = {}
    for (_, precision), row in rows.items():
        out[precision] = float(row["matmul_flops"])
        if row.get("memory_bandwidth_bytes_per_s"):
            out["bandwidth"] = float(row["memory_bandwidth_bytes_per_s"])
    return out if "fp32" in out else None


@lru_cache(maxsize=1)
def local_cpu() -> GPU:
    """This machine's CPU as a catalog record, with measured peaks and bandwidth."""
    import psutil

    from suanli.live.devices import cpu_name

    profile = _from_profile()
    if profile is not None:
        fp32, bf16 = profile["fp32"], profile.get("bf16")
        bandwidth = profile.get("bandwidth") or _measure_copy()
        how = N_("suanli bench profile of this host")
    else:
        fp32 = _measure_matmul("fp32")
        bf16 = _measure_matmul("bf16", n=512, repeat=3)
        bandwidth = _measure_copy()
        how = N_("quick measurement: 1024^3 matmuls and a 256 MiB copy with torch")
    name = cpu_name()
    lower = name.lower()
    vendor = (
        "intel"
        if "intel" in lower
        else "amd"
        if ("amd" in lower or "epyc" in lower or "ryzen" in lower)
        else "apple"
        if platform.system() == "Darwin"
        else "intel"
    )
    figures: dict[str, Any] = {
        "peak_fp32_flops": fp32,
        "cores": psutil.cpu_count(logical=False) or psutil.cpu_count(),
        "notes": N_("measured: {how}").format(how=how),
    }
    if bf16:
        figures["peak_bf16_dense_flops"] = bf16
    return GPU(
        id="local-cpu",
        name=f"{name} (this machine)",
        vendor=vendor,
        form_factor="cpu",
        memory_bytes=int(psutil.virtual_memory().total),
        memory_type="host RAM",
        memory_bandwidth_bytes_per_s=bandwidth,
        launch_year=2026,
        software_stack="cpu",
        figures=figures,
        sources=(Source(("*",), how, time.strftime("%Y-%m-%d")),),
        origin=N_("measured on this machine"),
    )


def local_calibration() -> dict[tuple[str, str], dict[str, Any]]:
    """Calibration rows saying the measured peaks are what kernels reach (efficiency 1.0)."""
    cpu = local_cpu()
    rows = {}
    for precision in ("fp32", "bf16"):
        value = cpu.peak_flops(precision)
        if value:
            rows[(cpu.id, precision)] = {
                "matmul_flops": value,
                "memory_bandwidth_bytes_per_s": cpu.memory_bandwidth_bytes_per_s,
            }
    return rows
