"""How fast weight-only quantized GEMMs stream their weights, against bf16's, from NVIDIA's
aiconfigurator tables (developer tool).

aiconfigurator (ai-dynamo/aiconfigurator, Apache-2.0) times TensorRT-LLM's weight-only GEMM
plugin (``WeightOnlyQuantMatmul``: 16-bit activations times int8 or int4 weights with a scale per
output channel, dequantized in the kernel) beside the bf16 GEMM of the same (M, N, K) on an A100
SXM (``a100_sxm/gemm/trtllm/1.0.0/gemm_perf.parquet``, latency in milliseconds). At decode batches
(M <= 16) every one of these GEMMs streams its weight; the ratio of the rates at which the
quantized and the bf16 kernels stream it (bytes / time) is what dequantizing costs a real kernel.
This script prints that ratio per M, writes ``tests/fixtures/kernel-gemm-weight-only-aic.csv``
(the rows of 1,024 <= N, K <= 16,384 with a bf16 weight of 128 MiB or more, beyond the A100's
40 MB L2, for M 1-128), and fits the one number ``quant.toml`` records per format,
``dequant_efficiency``: the share of the bf16 streaming rate at which suanli's A100 GEMM model must
stream the quantized weight (``weight_bytes / dequant_efficiency``) for its median error on the
quantized rows at M <= 16 to equal its median error on the bf16 rows of the same shapes (so the
bf16 model's own bias on this table is not put on the format). The raw ratios of the times are
lower (0.91 for int8) because each time also holds a launch and the activations, which the model
counts apart.

Nothing in the package or the tests reads the checkout. Usage (``pip install pyarrow`` first):
``python scripts/derive_weight_only_efficiency.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aiconfigurator import read_table, run, write_fixture

CARD, VERSION = "a100_sxm", "1.0.0"
#: aiconfigurator dtype -> (the fixture's name, bytes a weight takes).
DTYPES = {"bfloat16": ("bf16", 2.0), "int8_wo": ("int8_wo", 1.0), "int4_wo": ("int4_wo", 0.5)}
MIN_NK, MAX_NK = 1024, 16384
MIN_WEIGHT_BYTES = 128 * 2**20
DECODE_M = 16
FIXTURE_M = (1, 2, 4, 8, 16, 32, 64, 128)


def main(checkout: str) -> int:
    """Print the streaming-rate ratios and write the fixture."""
    times: dict[tuple[str, int, int, int], float] = {}
    for row in read_table(checkout, CARD, "gemm", "trtllm", VERSION, "gemm_perf.parquet"):
        dtype, m, n, k = row["gemm_dtype"], int(row["m"]), int(row["n"]), int(row["k"])
        if dtype not in DTYPES or not (MIN_NK <= n <= MAX_NK and MIN_NK <= k <= MAX_NK):
            continue
        if 2 * n * k < MIN_WEIGHT_BYTES:
            continue
        times[(dtype, m, n, k)] = float(row["latency"]) * 1e-3
    for dtype in ("int8_wo", "int4_wo"):
        weight = DTYPES[dtype][1]
        ratios: dict[int, list[float]] = {}
        for (kind, m, n, k), seconds in times.items():
            bf16 = times.get(("bfloat16", m, n, k))
            if kind == dtype and bf16:
                ratios.setdefault(m, []).append((weight / 2.0) * bf16 / seconds)
        for m in sorted(ratios):
            print(f"{dtype} M={m:4d}: {statistics.median(ratios[m]):.3f} ({len(ratios[m])} shapes)")
        decode = [r for m, rs in ratios.items() if m <= DECODE_M for r in rs]
        print(f"{dtype} M<={DECODE_M}: median {statistics.median(decode):.3f} over {len(decode)}")
    rows = [
        ("a100-sxm-80gb", VERSION, DTYPES[d][0], m, n, k, seconds)
        for (d, m, n, k), seconds in times.items()
        if m in FIXTURE_M
    ]
    write_fixture(
        "kernel-gemm-weight-only-aic.csv",
        ["gpu_id", "trtllm", "dtype", "m", "n", "k", "seconds"],
        rows,
    )
    decode = {key: t for key, t in times.items() if key[1] <= DECODE_M}
    bf16 = _median_error(decode, "bfloat16", 1.0)
    for dtype in ("int8_wo", "int4_wo"):
        efficiency = min(
            (abs(_median_error(decode, dtype, e / 1000) - bf16), e / 1000) for e in range(500, 1001)
        )[1]
        print(f"{dtype}: dequant_efficiency {efficiency:.2f} (bf16 rows' median error {bf16:+.1%})")
    return 0


def _median_error(times: dict[tuple[str, int, int, int], float], dtype: str, eff: float) -> float:
    """The A100 GEMM model's median relative error on ``dtype``'s rows, its weight streamed at
    ``eff`` of the bf16 rate."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from suanli.catalog import bundled_gpus, find_gpu
    from suanli.estimate.device import device_for
    from suanli.estimate.kernels import gemm_seconds

    device = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
    weight = DTYPES[dtype][1]
    errors = [
        gemm_seconds(
            m,
            n,
            k,
            2.0,
            device.peak_flops,
            device.memory_bytes_per_s,
            device.gemm_model,
            weight_bytes=weight / eff,
        )
        / seconds
        - 1
        for (kind, m, n, k), seconds in times.items()
        if kind == dtype
    ]
    return statistics.median(errors)


if __name__ == "__main__":
    run(main, "derive_weight_only_efficiency.py")
