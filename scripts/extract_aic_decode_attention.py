"""Copy NVIDIA aiconfigurator's vLLM attention timings into test fixtures (developer tool).

ai-dynamo/aiconfigurator (Apache-2.0) ships per-card timings of vLLM's attention backends
(``collector/vllm/collect_attn.py``: one backend forward of one decode token per sequence, with
the new token's KV-cache write, timed under CUDA graphs; ``generation_attention_perf.parquet``,
latency in milliseconds, ``step`` = the tokens already cached). This script keeps the bf16-KV,
full-attention rows of two Llama head layouts (32 query / 8 KV heads of 128: Llama-3-8B, or 70B
on 2 GPUs; 8 / 1: Llama-3-70B on 8 GPUs) at a grid of batches and contexts, and writes
``tests/fixtures/decode-attention-aiconfigurator.csv``; the prefill rows of the same layouts
(``context_attention_perf.parquet``: one causal forward over ``isl`` new tokens per sequence)
at batch 1, 8 and 64 and 128-8,192 tokens go to
``tests/fixtures/prefill-attention-aiconfigurator.csv``. Both are read by
``benchmarks/accuracy_kernels.py``. Nothing in the package or the tests reads the checkout.
Usage (``pip install pyarrow`` first):
``python scripts/extract_aic_decode_attention.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from aiconfigurator import CATALOG_IDS, read_table, run, write_fixture  # noqa: E402

#: aiconfigurator card folder -> vLLM collection.
CARDS = {
    "a100_sxm": "0.14.0",
    "h100_sxm": "0.24.0",
    "h200_sxm": "0.24.0",
    "b200_sxm": "0.24.0",
    "l40s": "0.24.0",
}
LAYOUTS = {(32, 8, 128), (8, 1, 128)}
BATCHES = {1, 4, 16, 64, 256}
CONTEXTS = {128, 512, 2048, 8192, 32768}
PREFILL_BATCHES = {1, 8, 64}
PREFILL_LENGTHS = {128, 512, 2048, 8192}


def _rows(folder: str, table: str, tokens: Any, keep: Any) -> list[tuple[Any, ...]]:
    """(card, vLLM, kernel, batch, tokens, q heads, kv heads, head dim, seconds) of the bf16-KV,
    full-attention rows of ``table`` in the kept layouts for which ``keep(row, tokens)`` holds;
    ``tokens(row)`` is the row's context (decode) or prompt length (prefill)."""
    out = []
    for card, version in CARDS.items():
        gpu_id = CATALOG_IDS[card]
        for r in read_table(folder, card, "attention", "vllm", version, table):
            layout = (r["num_heads"], r["num_key_value_heads"], r["head_dim"])
            n = tokens(r)
            if (
                layout in LAYOUTS
                and r["kv_cache_dtype"] == "bfloat16"
                and not r.get("window_size")
                and keep(r, n)
            ):
                seconds = float(r["latency"]) * 1e-3
                out.append(
                    (gpu_id, version, r["kernel_source"], r["batch_size"], n, *layout, seconds)
                )
    return out


def _write(name: str, tokens_column: str, rows: list[tuple[Any, ...]]) -> None:
    header = ["gpu_id", "vllm", "kernel", "batch", tokens_column, "q_heads", "kv_heads"]
    write_fixture(name, [*header, "head_dim", "seconds"], rows)


def main(folder: str) -> int:
    decode = _rows(
        folder,
        "generation_attention_perf.parquet",
        lambda r: int(r["step"]) + 1,  # the cached tokens and the new one
        lambda r, n: r["batch_size"] in BATCHES and n in CONTEXTS,
    )
    _write("decode-attention-aiconfigurator.csv", "context", decode)
    prefill = _rows(
        folder,
        "context_attention_perf.parquet",
        lambda r: int(r["isl"]),
        lambda r, n: (
            "decode" not in r["kernel_source"]
            and r["batch_size"] in PREFILL_BATCHES
            and n in PREFILL_LENGTHS
        ),
    )
    _write("prefill-attention-aiconfigurator.csv", "tokens", prefill)
    return 0


if __name__ == "__main__":
    run(main, "extract_aic_decode_attention.py")
