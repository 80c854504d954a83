"""The GEMM model fit of ``kernel_sweep.py``: ``compute_efficiency``, ``memory_efficiency`` and
``launch_s`` of :class:`suanli.estimate.kernels.GemmModel`, by a coarse then fine grid search
minimising the median ``|log(predicted / measured)|``, as ``scripts/derive_kernel_profiles.py``
fits the bundled profiles."""

from __future__ import annotations

import math
import statistics
from typing import Any

from kernel_sweep_plan import DTYPE_BYTES

from suanli.estimate.kernels import PROFILE_BLEND as BLEND
from suanli.estimate.kernels import TILE, GemmModel, gemm_seconds


def fit_gemm(
    rows: list[dict[str, Any]], dtype_bytes: float, peak: float, bandwidth: float
) -> dict[str, Any] | None:
    """``scripts/derive_kernel_profiles.py``'s fit: the (e_c, e_m, launch) minimising the
    median ``|log(predicted / measured)|``; coarse grid, then a fine one around its best."""
    import numpy as np

    if not rows:
        return None
    m = np.array([r["m"] for r in rows], dtype=float)
    n = np.array([r["n"] for r in rows], dtype=float)
    k = np.array([r["k"] for r in rows], dtype=float)
    s = np.array([r["seconds"] for r in rows], dtype=float)
    half = len(rows) // 2

    def predict(ce: float, me: float, launch: float) -> Any:
        model = GemmModel(
            compute_efficiency=ce,
            memory_efficiency=me,
            launch_s=launch,
            tile=TILE,
            source="fit",
            blend=BLEND,
        )
        return gemm_seconds(
            m, n, k, dtype_bytes, peak, bandwidth, model, maximum=np.maximum, ceil=np.ceil
        )

    def score(ce: float, me: float, launch: float) -> float:
        return float(np.sort(np.abs(np.log(predict(ce, me, launch) / s)))[half])

    def search(ces: Any, mes: Any, launches: Any) -> tuple[float, float, float, float]:
        best = (math.inf, 1.0, 1.0, 0.0)
        for ce in ces:
            for me in mes:
                for launch in launches:
                    sc = score(float(ce), float(me), float(launch))
                    if sc < best[0]:
                        best = (sc, float(ce), float(me), float(launch))
        return best

    coarse_l = np.geomspace(0.5e-6, 500e-6, 25)
    _, ce0, me0, l0 = search(np.arange(0.05, 1.001, 0.05), np.arange(0.05, 1.001, 0.05), coarse_l)
    fine = np.arange(-0.05, 0.051, 0.01)
    ces = sorted({round(x, 2) for x in ce0 + fine if 0 < round(x, 2) <= 1})
    mes = sorted({round(x, 2) for x in me0 + fine if 0 < round(x, 2) <= 1})
    launches = sorted({float(f"{x:.2g}") for x in l0 * np.geomspace(0.6, 1.6, 11)})
    score_, ce, me, launch = search(ces, mes, launches)
    rel = np.sort(np.abs(predict(ce, me, launch) / s - 1))
    return {
        "compute_efficiency": ce,
        "memory_efficiency": me,
        "launch_s": float(f"{launch:.2g}"),
        "gemms": len(rows),
        "median_log_error": score_,
        "median_error": float(rel[half]),
        "p90_error": float(rel[int(len(rel) * 0.9)]),
        "peak_flops": peak,
        "bandwidth_bytes_per_s": bandwidth,
    }


def errors_of(rows: list[dict[str, Any]], fit: dict[str, Any], dtype_bytes: float) -> Any:
    model = GemmModel(
        compute_efficiency=fit["compute_efficiency"],
        memory_efficiency=fit["memory_efficiency"],
        launch_s=fit["launch_s"],
        tile=TILE,
        blend=BLEND,
    )
    return sorted(
        abs(
            gemm_seconds(
                r["m"],
                r["n"],
                r["k"],
                dtype_bytes,
                fit["peak_flops"],
                fit["bandwidth_bytes_per_s"],
                model,
            )
            / r["seconds"]
            - 1
        )
        for r in rows
    )


def fit_all(state: dict[str, Any], card: dict[str, Any]) -> None:
    """Fit each measured dtype against the card's peaks (catalog or arguments; else the
    measured best GEMM rate and the copy bandwidth, and say so)."""
    fits: dict[str, Any] = {}
    for dtype in ("bf16", "fp16", "fp8"):
        rows = [r for r in state["gemm"] if r["dtype"] == dtype and not r["lora"]]
        if not rows:
            continue
        peak, peak_from = card["peak_flops"].get(dtype), card["peak_from"]
        if not peak:
            peak = max(r["tflops"] for r in rows) * 1e12
            peak_from = "the best measured GEMM rate (no catalog peak)"
        bw, bw_from = card["bandwidth"], card["bandwidth_from"]
        if not bw:
            copy = state.get("bandwidth") or {}
            bw = copy.get("bytes_per_s") or max(
                DTYPE_BYTES[dtype]
                * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
                / r["seconds"]
                for r in rows
            )
            bw_from = "the measured copy bandwidth (no catalog bandwidth)"
        fit = fit_gemm(rows, DTYPE_BYTES[dtype], peak, bw)
        if fit is None:
            continue
        fit.update(dtype=dtype, peak_from=peak_from, bandwidth_from=bw_from)
        lora = [r for r in state["gemm"] if r["dtype"] == dtype and r["lora"]]
        if lora:
            err = errors_of(lora, fit, DTYPE_BYTES[dtype])
            fit["lora_gemms"] = len(err)
            fit["lora_median_error"] = err[len(err) // 2]
        by_kind = {}
        for kind in sorted({r["kind"] for r in rows}):
            err = errors_of([r for r in rows if r["kind"] == kind], fit, DTYPE_BYTES[dtype])
            by_kind[kind] = err[len(err) // 2]
        fit["median_error_by_kind"] = by_kind
        fits[dtype] = fit
    state["fits"] = fits
    floors = [r["seconds_per_kernel"] for r in state["small_ops"]]
    if floors:
        fewest = min(r["tokens"] for r in state["small_ops"])
        at = [r["seconds_per_kernel"] for r in state["small_ops"] if r["tokens"] == fewest]
        state["small_op_s"] = statistics.median(at)
        state["small_op_tokens"] = fewest
