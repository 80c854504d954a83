"""Matmul FLOP/s: the shape sweep per dtype, and the GPU warm-up before timing."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from suanli.i18n import N_
from suanli.live.bench.device import Timer, iteration_count, sync
from suanli.live.bench.profile import MatmulResult, ShapeResult

#: Catalog precision measured for each benchmark dtype.
PRECISION_OF = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}

#: (M, N, K) shapes: squares and LLM-like GEMMs (tokens x out x in of Llama-3 8B/70B layers:
#: fused QKV 4096->6144, fused gate/up 4096->28672, down 14336->4096, 70B down 28672->8192).
CUDA_SHAPES = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 16384, 16384),
    (8192, 6144, 4096),
    (8192, 28672, 4096),
    (8192, 4096, 14336),
    (8192, 8192, 28672),
)
CUDA_QUICK_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 4096))
CPU_SHAPES = (
    (256, 256, 256),
    (512, 512, 512),
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (1024, 3072, 1024),
    (1024, 1024, 3072),
)
CPU_QUICK_SHAPES = ((256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (512, 1536, 512))


# --------------------------------------------------------------------------- matmul


def dtypes_for(device: str) -> tuple[str, ...]:
    """The benchmark dtypes ``device`` can run: fp32, bf16, fp16, plus tf32 on CUDA and fp8 from
    compute capability 8.9 (when torch has ``_scaled_mm``)."""
    import torch

    if not device.startswith("cuda"):
        return ("fp32", "bf16", "fp16")
    out = ["fp32", "tf32", "bf16", "fp16"]
    if torch.cuda.get_device_capability(device) >= (8, 9) and hasattr(torch, "_scaled_mm"):
        out.append("fp8")
    return tuple(out)


class _Fp32Precision:
    """Turn TF32 matmuls on or off for a block, restoring the previous setting."""

    def __init__(self, tf32: bool) -> None:
        self.tf32 = tf32
        self.saved: Any = None

    def __enter__(self) -> None:
        import torch

        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):
            self.saved = ("fp32_precision", mm.fp32_precision)
            mm.fp32_precision = "tf32" if self.tf32 else "ieee"
        else:  # pragma: no cover - torch < 2.9
            self.saved = ("allow_tf32", mm.allow_tf32)
            mm.allow_tf32 = self.tf32

    def __exit__(self, *exc: object) -> None:
        import torch

        name, value = self.saved
        setattr(torch.backends.cuda.matmul, name, value)


def _matmul_call(dtype: str, m: int, n: int, k: int, device: str) -> Callable[[], Any]:
    import torch

    if dtype == "fp8":
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32}.get(
        dtype, torch.bfloat16 if dtype == "bf16" else torch.float16
    )
    a = torch.randn(m, k, device=device, dtype=torch_dtype)
    # B column-major, as nn.Linear's x @ W.t() and mamf-finder lay it out.
    b = torch.randn(n, k, device=device, dtype=torch_dtype).t()
    out = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.mm(a, b, out=out)


def bench_matmul(
    dtype: str,
    device: str = "cpu",
    *,
    quick: bool = True,
    shapes: Sequence[tuple[int, int, int]] | None = None,
    step: Callable[[str], None] | None = None,
) -> MatmulResult:
    """Matmul FLOP/s of ``dtype`` over a shape sweep; the best shape's median wins.

    Shapes run cheapest first; a dtype too slow for the time budget (bf16/fp16 on most CPUs)
    stops early and lists the shapes it left out. ``step`` is called once per shape.
    """
    import torch

    cuda = device.startswith("cuda")
    if shapes is None:
        if cuda:
            shapes = CUDA_QUICK_SHAPES if quick else CUDA_SHAPES
        else:
            shapes = CPU_QUICK_SHAPES if quick else CPU_SHAPES
    order = sorted(shapes, key=lambda s: s[0] * s[1] * s[2])
    warmup = (5 if quick else 20) if cuda else (2 if quick else 5)
    target_s = 0.25 if quick else 1.0
    max_call_s = 0.15 if quick else 1.0
    low, high = (3, 50) if quick else (10, 100)

    results: list[ShapeResult] = []
    skipped: list[str] = []
    timer = Timer(device, flush=True)
    best_rate = 0.0  # FLOP/s of the fastest shape so far, to predict the next one's time
    with _Fp32Precision(tf32=dtype == "tf32") if cuda else contextlib.nullcontext():
        for m, n, k in order:
            label = f"{m}x{n}x{k}"
            flops = 2.0 * m * n * k
            if best_rate and flops / best_rate > max_call_s:
                skipped.append(
                    N_("{shape}: too slow (~{seconds:.2f} s a call)").format(
                        shape=label, seconds=flops / best_rate
                    )
                )
                if step:
                    step(f"matmul {dtype} {label}")
                continue
            try:
                fn = _matmul_call(dtype, m, n, k, device)
                t0 = time.perf_counter()
                fn()
                sync(device)
                first = time.perf_counter() - t0
                if first * low >= target_s:  # slow call: a short warm-up, no probe
                    fn()
                    per_call = first
                else:
                    for _ in range(warmup - 1):
                        fn()
                    sync(device)
                    per_call = statistics.median(timer.time(fn, 2))
                sync(device)
                times = timer.time(fn, iteration_count(per_call, target_s, low, high))
            except (RuntimeError, TypeError) as exc:  # unsupported dtype/shape, out of memory
                skipped.append(f"{label}: {str(exc).splitlines()[0][:120]}")
                if cuda:
                    torch.cuda.empty_cache()
                if step:
                    step(f"matmul {dtype} {label}")
                continue
            median = statistics.median(times)
            results.append(ShapeResult(m, n, k, flops / median, median, len(times)))
            best_rate = max(best_rate, flops / median)
            del fn
            if step:
                step(f"matmul {dtype} {label}")
    if cuda:
        torch.cuda.empty_cache()
    best = max(results, key=lambda r: r.flops_per_s, default=None)
    return MatmulResult(
        dtype=dtype,
        precision=PRECISION_OF[dtype],
        best_flops_per_s=best.flops_per_s if best else 0.0,
        best_shape=(best.m, best.n, best.k) if best else None,
        shapes=tuple(results),
        skipped=tuple(skipped),
    )


def warm_up_gpu(device: str, seconds: float) -> None:
    """Keep the GPU busy with bf16 matmuls for ``seconds`` so clocks and temperature settle
    before timing (mamf-finder warms the accelerator for 30 s: a cold GPU scores higher)."""
    import torch

    a = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(10):
            torch.mm(a, b)
        torch.cuda.synchronize(device)
