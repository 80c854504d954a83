"""Copy NVIDIA aiconfigurator's custom all-reduce timings into a test fixture (developer tool).

ai-dynamo/aiconfigurator (Apache-2.0) ships, per card, the serving engines' own all-reduce
kernels timed by its ``collector/network/collect_all_reduce.py``: TensorRT-LLM's custom
all-reduce, vLLM's and SGLang's (the one-shot / two-shot kernels that read the peers' buffers
over NVLink, not NCCL), each captured in a CUDA graph and replayed, as a serving engine runs its
decode steps. ``message_size`` counts bf16 elements (2 bytes each). This script keeps the CUDA-graph
rows of 2, 4 and 8 GPUs up to 1 MiB (the range the one-shot kernels serve; the 8-GPU 1 MiB row
already switches algorithm) of the A100 SXM (TensorRT-LLM 1.0.0, vLLM 0.14.0, SGLang 0.5.10)
and the H100 SXM (TensorRT-LLM 1.3.0rc20, vLLM 0.24.0, SGLang 0.5.14), and writes
``tests/fixtures/oneshot-allreduce-aiconfigurator.csv`` (card, engine, version, GPUs, bytes,
microseconds): the A100's TensorRT-LLM rows fit the ``oneshot_*`` fields of the ``nvlink3``
link (``docs/research/derive_collective_fits.py fit_oneshot``), the rest validate. Nothing in
the package or the tests reads the checkout. Usage (``pip install pyarrow`` first):
``python scripts/extract_aic_oneshot.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from aiconfigurator import CATALOG_IDS, read_table, run, write_fixture  # noqa: E402

#: aiconfigurator card folder -> (engine folder, version, the rows' kernel_source of CUDA-graph
#: replays) of each table kept.
TABLES = {
    "a100_sxm": (
        ("trtllm", "1.0.0", "TRTLLM"),
        ("vllm", "0.14.0", "vLLM_custom_graph"),
        ("sglang", "0.5.10", "SGLang_CustomAllReduce_graph"),
    ),
    "h100_sxm": (
        ("trtllm", "1.3.0rc20", "TRTLLM"),
        ("vllm", "0.24.0", "vLLM_custom_graph"),
        ("sglang", "0.5.14", "SGLang_CustomAllReduce_graph"),
    ),
}
#: Largest message kept, bytes.
MAX_BYTES = 1 << 20


def main(folder: str) -> int:
    rows = []
    for card, tables in TABLES.items():
        gpu_id = CATALOG_IDS[card]
        for engine, version, source in tables:
            path = ("comm", engine, version, "custom_allreduce_perf.parquet")
            for r in read_table(folder, card, *path):
                if r["kernel_source"] != source or r["num_gpus"] not in (2, 4, 8):
                    continue
                nbytes = 2 * int(r["message_size"])
                if nbytes > MAX_BYTES:
                    continue
                # aiconfigurator's latency is in milliseconds.
                rows.append((gpu_id, engine, version, r["num_gpus"], nbytes, r["latency"] * 1e3))
    header = ["gpu_id", "engine", "version", "gpus", "bytes", "latency_us"]
    write_fixture("oneshot-allreduce-aiconfigurator.csv", header, rows, digits=4)
    return 0


if __name__ == "__main__":
    run(main, "extract_aic_oneshot.py")
