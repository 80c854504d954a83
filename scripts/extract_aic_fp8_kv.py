"""Copy NVIDIA aiconfigurator's decode-attention timings with a bf16 and an fp8 KV cache into a
test fixture, and print each card's fp8-KV dequantization rate (developer tool).

ai-dynamo/aiconfigurator (Apache-2.0) times one attention-backend forward of one decode token
per sequence (with the new token's KV-cache write, under CUDA graphs) for each serving engine it
collects (``<card>/attention/<engine>/<version>/generation_attention_perf.parquet``), with the
KV cache in bf16 and in fp8. For the newest table of each engine that has both, this keeps the
pairs (same batch, context and head layout) of two Llama layouts (32 query / 8 KV heads of 128,
8 / 1) on a grid of batches and contexts and writes
``tests/fixtures/decode-attention-fp8kv-aiconfigurator.csv``.

An fp8 cache halves the bytes a decode step reads, but the kernel converts every element back
to 16 bits before its matrix products, which a bf16 cache does not do. On cards whose
bandwidth is high against their compute that conversion shows: on Hopper the fp8 call takes
0.57 to 0.92 of the bf16 call's time at large caches, not 0.5. Read as
``t_fp8 = t_bf16 / 2 + elements / rate``, each pair gives a conversion rate (elements per
second). The rate printed for a card is the median over its engines of the median over the pairs
whose bf16 cache is at least 64 MB (the launch and the query work no longer count). Those rates
go to ``catalog/data/decode_attention.toml`` (``[[fp8_kv]]``). The 8/1-head pairs are out of
sample for ``benchmarks/accuracy_kernels.py``: they are not used for the rate.
Usage (``pip install pyarrow`` first):
``python scripts/extract_aic_fp8_kv.py /path/to/aiconfigurator``.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from aiconfigurator import CATALOG_IDS, DATA, read_table, run, write_fixture  # noqa: E402

LAYOUTS = {(32, 8, 128), (8, 1, 128)}
#: The layout the rates come from; the other is held out.
FIT_LAYOUT = (32, 8, 128)
BATCHES = {1, 4, 16, 64, 256}
CONTEXTS = {128, 512, 2048, 8192, 32768}
#: Pairs whose bf16 KV cache is at least this many bytes set the rate.
LARGE_CACHE_BYTES = 64e6
#: aiconfigurator engine folder -> catalog framework id.
ENGINES = {"vllm": "vllm", "trtllm": "tensorrt-llm", "sglang": "sglang"}


def _version_key(version: str) -> tuple[Any, ...]:
    """Sort key of a release string such as 0.24.0, 1.3.0rc20 or 0.5.6.post2."""
    parts: list[Any] = []
    for piece in version.replace("rc", ".-1.").replace("post", "").split("."):
        parts.append(int(piece) if piece.lstrip("-").isdigit() else 0)
    return tuple(parts)


def _newest_table(folder: str, card: str, engine: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The newest version of ``engine`` on ``card`` whose decode table has fp8-KV rows."""
    root = Path(folder) / DATA / card / "attention" / engine
    if not root.is_dir():
        return None
    for version in sorted((p.name for p in root.iterdir()), key=_version_key, reverse=True):
        path = root / version / "generation_attention_perf.parquet"
        if not path.is_file():
            continue
        rows = read_table(folder, card, "attention", engine, version, path.name)
        if any(str(r["kv_cache_dtype"]) == "fp8" for r in rows):
            return version, rows
    return None


def _pairs(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, float]]:
    """(kernel, batch, context, q heads, kv heads, dim) -> {kv dtype: seconds} on the grid."""
    out: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    for r in rows:
        layout = (r["num_heads"], r["num_key_value_heads"], r["head_dim"])
        context = int(r["step"]) + 1  # the cached tokens and the new one
        dtype = str(r["kv_cache_dtype"])
        if (
            layout in LAYOUTS
            and dtype in ("bfloat16", "fp8")
            and not r.get("window_size")
            and r["batch_size"] in BATCHES
            and context in CONTEXTS
        ):
            key = (r["kernel_source"], r["batch_size"], context, *layout)
            out.setdefault(key, {}).setdefault(dtype, []).append(float(r["latency"]) * 1e-3)
    return {
        k: {d: statistics.median(v) for d, v in times.items()}
        for k, times in out.items()
        if len(times) == 2
    }


def rate(batch: int, context: int, kv_heads: int, dim: int, bf16_s: float, fp8_s: float) -> float:
    """Elements per second converted: the fp8 call's time beyond half the bf16 call's."""
    elements = 2 * batch * context * kv_heads * dim
    extra = fp8_s - bf16_s / 2
    return elements / extra if extra > 0 else float("inf")


def main(folder: str) -> int:
    fixture: list[tuple[Any, ...]] = []
    for card, gpu_id in CATALOG_IDS.items():
        per_engine = []
        for folder_name, engine in ENGINES.items():
            found = _newest_table(folder, card, folder_name)
            if found is None:
                continue
            version, rows = found
            fitted = []
            for (kernel, batch, context, q, kv, dim), t in sorted(_pairs(rows).items()):
                fixture.append(
                    (gpu_id, engine, version, kernel, batch, context, q, kv, dim,
                     f"{t['bfloat16']:.6g}", t["fp8"])
                )  # fmt: skip
                large = 2 * batch * context * kv * dim * 2 >= LARGE_CACHE_BYTES
                if (q, kv, dim) == FIT_LAYOUT and large:
                    fitted.append(rate(batch, context, kv, dim, t["bfloat16"], t["fp8"]))
            if fitted:
                per_engine.append(statistics.median(fitted))
                print(f"{gpu_id} {engine} {version}: {statistics.median(fitted):.3g} elements/s")
        if per_engine:
            median = statistics.median(per_engine)
            print(f"{gpu_id}: {median:.3g} elements/s over {len(per_engine)} engines")
    header = ["gpu_id", "engine", "version", "kernel", "batch", "context", "q_heads", "kv_heads"]
    write_fixture(
        "decode-attention-fp8kv-aiconfigurator.csv",
        [*header, "head_dim", "seconds_bf16", "seconds_fp8"],
        fixture,
    )
    return 0


if __name__ == "__main__":
    run(main, "extract_aic_fp8_kv.py")
