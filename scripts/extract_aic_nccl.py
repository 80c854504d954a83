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

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from aiconfigurator import CATALOG_IDS, read_table, run, write_fixture  # noqa: E402

#: aiconfigurator card folder -> NCCL version of its newest table.
CARDS = {
    "a100_sxm": "2.27.3",
    "h100_sxm": "2.29.2",
    "h200_sxm": "2.29.2",
    "b200_sxm": "2.29.2",
    "l40s": "2.27.3",
}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def main(folder: str) -> int:
    rows = []
    for card, version in CARDS.items():
        gpu_id = CATALOG_IDS[card]
        for r in read_table(folder, card, "comm", "nccl", version, "nccl_perf.parquet"):
            if r["nccl_dtype"] != "half" or r["op_name"] not in COLLECTIVES:
                continue
            if r["num_gpus"] not in (2, 4, 8):
                continue
            seconds = float(r["latency"]) * 1e-3
            rows.append(
                (gpu_id, version, r["op_name"], r["num_gpus"], 2 * r["message_size"], seconds)
            )
    header = ["gpu_id", "nccl", "collective", "gpus", "bytes", "seconds"]
    write_fixture("nccl-aiconfigurator.csv", header, rows)
    return 0


if __name__ == "__main__":
    run(main, "extract_aic_nccl.py")
