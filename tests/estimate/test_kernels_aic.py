"""The GEMM kernel model against NVIDIA's aiconfigurator GEMM tables (a fixture subset of
ai-dynamo/aiconfigurator's TensorRT-LLM Linear timings; scripts/derive_aic_gemm_profiles.py).

The A100 and H100 models were fitted on Vidur's profiles, so these tables are out of sample for
them; the H200, L40S and B200 models were fitted on these tables (bf16)."""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict

import pytest

from suanli.catalog import find_gpu, load_catalog
from suanli.catalog.kernels import reference_card
from suanli.catalog.network import ceiling_for
from suanli.estimate.kernel_fits import kernel_model
from suanli.estimate.kernels import gemm_seconds

from ..scripts import load_script

ak = load_script("benchmarks/accuracy_kernels.py")

FIXTURE = ak.AIC_FIXTURE
CATALOG = load_catalog()
#: Ranges of GEMM rows (M) whose median error is checked.
BANDS = ((1, 16), (17, 256), (257, 2048), (2049, 1 << 30))


def _rows() -> dict[tuple[str, str], list[tuple[int, int, int, float]]]:
    out: dict[tuple[str, str], list[tuple[int, int, int, float]]] = defaultdict(list)
    with FIXTURE.open(newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["gpu_id"], r["dtype"])
            out[key].append((int(r["m"]), int(r["n"]), int(r["k"]), float(r["seconds"])))
    return out


ROWS = _rows()


def _errors(gpu_id: str, dtype: str) -> list[tuple[int, float]]:
    """(M, measured / model - 1): positive means the model is faster (benchmarks/accuracy_kernels.py
    adds the fp8 rows' activation quantization)."""
    return ak.aic_errors(gpu_id, dtype)


def test_the_fixture_covers_five_cards_and_both_precisions() -> None:
    assert {g for g, _ in ROWS} == {
        "a100-sxm-80gb",
        "h100-sxm-80gb",
        "h200-sxm-141gb",
        "l40s-48gb",
        "b200-sxm-180gb",
    }
    assert ("h100-sxm-80gb", "fp8") in ROWS
    assert all(len(rows) > 300 for rows in ROWS.values())


@pytest.mark.parametrize("gpu_id", ["h200-sxm-141gb", "l40s-48gb", "b200-sxm-180gb"])
def test_cards_fitted_on_the_tables_match_them(gpu_id: str) -> None:
    assert (
        "fitted on this card"
        in kernel_model(
            find_gpu(gpu_id, CATALOG), ceiling_for(find_gpu(gpu_id, CATALOG), "bf16")
        ).source
    )
    errors = sorted(abs(e) for _, e in _errors(gpu_id, "bf16"))
    assert statistics.median(errors) < 0.10
    assert errors[int(0.9 * len(errors))] < 0.30


@pytest.mark.parametrize("gpu_id", ["h200-sxm-141gb", "l40s-48gb", "b200-sxm-180gb"])
def test_a_table_fit_stands_for_sixteen_bit_gemms_only(gpu_id: str) -> None:
    card = find_gpu(gpu_id, CATALOG)
    assert reference_card(card, "bf16") == (gpu_id, True)
    assert reference_card(card, "fp16") == (gpu_id, True)
    generation = reference_card(card, "fp8")
    assert generation[0] in ("h100-sxm-80gb", "a40-48gb")
    fp8 = kernel_model(card, ceiling_for(card, "fp8"), precision="fp8")
    assert "fitted on this card" not in fp8.source
    # Vidur's cards keep one fit for every precision.
    h100 = find_gpu("h100-sxm-80gb", CATALOG)
    assert reference_card(h100, "fp8") == ("h100-sxm-80gb", True)


@pytest.mark.parametrize(
    ("gpu_id", "dtype", "median_limit", "band_limit"),
    [
        ("a100-sxm-80gb", "bf16", 0.10, 0.10),
        ("h100-sxm-80gb", "bf16", 0.10, 0.15),
        ("h100-sxm-80gb", "fp8", 0.10, 0.10),
        ("h200-sxm-141gb", "fp8", 0.15, 0.20),
        ("l40s-48gb", "fp8", 0.15, 0.20),
        # TensorRT-LLM's per-tensor fp8 Linear on the B200 runs 8-33% slower than the B200's
        # measured fp8 ceiling (a torch._scaled_mm shape search) predicts: left as is, documented
        # in docs/accuracy-kernels.md.
        ("b200-sxm-180gb", "fp8", 0.25, 0.40),
    ],
)
def test_out_of_sample_gemms(
    gpu_id: str, dtype: str, median_limit: float, band_limit: float
) -> None:
    # Never fitted on these rows: the A100 and H100 models come from Vidur's fp16 profiles, the fp8
    # models from the bf16 fit scaled by the measured fp8 ceiling.
    errors = _errors(gpu_id, dtype)
    assert statistics.median(abs(e) for _, e in errors) < median_limit
    for lo, hi in BANDS:
        band = [e for m, e in errors if lo <= m <= hi]
        bias = math.exp(statistics.median(math.log1p(e) for e in band)) - 1
        assert abs(bias) < band_limit, (lo, hi, bias)


def test_the_l40s_fit_mends_the_a40_shape_losses_on_large_gemms() -> None:
    # Before its own fit the L40S took the A40's shape losses, 15-17% too fast above 256 rows
    # (a 350 W AD102 holds lower clocks on large GEMMs than the square-matmul ceiling suggests).
    l40s = find_gpu("l40s-48gb", CATALOG)
    ceiling = ceiling_for(l40s, "bf16")
    a40 = find_gpu("a40-48gb", CATALOG)
    borrowed = kernel_model(a40, ceiling_for(a40, "fp16"))
    scale = ceiling.matmul_fraction / ceiling_for(a40, "fp16").matmul_fraction
    peak, bw = l40s.peak_flops("bf16") or 0.0, l40s.memory_bandwidth_bytes_per_s
    own = kernel_model(l40s, ceiling)
    big = [(m, n, k, s) for m, n, k, s in ROWS[("l40s-48gb", "bf16")] if m > 2048]
    old = statistics.median(
        2
        * m
        * n
        * k
        / (peak * min(borrowed.compute_efficiency * scale, ceiling.matmul_fraction))
        / s
        - 1
        for m, n, k, s in big
    )
    new = statistics.median(gemm_seconds(m, n, k, 2, peak, bw, own) / s - 1 for m, n, k, s in big)
    assert old < -0.10
    assert abs(new) < 0.06
