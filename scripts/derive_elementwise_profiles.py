"""Derive the bandwidth the serving engines' element-wise kernels reach (developer tool).

Reads the per-operation GPU times that the Vidur project measured (microsoft/vidur commit 7d47513,
data/profiling/compute/{a100,h100,a40}/*/mlp.csv, MIT licence; copied into the steering
repository's shared/reference/kernel-profiles/). Vidur times each op of a decoder layer as the
Sarathi-Serve engine (a vLLM fork) runs it, with the profiler's kernel times: the fused RMSNorm,
the rotary embedding applied in place to q and k, SiLU-and-multiply, and the residual add.

For every row of the gated (Llama-shaped) models it turns each op into (bytes moved, seconds) on
one GPU of the row's tensor-parallel group (bf16/fp16, ``b`` = 2 bytes an element):

- RMSNorm: read and write the hidden state, ``2·b·h`` a token (not split by TP);
- residual add: read two hidden states, write one, ``3·b·h``;
- rotary: read and write q and k in place, ``2·b·(n_q + n_kv)·d / tp``;
- SiLU-and-multiply: read gate and up, write their product, ``3·b·I / tp``.

Each op's efficiency is its bytes / (seconds x the card's peak bandwidth); the median over the
rows of at least ``MIN_TOKENS`` tokens (the bandwidth-bound regime; below it the kernel floor
and the L2 cache decide) is printed as the ``[gemm.elementwise]`` table of
``src/suanli/catalog/data/kernels.toml``, and a thinned subset of the rows goes to
``tests/fixtures/elementwise-op-times.csv`` (the test set). Nothing in the package or the tests
reads the shared folder; run by hand:
``python scripts/derive_elementwise_profiles.py /path/to/shared/reference/kernel-profiles``.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: Catalog ids of the profiled cards.
CARDS = {"a100": "a100-sxm-80gb", "h100": "h100-sxm-80gb", "a40": "a40-48gb"}
#: Vidur's op name -> the class of :class:`suanli.estimate.kernels.ElementwiseEfficiency`.
OPS = {
    "input_layernorm": "norm",
    "post_attention_layernorm": "norm",
    "attn_rope": "rope",
    "mlp_act": "activation",
    "add": "add",
}
#: Rows from this many tokens on are bandwidth-bound (the fit); the fixture keeps smaller ones
#: too, so that the tests see the floor.
MIN_TOKENS = 2048
#: Token counts kept in the fixture.
KEEP_TOKENS = {1, 16, 128, 512, 1024, 2048, 4096, 8192, 16384}
#: Bytes per element of the profiled kernels (fp16).
B = 2


def op_bytes(row: dict[str, str]) -> dict[str, float]:
    """Bytes each profiled op moves on one GPU of the row's tensor-parallel group."""
    heads, kv = int(row["n_head"]), int(row["n_kv_head"])
    h, inter = int(row["n_embd"]), int(row["n_expanded_embd"])
    tp, tokens = int(row["num_tensor_parallel_workers"]), int(row["num_tokens"])
    d = h // heads
    return {
        "input_layernorm": 2 * B * h * tokens,
        "post_attention_layernorm": 2 * B * h * tokens,
        "add": 3 * B * h * tokens,
        "attn_rope": 2 * B * (heads + kv) * d * tokens / tp,
        "mlp_act": 3 * B * inter * tokens / tp,
    }


def main(folder: str) -> int:
    from suanli.catalog import find_gpu, load_catalog

    catalog = load_catalog()
    fixture = []
    for card, gpu_id in CARDS.items():
        bw = find_gpu(gpu_id, catalog).memory_bandwidth_bytes_per_s
        shares: dict[str, list[float]] = defaultdict(list)
        models = set()
        for path in sorted((Path(folder) / "compute" / card).glob("*/*/mlp.csv")):
            model = f"{path.parent.parent.name}/{path.parent.name}"
            with path.open(newline="") as fh:
                for row in csv.DictReader(fh):
                    if row["use_gated_mlp"] != "True":
                        continue  # Phi-2: LayerNorm, GELU and a parallel block, another op set
                    models.add(model)
                    tokens = int(row["num_tokens"])
                    for op, nbytes in op_bytes(row).items():
                        seconds = float(row[f"time_stats.{op}.median"]) * 1e-3
                        if tokens >= MIN_TOKENS:
                            shares[OPS[op]].append(nbytes / seconds / bw)
                        if tokens in KEEP_TOKENS:
                            tp = row["num_tensor_parallel_workers"]
                            fixture.append((gpu_id, model, op, tokens, tp, nbytes, seconds))
        fitted = {k: statistics.median(v) for k, v in shares.items()}
        rows = sum(len(v) for v in shares.values())
        print(f"# {gpu_id}: {rows} op times of {len(models)} models at >= {MIN_TOKENS} tokens")
        print(
            f"[gemm.elementwise]  # {gpu_id}\n"
            + "\n".join(f"{k} = {fitted[k]:.2f}" for k in ("norm", "rope", "activation", "add"))
            + "\n"
        )
    out = ROOT / "tests" / "fixtures" / "elementwise-op-times.csv"
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["gpu_id", "model", "op", "tokens", "tp", "bytes", "seconds"])
        for gpu_id, model, op, tokens, tp, nbytes, seconds in fixture:
            writer.writerow((gpu_id, model, op, tokens, tp, f"{nbytes:.0f}", f"{seconds:.6g}"))
    print(f"wrote {len(fixture)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/kernel-profiles"))
