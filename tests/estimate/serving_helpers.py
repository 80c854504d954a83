"""Shared by the serving simulator's tests: a one-line summary of a run and the step-by-step
references' sequence record (the fixtures are in conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.serving import ServingResult

H100 = find_gpu("h100-sxm-80gb", bundled_gpus())


def summary(r: ServingResult) -> str:
    return (
        f"{r.requests_per_s:7.2f} req/s {r.tokens_per_s:8.0f} tok/s  TTFT p50/p95 "
        f"{r.ttft_s['p50']:.3f}/{r.ttft_s['p95']:.3f} s  TPOT p95 {r.tpot_s['p95'] * 1e3:.1f} ms  "
        f"E2E p50/p95 {r.e2e_s['p50']:.2f}/{r.e2e_s['p95']:.2f} s  busy {r.gpu_utilization:.0%}"
    )


@dataclass
class Seq:
    rid: int
    ctx: int = 0
    produced: int = 0
    total: int = 0
    done: int = 0


def decode_one_token(
    decoding: list[Seq],
    clock: float,
    finish: list[float],
    held: dict[int, int],
    reserve: bool,
    block_size: int,
) -> tuple[list[Seq], int]:
    """Every decoding sequence gains a token at ``clock``; those that reach their length finish
    (``finish[rid] = clock``) and give back their KV blocks (what they reserved, or what their
    context fills). Returns the sequences still decoding and the blocks freed."""
    still, freed = [], 0
    for d in decoding:
        d.ctx += 1
        d.produced += 1
        if d.produced == d.total:
            finish[d.rid] = clock
            freed += held[d.rid] if reserve else -(-d.ctx // block_size)
        else:
            still.append(d)
    return still, freed
