"""The deterministic grid of configurations shared by the peer harness and our side.

Pure Python, no third-party imports: importable from the project venv and from the peer venv.
``grid(n)`` returns ``n`` configurations as plain dicts. Even positions are training steps,
odd positions inference requests; each half is drawn from its full cartesian product by a
fixed stride permutation (golden-ratio step, coprime with the product size), so every prefix
spreads over models, GPUs, layouts, batches and lengths, and the same ``n`` always gives the
same list on every Python version.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

# Architectures, as the peer needs them. ``ffn`` is the SwiGLU intermediate size.
MODELS: dict[str, dict[str, int]] = {
    "llama-2-7b": {
        "hidden": 4096,
        "layers": 32,
        "heads": 32,
        "kv_heads": 32,
        "ffn": 11008,
        "vocab": 32000,
        "max_seq": 4096,
    },
    "llama-2-70b": {
        "hidden": 8192,
        "layers": 80,
        "heads": 64,
        "kv_heads": 8,
        "ffn": 28672,
        "vocab": 32000,
        "max_seq": 4096,
    },
}

# Peer GPU config names; suanli's catalog uses the same ids.
GPUS = ("a100-sxm-80gb", "h100-sxm-80gb")

TP = (1, 2, 4, 8)
PP = (1, 2)
# (dp, ZeRO stage): ZeRO only where there is data parallelism to shard over.
TRAIN_DP_ZERO = ((1, 0), (4, 1), (4, 3), (8, 1), (8, 3))
TRAIN_BATCH = (1, 4)  # micro-batch per GPU (per data-parallel replica)
TRAIN_SEQ = (1024, 2048, 4096)
TRAIN_RECOMPUTE = ("none", "selective", "full")
INFER_BATCH = (1, 8, 32)
INFER_SEQ = (512, 1024, 2048)  # prompt length
INFER_GEN_TOKENS = 128


def _train_space() -> list[dict[str, Any]]:
    out = []
    for model, gpu, tp, pp, (dp, zero), batch, seq, recompute in itertools.product(
        MODELS, GPUS, TP, PP, TRAIN_DP_ZERO, TRAIN_BATCH, TRAIN_SEQ, TRAIN_RECOMPUTE
    ):
        out.append(
            {
                "model": model,
                "gpu": gpu,
                "task": "train",
                "tp": tp,
                "pp": pp,
                "dp": dp,
                "batch": batch,
                "seq": seq,
                "zero": zero,
                "recompute": recompute,
                "grad_accum": 1,
                "gen_tokens": None,
            }
        )
    return out


def _infer_space() -> list[dict[str, Any]]:
    out = []
    for model, gpu, tp, pp, batch, seq in itertools.product(
        MODELS, GPUS, TP, PP, INFER_BATCH, INFER_SEQ
    ):
        out.append(
            {
                "model": model,
                "gpu": gpu,
                "task": "infer",
                "tp": tp,
                "pp": pp,
                "dp": 1,
                "batch": batch,
                "seq": seq,
                "zero": 0,
                "recompute": "none",
                "grad_accum": 1,
                "gen_tokens": INFER_GEN_TOKENS,
            }
        )
    return out


def _stride(size: int) -> int:
    step = max(1, round(size * 0.6180339887))
    while math.gcd(step, size) != 1:
        step += 1
    return step


def _permuted(space: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    step = _stride(len(space))
    return [dict(space[(k * step) % len(space)]) for k in range(count)]


TRAIN_SIZE = len(_train_space())
INFER_SIZE = len(_infer_space())
MAX_CONFIGS = 2 * min(TRAIN_SIZE, INFER_SIZE)


def grid(n: int) -> list[dict[str, Any]]:
    """The first ``n`` configurations (``n`` <= ``MAX_CONFIGS``), alternating train and infer.

    Each dict: id, model, gpu, task ("train"/"infer"), tp, pp, dp, batch (micro-batch per GPU
    for train, requests per model replica for infer), seq (train sequence / infer prompt),
    zero, recompute, grad_accum, gen_tokens (infer only), dtype, and ``model_spec`` (hidden,
    layers, heads, kv_heads, ffn, vocab, max_seq).
    """
    if n < 0 or n > MAX_CONFIGS:
        raise ValueError(f"n must be in [0, {MAX_CONFIGS}], got {n}")
    n_train = (n + 1) // 2
    n_infer = n // 2
    train = _permuted(_train_space(), n_train)
    infer = _permuted(_infer_space(), n_infer)
    out: list[dict[str, Any]] = []
    for k in range(n):
        cfg = train[k // 2] if k % 2 == 0 else infer[k // 2]
        cfg["id"] = k
        cfg["dtype"] = "bf16"
        cfg["model_spec"] = dict(MODELS[cfg["model"]])
        out.append(cfg)
    return out


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(grid(int(sys.argv[1]) if len(sys.argv) > 1 else 10), indent=1))
