"""Apple GPUs publish one (fp32) rate: 16-bit work runs at it instead of being refused."""

from __future__ import annotations

from typing import Any

import pytest

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import compute_precision

#: Apple GPUs with a published rate (the M4 Max has none in the catalog yet).
APPLE = [g for g in bundled_gpus() if g.vendor == "apple" and g.peak_flops("fp32")]


@pytest.mark.parametrize("gpu", APPLE, ids=lambda g: g.id)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_sixteen_bit_runs_at_the_published_rate(gpu, dtype: str) -> None:  # type: ignore[no-untyped-def]
    precision = compute_precision(gpu, dtype)
    rate = gpu.peak_flops(precision)
    assert rate, gpu.id
    if not gpu.peak_flops(dtype):
        # No 16-bit figure in the catalog: the one published rate, never a faster one.
        assert precision == "fp32" and rate == gpu.peak_flops("fp32")


def test_an_apple_inference_estimate_is_memory_bound_and_below_the_bandwidth_floor() -> None:
    """Decode on an M2 Max reads every weight once a token: TPOT at least weights / bandwidth."""
    answer = perf(
        PerfRequest(
            model="llama-3.2-3b",
            work=WorkRequest(task="infer", batch=1, quant="fp16"),
            gpu="m2-max-96gb",
        )
    )
    assert isinstance(answer, InferPerfAnswer)
    gpu = find_gpu("m2-max-96gb", bundled_gpus())
    weight_bytes = 3.2e9 * 2
    assert answer.tpot_s >= weight_bytes / gpu.memory_bandwidth_bytes_per_s


def test_a_non_apple_gpu_without_a_sixteen_bit_rate_is_still_refused() -> None:
    stripped = _without_sixteen_bit(find_gpu("h100-sxm-80gb", bundled_gpus()))
    with pytest.raises(ValueError, match="no tensor rate"):
        compute_precision(stripped, "bf16")


def _without_sixteen_bit(gpu: Any) -> Any:
    class Stripped:
        vendor = gpu.vendor
        form_factor = gpu.form_factor
        id = gpu.id

        def peak_flops(self, dtype: str) -> float | None:
            return gpu.peak_flops(dtype) if dtype == "fp32" else None

    return Stripped()
