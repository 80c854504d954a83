"""Copy NVIDIA aiconfigurator's intra-node NCCL timings into a test fixture (developer tool).

ai-dynamo/aiconfigurator (Apache-2.0) ships per-card NCCL collective timings collected with its
``collector/network/collect_nccl.py``: nccl-tests (``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf``) in one process with one thread per GPU (``-t <gpus>``), 40 warm-up and
60-100 timed iterations, out-of-place time, NCCL choosing algorithm and protocol. Its
``message_size`` column counts elements (the collector divides the bytes by the element size),
so a ``half`` row moves ``2 x message_size`` bytes. This script keeps the ``half`` rows of 2, 4
and 8 GPUs and writes ``tests/fixtures/nccl-aiconfigurator.csv`` (card, NCCL version,
collective, GPUs, bytes, seconds), read by ``benchmarks/accuracy_kernels.py``. Nothing in the
package or the tests reads the checkout. Usage (``pip install pyarrow`` first):
``python scripts/extract_aic_nccl.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path("aic-core/src/aiconfigurator_core/systems/data")
#: aiconfigurator card folder -> (catalog id, NCCL version of its newest table).
CARDS = {
    "a100_sxm": ("a100-sxm-80gb", "2.27.3"),
    "h100_sxm": ("h100-sxm-80gb", "2.29.2"),
    "h200_sxm": ("h200-sxm-141gb", "2.29.2"),
    "b200_sxm": ("b200-sxm-180gb", "2.29.2"),
    "l40s": ("l40s-48gb", "2.27.3"),
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def main(folder: str) -> int:
    import pyarrow.parquet as pq

    rows = []
    for card, (gpu_id, version) in CARDS.items():
        path = Path(folder) / DATA / card / "comm" / "nccl" / version / "nccl_perf.parquet"
        for r in pq.read_table(path).to_pylist():
            if r["nccl_dtype"] != "half" or r["op_name"] not in COLLECTIVES:
                continue
            if r["num_gpus"] not in (2, 4, 8):
                continue
            seconds = float(r["latency"]) * 1e-3
            rows.append(
                (gpu_id, version, r["op_name"], r["num_gpus"], 2 * r["message_size"], seconds)
            )
    out = ROOT / "tests" / "fixtures" / "nccl-aiconfigurator.csv"
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["gpu_id", "nccl", "collective", "gpus", "bytes", "seconds"])
        writer.writerows((*r[:5], f"{r[5]:.6g}") for r in sorted(rows))
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python scripts/extract_aic_nccl.py /path/to/aiconfigurator")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
