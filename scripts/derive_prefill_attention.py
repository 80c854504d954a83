"""Fit the serving engines' prefill attention kernel per card (developer tool).

Reads ``tests/fixtures/prefill-attention-aiconfigurator.csv`` (written by
``scripts/extract_aic_decode_attention.py`` from ai-dynamo/aiconfigurator's tables of vLLM's
attention backends: one causal forward over a prompt with its KV-cache write, under CUDA graphs,
bf16, batch 1, 8 and 64, 128 to 8,192 tokens, two head layouts) and fits, per card,

    t = floor_s + F / (rate_flops · s / (s + half_tokens))

with ``F = 2 · 2 · batch · heads · s² · d / 2`` the causal forward's FLOPs and ``s`` the prompt:
a fixed cost per call (the launch, the KV-cache write, the scheduler's metadata) and a rate that
saturates with the sequence length (short sequences leave the kernel's tiles mostly masked and
its pipeline unfilled; at 128 tokens vLLM's kernels reach a tenth of their long-sequence rate).

The fit is least squares in log space (relative errors) on the rows of one head layout, 32 query
and 8 KV heads of 128 (Llama-3-8B; Llama-3-70B on 2 GPUs): for each ``half_tokens`` on a grid the
two other parameters are linear. The other layout, 8 / 1 (Llama-3-70B on 8 GPUs), is the
hold-out. The result is printed as the ``[prefill_attention."<card>"]`` tables of
``src/suanli/catalog/data/kernels.toml``. Usage: ``python scripts/derive_prefill_attention.py``.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from suanli.estimate.kernels import PrefillAttention  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "prefill-attention-aiconfigurator.csv"
#: The head layout (query heads, KV heads) fitted; the others are held out.
FIT_LAYOUT = (32, 8)
#: The grid of ``half_tokens`` searched (tokens).
HALF_TOKENS_GRID = tuple(round(50 * 1.01**i) for i in range(600) if 50 * 1.01**i <= 20000)
SOURCE = (
    "ai-dynamo/aiconfigurator 095f58a5, vLLM {vllm} context_attention_perf (Apache-2.0): the "
    "32/8-head rows of tests/fixtures/prefill-attention-aiconfigurator.csv; 8/1 heads held out"
)

#: (batch, prompt tokens, FLOPs, seconds) of one kernel call.
Point = tuple[int, int, float, float]


def read(path: Path = FIXTURE) -> dict[tuple[str, tuple[int, int]], list[Point]]:
    """The fixture's rows by (card, (query heads, KV heads))."""
    out: dict[tuple[str, tuple[int, int]], list[Point]] = defaultdict(list)
    with path.open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            batch, tokens = int(r["batch"]), int(r["tokens"])
            heads, dim = int(r["q_heads"]), int(r["head_dim"])
            flops = 2 * 2 * batch * heads * tokens * tokens * dim / 2
            layout = (heads, int(r["kv_heads"]))
            out[(r["gpu_id"], layout)].append((batch, tokens, flops, float(r["seconds"])))
    return dict(out)


def seconds(params: tuple[float, float, float], tokens: float, flops: float) -> float:
    """The fitted form, as the speed model computes it (:class:`PrefillAttention`)."""
    floor_s, rate_flops, half_tokens = params
    return PrefillAttention(
        floor_s=floor_s, rate_flops=rate_flops, half_tokens=half_tokens
    ).seconds(flops, tokens)


def fit(points: list[Point]) -> tuple[float, float, float]:
    """(floor_s, rate_flops, half_tokens) minimizing the squared log errors over ``points``;
    for each ``half_tokens`` the floor and 1 / rate come from weighted linear least squares
    (weights 1 / t), and the grid value with the smallest log loss wins."""
    best: tuple[float, tuple[float, float, float]] | None = None
    for half in HALF_TOKENS_GRID:
        # Relative residuals: (floor + x / rate) / t - 1, with x = F (s + half) / s.
        rows = [(1 / t, f * (s + half) / s / t) for _, s, f, t in points]
        s00 = sum(a * a for a, _ in rows)
        s01 = sum(a * b for a, b in rows)
        s11 = sum(b * b for _, b in rows)
        y0 = sum(a for a, _ in rows)
        y1 = sum(b for _, b in rows)
        det = s00 * s11 - s01 * s01
        floor = (y0 * s11 - y1 * s01) / det
        inv_rate = (s00 * y1 - s01 * y0) / det
        if floor < 0 or inv_rate <= 0:
            continue
        params = (floor, 1 / inv_rate, float(half))
        loss = sum(math.log(seconds(params, s, f) / t) ** 2 for _, s, f, t in points)
        if best is None or loss < best[0]:
            best = (loss, params)
    if best is None:
        raise ValueError("no positive fit")
    return best[1]


def errors(params: tuple[float, float, float], points: list[Point]) -> list[float]:
    """Relative errors of the fit, model / measured - 1."""
    return [seconds(params, s, f) / t - 1 for _, s, f, t in points]


def versions(path: Path = FIXTURE) -> dict[str, str]:
    """The vLLM release each card's rows were timed with."""
    with path.open(encoding="utf-8") as fh:
        return {r["gpu_id"]: r["vllm"] for r in csv.DictReader(fh)}


def main() -> int:
    data = read()
    vllm = versions()
    for card in sorted({c for c, _ in data}):
        fitted = data[(card, FIT_LAYOUT)]
        others = [pts for (c, layout), pts in data.items() if c == card and layout != FIT_LAYOUT]
        held = [p for pts in others for p in pts]
        params = fit(fitted)
        inside, outside = errors(params, fitted), errors(params, held)
        print(f'[prefill_attention."{card}"]')
        print(f"floor_s = {params[0]:.3g}")
        print(f"rate_flops = {params[1]:.4g}")
        print(f"half_tokens = {params[2]:.0f}")
        print(f"rows = {len(fitted)}")
        print(f"median_error = {statistics.median(abs(e) for e in inside):.3f}")
        print(f"holdout_error = {statistics.median(abs(e) for e in outside):.3f}")
        print(f"# worst {max(inside, key=abs):+.0%} fitted, {max(outside, key=abs):+.0%} held out")
        print(f'date = "2026-12-02"\nsource = "{SOURCE.format(vllm=vllm[card])}"')
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
