"""Speculative decoding: a drafter proposes ``k`` tokens per sequence, the target model checks
them all in one forward pass and keeps the accepted ones (docs/speed.md, "Speculative decoding").

First principles, nothing fitted:

- With each drafted token accepted with probability ``alpha`` independently, a verify pass
  yields ``(1 - alpha^(k+1)) / (1 - alpha)`` tokens per sequence on average: the accepted prefix
  plus the target's own next token (Leviathan, Kalman and Matias, "Fast Inference from
  Transformers via Speculative Decoding", ICML 2023, eq. 1). ``alpha`` is the user's input: it
  depends on the drafter and the text, and engines report it for the traffic they serve.
- The verify pass runs ``k + 1`` tokens per sequence through the target: its GEMMs see ``k + 1``
  times the rows (still memory-bound at small batches, so nearly the cost of one decode step),
  its attention reads each sequence's KV cache once, its LM head runs on every position, and its
  tensor-parallel all-reduces carry ``k + 1`` tokens.
- The drafter: ``ngram`` (prompt lookup, vLLM's ``method: ngram``) matches the context on the
  CPU and costs the GPU nothing here; ``eagle`` (EAGLE, Li et al. 2024, arXiv:2401.15077) runs a
  one-decoder-layer head with the target's embedding and LM head once per drafted token, costed
  as a decode step of a one-layer model of the target's shape.
"""

from __future__ import annotations

from dataclasses import replace

from suanli.models.spec import ModelSpec

#: Drafters suanli costs.
SPEC_METHODS = ("ngram", "eagle")
#: Most tokens a drafter may propose per step (engines default to 3-8).
MAX_SPEC_TOKENS = 16


def accepted_tokens(draft_tokens: int, acceptance: float) -> float:
    """Tokens per sequence one verify pass yields: ``(1 - a^(k+1)) / (1 - a)`` (``k + 1`` when
    every draft is accepted, 1 when none is)."""
    if draft_tokens <= 0:
        return 1.0
    if acceptance >= 1:
        return float(draft_tokens + 1)
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)


def eagle_head(spec: ModelSpec) -> ModelSpec:
    """The shape an EAGLE drafter runs per drafted token: one dense decoder layer of the target's
    width with its embedding and LM head."""
    return replace(spec, num_layers=1, moe_layers=())
