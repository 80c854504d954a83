"""Fit the GEMM kernel model of cards Vidur did not profile, from NVIDIA's aiconfigurator tables
(developer tool).

ai-dynamo/aiconfigurator (Apache-2.0) ships per-card GEMM timings collected with its
``collector/trtllm/collect_gemm.py``: one TensorRT-LLM ``Linear`` layer per (M, N, K) and dtype,
timed under CUDA graphs with enough weight copies to defeat the L2 cache (``gemm_perf.parquet``
under ``aic-core/src/aiconfigurator_core/systems/data/<card>/gemm/trtllm/<version>/``; latency in
milliseconds). Its fp8 rows include the dynamic quantization of the activations (the collector
says so: its fp8 weights carry no input scale).

This script, run by hand on a checkout of that repository (``pip install pyarrow`` first):

- fits :class:`suanli.estimate.kernels.GemmModel` on the bf16 rows of the cards Vidur did not
  profile, with 1,024 <= N, K <= 16,384 (the widths of LLM layers, as Vidur's profiles), with the
  grid search of ``derive_kernel_profiles.py`` and its blend, and prints the fit, a hold-out check
  (fitted on half of the (N, K) pairs, scored on the other half) and the ``[[gemm]]`` rows for
  ``src/suanli/catalog/data/kernels.toml``. The fp8 rows are not fitted (they time the dynamic
  quantization of the input with the GEMM; kernels.toml says why): they go into the fixture as a
  check;
- writes ``tests/fixtures/kernel-gemm-times-aic.csv``: a thinned subset of the bf16 and fp8 rows
  of every card (the test set, also read by ``benchmarks/accuracy_kernels.py``).

Nothing in the package or the tests reads the checkout. Usage:
``python scripts/derive_aic_gemm_profiles.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

from aiconfigurator import CATALOG_IDS, read_table, run, write_fixture  # noqa: E402
from derive_kernel_profiles import BLEND, BUCKETS, fit, fitted_model  # noqa: E402

#: aiconfigurator card folder -> (TensorRT-LLM collection, bf16 fitted here). The A100 and H100
#: keep their Vidur fits (the tables check them).
CARDS = {
    "a100_sxm": ("1.0.0", False),
    "h100_sxm": ("1.3.0rc20", False),
    "h200_sxm": ("1.3.0rc20", True),
    "l40s": ("1.3.0rc20", True),
    "b200_sxm": ("1.3.0rc20", True),
}
#: aiconfigurator dtype -> the precision of its dense peak in the catalog.
DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
#: Layer widths the fit and the fixture keep (the tables also hold tiny and vocabulary-sized N, K).
MIN_NK, MAX_NK = 1024, 16384
#: The collector keeps up to five copies of a weight to spread reads beyond the L2 cache, which is
#: not enough for small weights: on the L40S (96 MB of L2) a 16 MiB weight read at 2 TB/s, over
#: twice its memory's rate. Rows that stream their weight (fewer than ``MIN_ROWS`` rows) are kept
#: only when the bf16 weight holds at least ``MIN_WEIGHT_BYTES``, more than any of these cards'
#: L2 (40-126 MB); larger GEMMs are compute-bound and kept whatever their weight.
MIN_ROWS = 512
MIN_WEIGHT_BYTES = 128 * 2**20
#: Rows kept in the fixture.
KEEP_M = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}
KEEP_NK = {1024, 2048, 4096, 5120, 8192, 12288, 16384}


def read_rows(folder: str, card: str, version: str) -> list[tuple[str, int, int, int, float]]:
    """(dtype, M, N, K, seconds) of one card's TensorRT-LLM GEMM table: layer widths, and no row
    whose weight the L2 cache may hold."""
    rows = []
    for r in read_table(folder, card, "gemm", "trtllm", version, "gemm_perf.parquet"):
        n, k = int(r["n"]), int(r["k"])
        streamed = int(r["m"]) >= MIN_ROWS or 2 * n * k >= MIN_WEIGHT_BYTES
        wide = MIN_NK <= n <= MAX_NK and MIN_NK <= k <= MAX_NK
        if r["gemm_dtype"] in DTYPES and wide and streamed:
            rows.append((str(r["gemm_dtype"]), int(r["m"]), n, k, float(r["latency"]) * 1e-3))
    return rows


def _arrays(rows: list[tuple[str, int, int, int, float]]) -> tuple[Any, ...]:
    return tuple(np.array([r[i] for r in rows], dtype=float) for i in (1, 2, 3, 4))


def _report(what: str, label: str, m: Any, rel: Any) -> None:
    errors = np.sort(np.abs(rel))
    bias = "  ".join(
        f"{name}: {np.median(rel[(m >= lo) & (m <= hi)]):+.1%}" for name, lo, hi in BUCKETS
    )
    print(
        f"# {what} {label}: median |error| {errors[len(errors) // 2]:.1%}, "
        f"p90 {errors[int(len(errors) * 0.9)]:.1%}; median error by rows {bias}"
    )


def _fit_card(gpu: Any, rows: list[tuple[str, int, int, int, float]]) -> None:
    """Fit one card's bf16 rows; print the hold-out check, the fit and its ``[[gemm]]`` row."""
    from suanli.estimate.kernels import gemm_seconds

    peak, bw = gpu.peak_flops("bf16") or 0.0, gpu.memory_bandwidth_bytes_per_s

    def errors(model: Any, m: Any, n: Any, k: Any, s: Any) -> Any:
        t = gemm_seconds(m, n, k, 2, peak, bw, model, maximum=np.maximum, ceil=np.ceil)
        return t / s - 1

    pairs = sorted({(r[2], r[3]) for r in rows})
    half = set(pairs[::2])
    ce, me, launch, _ = fit(*_arrays([r for r in rows if (r[2], r[3]) in half]), peak, bw, BLEND)
    m, n, k, s = _arrays([r for r in rows if (r[2], r[3]) not in half])
    model = fitted_model(ce, me, launch, BLEND)
    label = "hold-out (fitted on the other half of the (N, K) pairs)"
    _report(gpu.id, label, m, errors(model, m, n, k, s))
    m, n, k, s = _arrays(rows)
    ce, me, launch, _ = fit(m, n, k, s, peak, bw, BLEND)
    model = fitted_model(ce, me, launch, BLEND)
    rel = errors(model, m, n, k, s)
    _report(gpu.id, "all rows", m, rel)
    ranked = np.sort(np.abs(rel))
    print(
        f'[[gemm]]\ngpu_id = "{gpu.id}"\nprecision = "bf16"\nother_precisions = false\n'
        f"compute_efficiency = {ce:.2f}\nmemory_efficiency = {me:.2f}\nlaunch_s = {launch:.0e}\n"
        f"tile = 128\nblend = {BLEND}\ngemms = {len(rows)}\n"
        f"median_error = {ranked[len(ranked) // 2]:.3f}\n"
        f"p90_error = {ranked[int(len(ranked) * 0.9)]:.3f}\n"
    )


def main(folder: str) -> int:
    from suanli.catalog import find_gpu, load_catalog

    catalog = load_catalog()
    fixture: list[tuple[Any, ...]] = []
    for card, (version, fitted) in CARDS.items():
        gpu_id = CATALOG_IDS[card]
        rows = read_rows(folder, card, version)
        fixture += [
            (gpu_id, version, *r)
            for r in rows
            if r[1] in KEEP_M and r[2] in KEEP_NK and r[3] in KEEP_NK
        ]
        if fitted:
            _fit_card(find_gpu(gpu_id, catalog), [r for r in rows if r[0] == "bfloat16"])
    header = ["gpu_id", "trtllm", "dtype", "m", "n", "k", "seconds"]
    named = [(g, v, DTYPES[d], m, n, k, s) for g, v, d, m, n, k, s in fixture]
    write_fixture("kernel-gemm-times-aic.csv", header, named)
    return 0


if __name__ == "__main__":
    run(main, "derive_aic_gemm_profiles.py")
