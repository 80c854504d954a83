"""The serving simulator against published serving benchmarks (tests/fixtures/serving-
benchmarks.csv; docs/capacity.md, "Against published benchmarks")."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from functools import partial
from pathlib import Path

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.serving import (
    EngineConfig,
    Lengths,
    ReplicaCost,
    make_requests,
    replica_cost,
    simulate,
)
from suanli.models.resolve import load_model

FIXTURES = Path(__file__).parent.parent / "fixtures"
GPUS = bundled_gpus()

BENCHMARKS = list(csv.DictReader((FIXTURES / "serving-benchmarks.csv").read_text().splitlines()))

#: Rows outside 25%, and why (docs/capacity.md, "Against published benchmarks"). None since the
#: GEMM kernel model (suanli.estimate.kernels): the one miss before, TensorRT-LLM v0.6.1 on H100
#: at static batch 768 of Llama-2-7B (+29.9%), came from GEMMs and KV reads at the best-shape
#: ceilings; at the kernel model's efficiencies it is +14%.
EXPECTED_MISSES: set[str] = set()


def _trtllm_bench_settings(cost: ReplicaCost, isl: int, osl: int) -> tuple[int, int]:
    """trtllm-bench's engine settings (tensorrt_llm/bench/build/tuning.py, finetune_setting):
    max batch from the requests the KV cache holds at ISL + OSL (capped at 4096, rounded up),
    max tokens = batch x (1 + ISL/OSL) (capped at 32768, rounded up)."""
    raw_bs = min(cost.kv_blocks * cost.block_size / (isl + osl), 4096)
    raw_tok = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_tok < 4096:
        tok = max(2048, 256 * math.ceil(raw_tok / 256))
    elif raw_tok < 8192:
        tok = 512 * math.ceil(raw_tok / 512)
    else:
        tok = 1024 * math.ceil(raw_tok / 1024)
    return bs, tok


def simulate_benchmark(row: dict[str, str]) -> float:
    """Output tokens per second (per GPU where the source reports per GPU) for one row."""
    spec = load_model(row["model"]).spec
    gpu = find_gpu(row["gpu"], GPUS)
    fmt, kv, tp = row["weight_format"], row["kv_dtype"], int(row["tp"])
    isl, osl, n = int(row["isl"]), int(row["osl"]), int(row["num_requests"])
    device = device_for(gpu, "fp8" if fmt == "fp8" else "bf16")
    ref = isl + osl // 2
    util = float(row["gpu_memory_utilization"])
    cost_with = partial(
        replica_cost,
        spec,
        device,
        tp=tp,
        weight_format=fmt,
        kv_dtype=kv,
        memory_bytes=gpu.memory_bytes,
        reference_context=ref,
    )
    if row["mode"] == "static":
        batch = int(row["batch"])
        cfg = EngineConfig(
            policy="static", max_batch=batch, batch_timeout_s=0, gpu_memory_utilization=util
        )
    else:
        probe = EngineConfig(kv_policy="reserve", gpu_memory_utilization=util)
        batch, tokens = _trtllm_bench_settings(cost_with(config=probe), isl, osl)
        cfg = replace(probe, policy="continuous", max_batch=batch, max_batched_tokens=tokens)
    cost = cost_with(config=cfg)
    reqs = make_requests(
        rate=math.inf, prompt=Lengths(mean=isl), output=Lengths(mean=osl), requests=n
    )
    result = simulate(cost, reqs, cfg)
    return result.tokens_per_s / (tp if row["per_gpu"] == "yes" else 1)


def _key(row: dict[str, str]) -> str:
    batch = f" b{row['batch']}" if row["batch"] else ""
    return f"{row['engine']} {row['model']} {row['gpu']} {row['isl']}/{row['osl']}{batch}"


def test_published_serving_benchmarks() -> None:
    """Against TensorRT-LLM's published throughput (tests/fixtures/serving-benchmarks.csv):
    most rows within 25%; the misses are the ones named in EXPECTED_MISSES."""
    within, misses = 0, set()
    print()
    for row in BENCHMARKS:
        predicted = simulate_benchmark(row)
        published = float(row["value"])
        error = predicted / published - 1
        ok = abs(error) <= 0.25
        within += ok
        if not ok:
            misses.add(_key(row))
        print(
            f"  {_key(row):55s} published {published:9,.0f}  simulated {predicted:9,.0f}  "
            f"{error:+6.1%}"
        )
    assert len(BENCHMARKS) >= 6
    assert within >= 0.75 * len(BENCHMARKS)
    assert misses == EXPECTED_MISSES
