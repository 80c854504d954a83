"""Measure, on one card, every kernel figure the speed model reads, and fit its GEMM model.

One script for a short GPU session (about 7 minutes of an H200 with the default budget). It
measures with PyTorch and writes rows in the formats of the catalog's data files:

1. GEMMs: the four GEMMs of a decoder layer (fused QKV, attention output, fused gate+up, down)
   of four model shapes at tensor parallelism 1, 2, 4 and 8 (N or K sharded, as
   ``scripts/derive_kernel_profiles.py`` shards Vidur's profiles) and M from 1 to 8192 tokens,
   in bf16, fp16 and fp8 (``torch._scaled_mm``, compute capability 8.9 or newer), plus
   LoRA-rank GEMMs (rank 16 and 64). Median of the repeats, L2 flushed before each call.
2. Element-wise floors: RMSNorm-like, SiLU*mul, add and rotary-like ops written as plain torch
   ops (a known number of kernels each), at 1 to 4096 tokens of hidden 4096; on CUDA the calls
   are captured in a CUDA graph, so the time is the GPU's, not Python's launch overhead.
3. Memory bandwidth: a large device-to-device copy (2 x bytes per copy, BabelStream Copy).
4. Attention: ``scaled_dot_product_attention`` forward and backward, causal and not, head dim
   128, 32 heads, batch x seq = 16k tokens, bf16, per SDPA backend, in the FlashAttention FLOP
   convention of ``catalog/data/attention.toml``.
5. Decode attention: one query token per sequence against a KV cache (32 q / 8 kv heads,
   head dim 128), as a fraction of the card's peak HBM bandwidth (``decode_attention.toml``).

Then it fits ``compute_efficiency``, ``memory_efficiency`` and ``launch_s`` of
:class:`suanli.estimate.kernels.GemmModel` the way ``scripts/derive_kernel_profiles.py`` does (a
grid search minimising the median ``|log(predicted / measured)|``; that script's search is not
factored into a function, so it is repeated here, coarse then fine), and writes under ``--out``:

- ``kernels-<gpu>.toml``: a ``[[gemm]]`` row in ``kernels.toml``'s format (other dtypes' fits as
  comments), ``small_op_s`` from the element-wise floors;
- ``attention-<gpu>.toml`` and ``decode-<gpu>.toml``: ``[[attention]]`` / ``[[decode]]`` rows;
- ``sweep.json`` (every raw measurement) and ``sweep.md`` (a short human summary).

The files are rewritten after every group, so a run cut short still leaves what it measured. A
wall-clock budget (``--budget-s``) bounds the run: groups run cheapest first and each has a share
of the budget; the GEMMs take what is left. Nothing here changes GPU settings (clocks, power).

Run: ``python benchmarks/kernel_sweep.py --out DIR [--quick] [--device cuda|cpu] [--budget-s 420]
[--gpu NAME] [--peak-bw BYTES_PER_S] [--peak-flops FLOP_PER_S]``. ``--device cpu --quick`` runs
tiny shapes in seconds (the CI smoke test); its files are marked ``cpu``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
try:  # an installed suanli, else the checkout's
    import suanli  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT / "src"))

# The sweep's parts, beside this script (its folder is on sys.path when it runs).
from kernel_sweep_files import write_all  # noqa: E402
from kernel_sweep_groups import (  # noqa: E402
    run_attention,
    run_bandwidth,
    run_decode,
    run_gemms,
    run_small_ops,
)
from kernel_sweep_plan import GROUP_SHARE, OutOfTime, Timer, log, make_plan  # noqa: E402

# ----------------------------------------------------------------------------- the card


def resolve_card(args: argparse.Namespace, torch: Any, device: str) -> dict[str, Any]:
    """The catalog entry of the measured card (``--gpu``, else the CUDA device name), its
    peaks, and a file label."""
    from suanli.catalog import CatalogError, find_gpu, load_catalog

    catalog = load_catalog()
    gpu, device_name = None, "cpu"
    if device == "cuda":
        device_name = torch.cuda.get_device_name(0)
        with contextlib.suppress(Exception):  # NVML's name, when pynvml is installed
            import pynvml

            pynvml.nvmlInit()
            raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
            device_name = raw.decode() if isinstance(raw, bytes) else str(raw)
    if args.gpu and device == "cpu":
        log("--gpu is ignored with --device cpu: the rows describe this CPU")
    elif args.gpu:
        gpu = find_gpu(args.gpu, catalog)
    elif device == "cuda":
        gpu = _lookup_device(device_name, torch, catalog, find_gpu, CatalogError)
    peaks: dict[str, float] = {}
    peak_from = bw_from = ""
    bandwidth = None
    if gpu is not None:
        for dtype, order in (
            ("bf16", ("bf16", "fp16")),
            ("fp16", ("fp16", "bf16")),
            ("fp8", ("fp8",)),
        ):
            value = next((gpu.peak_flops(p) for p in order if gpu.peak_flops(p)), None)
            if value:
                peaks[dtype] = value
        peak_from = f"catalog dense peak of {gpu.id}"
        bandwidth, bw_from = gpu.memory_bandwidth_bytes_per_s, f"catalog bandwidth of {gpu.id}"
    if args.peak_flops:
        peaks = {"bf16": args.peak_flops, "fp16": args.peak_flops}
        peak_from = "--peak-flops"
    if args.peak_bw:
        bandwidth, bw_from = args.peak_bw, "--peak-bw"
    label = "cpu" if device == "cpu" else (gpu.id if gpu is not None else _slug(device_name))
    return {
        "label": label,
        "gpu_id": gpu.id if gpu is not None else label,
        "in_catalog": gpu is not None and device == "cuda",
        "device_name": device_name,
        "peak_flops": peaks,
        "peak_from": peak_from,
        "bandwidth": bandwidth,
        "bandwidth_from": bw_from,
    }


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split()) or "gpu"


def _lookup_device(name: str, torch: Any, catalog: Any, find_gpu: Any, error: Any) -> Any:
    """The catalog entry of a CUDA device name; an ambiguous or unknown name is narrowed by
    the device's memory size; None when nothing fits."""
    for query in (name, name.replace("NVIDIA", "").replace("GeForce", "").strip()):
        with contextlib.suppress(error):
            return find_gpu(query, catalog)
    total = torch.cuda.get_device_properties(0).total_memory
    words = [w for w in _slug(name).split("-") if w not in ("nvidia", "geforce")]
    near = [
        g
        for g in catalog
        if words
        and words[0] in _slug(g.id + " " + g.name)
        and abs(g.memory_bytes - total) < 0.12 * g.memory_bytes
    ]
    if len(near) == 1:
        return near[0]
    log(f"device {name!r} is not in the catalog: no fractions of its peaks")
    return None


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for the result files")
    ap.add_argument("--quick", action="store_true", help="fewer and (on the CPU) tiny shapes")
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget, seconds")
    ap.add_argument("--gpu", help="catalog name of the card (default: the CUDA device name)")
    ap.add_argument("--peak-bw", type=float, help="peak memory bandwidth, bytes/s")
    ap.add_argument("--peak-flops", type=float, help="dense 16-bit peak, FLOP/s")
    ap.add_argument("--warmup-s", type=float, default=None, help="GPU warm-up (default 3, 1 quick)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        import torch
    except ImportError:
        log("needs PyTorch (pip install torch)")
        return 1
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        log("--device cuda but torch sees no CUDA device")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(device, args.quick)
    card = resolve_card(args, torch, device)
    meta: dict[str, Any] = {
        "t0": t0,
        "date": datetime.date.today().isoformat(),
        "device": device,
        "quick": args.quick,
        "budget_s": args.budget_s,
        "torch": torch.__version__.split("+")[0],
        "cuda": torch.version.cuda if device == "cuda" else "none",
        "card": card,
        "tps": plan.tps,
        "ms": plan.ms,
        "models": [m.__dict__ for m in plan.models],
        "small_op_timing": "CUDA graph replay" if device == "cuda" else "back-to-back CPU calls",
        "clock": "CUDA events" if device == "cuda" else "time.perf_counter",
        "gemm_timing": "CUDA events, L2 flushed before each call"
        if device == "cuda"
        else "time.perf_counter",
        "truncated": [],
        "settings": "GPU clocks and power limits untouched",
    }
    state: dict[str, Any] = {
        "gemm": [],
        "small_ops": [],
        "bandwidth": None,
        "attention": [],
        "decode": [],
        "skipped": [],
    }
    log(f"{card['device_name']} -> {card['gpu_id']}; budget {args.budget_s:.0f} s; out {args.out}")
    timer = Timer(torch, device, plan, t0 + args.budget_s)
    if device == "cuda":  # a cold GPU clocks differently: run matmuls for a few seconds
        warm = args.warmup_s if args.warmup_s is not None else (1.0 if args.quick else 3.0)
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        end = time.monotonic() + min(warm, 0.05 * args.budget_s)
        while time.monotonic() < end:
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
        del a
    groups: list[tuple[str, Callable[..., None]]] = [
        ("bandwidth", run_bandwidth),
        ("small_ops", run_small_ops),
        ("decode", run_decode),
        ("attention", run_attention),
        ("gemm", run_gemms),
    ]
    for name, run in groups:
        g0 = time.monotonic()
        log(f"{name}: start ({g0 - t0:.0f} s elapsed)")
        try:
            with timer.group(GROUP_SHARE.get(name), args.budget_s):
                run(torch, timer, plan, device, state)
        except OutOfTime:
            meta["truncated"].append(name)
            log(f"{name}: out of time, keeping what was measured")
        except Exception as exc:  # a failing group must not lose the others
            meta["truncated"].append(name)
            state["skipped"].append({"group": name, "what": "group", "why": repr(exc)[:300]})
            log(f"{name}: failed ({exc!r:.200}); keeping what was measured")
        if device == "cuda":
            torch.cuda.empty_cache()
        write_all(args.out, state, meta)
        log(f"{name}: {time.monotonic() - g0:.1f} s; files written to {args.out}")
    fits = state.get("fits", {})
    for dtype, f in fits.items():
        log(
            f"fit {dtype}: e_c {f['compute_efficiency']} e_m {f['memory_efficiency']} launch "
            f"{f['launch_s'] * 1e6:.1f} us, median |error| {f['median_error']:.1%}, "
            f"p90 {f['p90_error']:.1%}"
        )
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
