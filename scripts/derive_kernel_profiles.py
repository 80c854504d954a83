"""Derive the GEMM calibration of the speed model from measured kernel times (developer tool).

Reads the per-operation GPU times that the Vidur project measured (microsoft/vidur commit 7d47513,
data/profiling/compute/{a100,h100,a40}/*/mlp.csv, MIT licence; copied into the steering
repository's shared/reference/kernel-profiles/), turns the four GEMMs of each decoder layer into
(M, N, K, seconds) rows, fits the few parameters of the kernel model
(:mod:`suanli.estimate.kernels`) per GPU and writes:

- ``tests/fixtures/kernel-gemm-times.csv``: a subset of the measured rows (the test set);
- the fitted parameters, printed as TOML rows for ``src/suanli/catalog/data/kernels.toml``.

Nothing in the package or the tests reads the shared folder; this script is run by hand:
``python scripts/derive_kernel_profiles.py /path/to/shared/reference/kernel-profiles``.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Catalog ids of the profiled cards (fp16 dense peak, bytes/s).
CARDS = {"a100": "a100-sxm-80gb", "h100": "h100-sxm-80gb", "a40": "a40-48gb"}
#: Token counts kept in the test fixture (the profiles step by 1-32 tokens up to 16k).
KEEP_M = {1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096}


def gemms(row: dict[str, str]) -> list[tuple[str, int, int, int, float]]:
    """(name, M, N, K, seconds) of the four GEMMs of one profiled layer, sharded over TP."""
    heads, kv = int(row["n_head"]), int(row["n_kv_head"])
    h, inter = int(row["n_embd"]), int(row["n_expanded_embd"])
    tp, m = int(row["num_tensor_parallel_workers"]), int(row["num_tokens"])
    d = h // heads
    gated = row["use_gated_mlp"] == "True"
    shapes = {
        "attn_pre_proj": ((heads + 2 * kv) * d // tp, h),
        "attn_post_proj": (h, heads * d // tp),
        "mlp_up_proj": ((2 if gated else 1) * inter // tp, h),
        "mlp_down_proj": (h, inter // tp),
    }
    out = []
    for op, (n, k) in shapes.items():
        seconds = float(row[f"time_stats.{op}.median"]) * 1e-3
        out.append((op, m, n, k, seconds))
    return out


def main(folder: str) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from suanli.catalog import find_gpu, load_catalog
    from suanli.estimate.kernels import GemmModel, gemm_seconds

    catalog = load_catalog()
    fixture = []
    for card, gpu_id in CARDS.items():
        gpu = find_gpu(gpu_id, catalog)
        peak = gpu.peak_flops("fp16") or 0.0
        bw = gpu.memory_bandwidth_bytes_per_s
        rows = []
        for path in sorted((Path(folder) / "compute" / card).glob("*/*/mlp.csv")):
            model = f"{path.parent.parent.name}/{path.parent.name}"
            with path.open(newline="") as fh:
                for row in csv.DictReader(fh):
                    for op, m, n, k, s in gemms(row):
                        rows.append((model, op, m, n, k, s))
                        if m in KEEP_M:
                            fixture.append((gpu_id, model, op, m, n, k, s))
        best = None
        grid = itertools.product(
            [x / 100 for x in range(55, 86)],  # compute efficiency on tile-padded shapes
            [x / 100 for x in range(55, 96, 2)],  # streaming efficiency of the operands
            [x * 1e-6 for x in (2, 3, 4, 5, 6, 7, 8, 10, 12)],  # launch and tail
        )
        for ce, me, launch in grid:
            model = GemmModel(ce, me, launch, 128, "fit")
            err = [
                abs(math.log(gemm_seconds(m, n, k, 2, peak, bw, model) / s))
                for _, _, m, n, k, s in rows
            ]
            score = sorted(err)[len(err) // 2]
            if best is None or score < best[0]:
                best = (score, ce, me, launch)
        assert best is not None
        score, ce, me, launch = best
        model = GemmModel(ce, me, launch, 128, "fit")
        errors = sorted(
            abs(gemm_seconds(m, n, k, 2, peak, bw, model) / s - 1) for _, _, m, n, k, s in rows
        )
        print(
            f'[[gemm]]\ngpu_id = "{gpu_id}"\ncompute_efficiency = {ce}\n'
            f"memory_efficiency = {me}\nlaunch_s = {launch:.0e}\ntile = 128\n"
            f"# {len(rows)} GEMMs: median |error| {errors[len(errors) // 2]:.1%}, "
            f"p90 {errors[int(len(errors) * 0.9)]:.1%}\n"
        )
    out = ROOT / "tests" / "fixtures" / "kernel-gemm-times.csv"
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["gpu_id", "model", "op", "m", "n", "k", "seconds"])
        writer.writerows(fixture)
    print(f"wrote {len(fixture)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/kernel-profiles"))
