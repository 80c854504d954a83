"""Weight-only int8 decode GEMMs stream their weights at the rate a real kernel does: TensorRT-LLM's
weight-only GEMM on an A100 (aiconfigurator's kernel times, tests/fixtures), not at bf16's."""

from __future__ import annotations

import csv
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

import suanli.catalog.formats as formats
from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.formats import get_format
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.kernels import gemm_seconds
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kernel-gemm-weight-only-aic.csv"
WEIGHT_BYTES = {"bf16": 2.0, "int8_wo": 1.0, "int4_wo": 0.5}


def _errors(dtype: str, efficiency: float, decode_only: bool = True) -> list[float]:
    device = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
    errors = []
    with FIXTURE.open() as fh:
        for row in csv.DictReader(fh):
            m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
            if row["dtype"] != dtype or (decode_only and m > 16):
                continue
            model = gemm_seconds(
                m,
                n,
                k,
                2.0,
                device.peak_flops,
                device.memory_bytes_per_s,
                device.gemm_model,
                weight_bytes=WEIGHT_BYTES[dtype] / efficiency,
            )
            errors.append(model / float(row["seconds"]) - 1)
    return errors


def test_the_int8_format_records_a_measured_dequant_efficiency() -> None:
    int8 = get_format("int8")
    assert 0.9 <= int8.dequant_efficiency < 1 and "aiconfigurator" in int8.dequant_source
    # 4-bit formats run on Marlin in vLLM (close to ideal): no factor without a measurement.
    assert get_format("awq-4bit-g128").dequant_efficiency == 1.0
    assert get_format("bf16").dequant_efficiency == 1.0


def test_int8_rows_err_as_the_bf16_rows_do() -> None:
    bf16 = statistics.median(_errors("bf16", 1.0))
    efficiency = get_format("int8").dequant_efficiency
    with_dequant = statistics.median(_errors("int8_wo", efficiency))
    without = statistics.median(_errors("int8_wo", 1.0))
    assert len(_errors("int8_wo", efficiency)) == 130
    assert abs(with_dequant - bf16) < 0.01
    # Streamed at bf16's rate the int8 kernels would come out faster than measured.
    assert without < bf16 - 0.02
    # And beyond decode batches (M 32-128, dequantizing in the main loop) within 10%.
    wide = _errors("int8_wo", efficiency, decode_only=False)
    assert abs(statistics.median(wide)) < 0.10


def test_decode_streams_int8_weights_at_the_measured_share(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_model("llama-2-7b").spec
    device = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
    work = InferWork(batch=1, weight_format="int8", context=1024)
    measured = inference_perf(spec, work, device, 512, 512).breakdown_s["decode_gemms"]
    ideal = replace(get_format("int8"), dequant_efficiency=1.0)
    real_get = formats.get_format
    monkeypatch.setattr(formats, "get_format", lambda f: ideal if f == "int8" else real_get(f))
    free = inference_perf(spec, work, device, 512, 512).breakdown_s["decode_gemms"]
    assert free < measured < free / get_format("int8").dequant_efficiency * 1.01


def test_the_serving_simulator_streams_the_same_bytes() -> None:
    from suanli.estimate.inference import streamed_weight_bytes, weight_bytes
    from suanli.estimate.serving.timing import replica_cost

    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
    cost = replica_cost(spec, device, weight_format="int8", memory_bytes=80e9)
    work = InferWork(weight_format="int8")
    assert cost.weight_bytes == pytest.approx(streamed_weight_bytes(spec, work))
    stored = weight_bytes(spec, work)
    # Only the quantized linear layers slow down; embeddings and the LM head stay 16-bit.
    assert stored < cost.weight_bytes < stored / get_format("int8").dequant_efficiency
    bf16 = InferWork(weight_format="bf16")
    assert streamed_weight_bytes(spec, bf16) == weight_bytes(spec, bf16)
