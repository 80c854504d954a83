"""An fp8 KV cache's conversion back to 16 bits in the serving engines' decode attention
(catalog/data/kv_dequant.toml; docs/speed.md, "An fp8 KV cache is not half the time"):
measured kernel by kernel, out of sample on a second head layout, and what the answers charge."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.frameworks import get_framework
from suanli.catalog.kv_dequant import fp8_kv_rate, kv_dequant_rates
from suanli.estimate import vector
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf, kv_dequant_seconds
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "decode-attention-fp8kv-aiconfigurator.csv"
)


def _held_out_errors(cards: tuple[str, ...], engines: tuple[str, ...]) -> tuple[list[float], ...]:
    """|error| of the fp8 call's time on the 8/1-head pairs (not used for the rates) with a
    cache of at least 64 MB, on ``cards`` and ``engines``: charged as half the bf16 call plus
    the conversion (now), and as half the bf16 call alone (the bytes only, before)."""
    now, before = [], []
    with FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            if (rec["q_heads"], rec["kv_heads"]) != ("8", "1"):
                continue
            if rec["gpu_id"] not in cards or rec["engine"] not in engines:
                continue
            elements = 2 * int(rec["batch"]) * int(rec["context"]) * int(rec["head_dim"])
            if elements * 2 < 64e6:
                continue
            measured = fp8_kv_rate(rec["gpu_id"], rec["engine"])
            assert measured is not None, rec
            bf16, fp8 = float(rec["seconds_bf16"]), float(rec["seconds_fp8"])
            model = bf16 / 2 + elements / measured.elements_per_s
            now.append(abs(model / fp8 - 1))
            before.append(abs(bf16 / 2 / fp8 - 1))
    return now, before


HOPPER = ("h100-sxm-80gb", "h200-sxm-141gb")


def test_the_conversion_explains_a_layout_it_was_not_read_from_on_hopper() -> None:
    """vLLM's and SGLang's FlashAttention-3 kernels on Hopper: the rates read from the 32/8-head
    layout predict the 8/1-head layout's fp8 calls far better than the bytes alone."""
    now, before = _held_out_errors(HOPPER, ("vllm", "sglang"))
    assert len(now) >= 20
    assert statistics.median(now) < 0.5 * statistics.median(before)
    assert statistics.median(now) < 0.15


def test_elsewhere_the_other_layout_runs_other_kernels() -> None:
    """A known limit, kept visible: on the B200, the L40S and in TensorRT-LLM the 8/1-head
    layout's fp8 calls take 0.9-1.4 of the bf16 call's time (another kernel path), so the
    32/8-head rates under-charge them; a change that fixes this should update this test."""
    cards = ("b200-sxm-180gb", "l40s-48gb")
    now, _ = _held_out_errors(cards, ("vllm", "sglang", "tensorrt-llm"))
    assert len(now) >= 20
    assert statistics.median(now) > 0.15


def test_every_rate_names_a_catalog_card_and_a_serving_engine() -> None:
    cards = bundled_gpus()
    for (gpu_id, engine), row in kv_dequant_rates().items():
        assert find_gpu(gpu_id, cards).id == gpu_id
        assert get_framework(engine).id == engine and get_framework(engine).kind == "serve"
        assert row.elements_per_s > 0


def test_only_a_measured_fp8_cache_is_charged() -> None:
    kv = 1e9
    fp8 = InferWork(kv_dtype="fp8", engine="vllm")
    assert kv_dequant_seconds("h100-sxm-80gb", fp8, kv) == pytest.approx(kv / 5.9e12, rel=0.01)
    assert kv_dequant_seconds("h100-sxm-80gb", InferWork(engine="vllm"), kv) == 0  # bf16
    assert kv_dequant_seconds("h100-sxm-80gb", InferWork(kv_dtype="fp8"), kv) == 0  # no engine
    assert kv_dequant_seconds("a100-sxm-80gb", fp8, kv) == 0  # nobody measured it
    l40s = InferWork(kv_dtype="fp8", engine="tensorrt-llm")
    assert math.isinf(kv_dequant_rates()[("l40s-48gb", "tensorrt-llm")].elements_per_s)
    assert kv_dequant_seconds("l40s-48gb", l40s, kv) == 0


def _tpot(kv_dtype: str, framework: str) -> float:
    work = WorkRequest(task="infer", framework=framework, batch=64, tp=4, kv_dtype=kv_dtype)
    answer = perf(
        PerfRequest("llama-3.1-70b", work, gpu="h100", prompt=8192, output=256, ignore_fit=True)
    )
    assert isinstance(answer, InferPerfAnswer)
    return answer.tpot_s


def test_an_fp8_cache_saves_less_than_half_its_attention_in_vllm() -> None:
    """vLLM on an H100 at a long context: fp8 still beats bf16 (fewer bytes), but by less than
    a bytes-only reading says; TensorRT-LLM's kernels convert at no measurable cost."""
    vllm_bf16, vllm_fp8 = _tpot("bf16", "vllm"), _tpot("fp8", "vllm")
    trt_bf16, trt_fp8 = _tpot("bf16", "tensorrt-llm"), _tpot("fp8", "tensorrt-llm")
    assert vllm_fp8 < vllm_bf16
    assert vllm_bf16 - vllm_fp8 < trt_bf16 - trt_fp8


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    batch, tp = [1, 16, 128], [1, 2, 4]
    result = vector.infer_speed(
        spec, "bf16", 1, batch, tp, 8192, 512, device, "fused", "fused", "engine",
        options=InferWork(engine="vllm"),
    )  # fmt: skip
    for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
        work = InferWork(
            batch=bval, tp=tval, context=8192 + 512, kv_dtype="fp8", kernels="fused",
            engine="vllm",
        )  # fmt: skip
        scalar = inference_perf(spec, work, device, 8192, 512)
        assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
        assert scalar.breakdown_s["decode_kv_dequant"] > 0
    assert np.all(np.isfinite(result["tpot_s"]))
