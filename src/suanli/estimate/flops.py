"""Matmul FLOPs from the architecture: forward per token, per step, MFU and HFU conventions.

Every matmul ``(m x k) @ (k x n)`` costs ``2·m·k·n`` FLOPs. Per token and layer:

- attention projections: ``2·h·(n_q·d + 2·n_kv·d) + 2·n_q·d_v·h`` (MLA: its five projections);
- attention core: ``2·n_q·s_ctx·d + 2·n_q·s_ctx·d_v`` for scores and values, where ``s_ctx`` is
  the keys a query sees (the full sequence as PaLM and Megatron count it, or half of it for a
  causal kernel that skips the masked half, or the sliding window);
- MLP: ``6·h·I`` gated, ``4·h·I`` plain; MoE: router ``2·h·E`` plus ``k`` experts' ``6·h·I_e``
  plus shared experts;
- LM head: ``2·h·V`` per token.

Backward is twice the forward (the gradient of the input and of the weight); a frozen weight
(LoRA/QLoRA base) skips its weight gradient, so its backward is once the forward. Full
recomputation adds one more forward of the layers. Model FLOPs (MFU) exclude recomputation,
hardware FLOPs (HFU) include it (PaLM, Chowdhery et al. 2022, appendix B).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from suanli.models.spec import ModelSpec

FLOP_COMPONENTS = ("attention_proj", "attention_core", "mlp", "experts", "router", "lm_head")


@dataclass(frozen=True, kw_only=True)
class StepFlops:
    """FLOPs of one micro-batch step (``tokens`` tokens), split by pass and component."""

    tokens: int
    forward: float
    backward: float
    recompute: float
    forward_by_component: dict[str, float]

    @property
    def model_flops(self) -> float:
        """Forward + backward, no recomputation: the numerator of MFU."""
        return self.forward + self.backward

    @property
    def hardware_flops(self) -> float:
        """What the GPU really executes, recomputation included: the numerator of HFU."""
        return self.forward + self.backward + self.recompute


def attention_context(spec: ModelSpec, seq: int, causal: bool, layer: int) -> float:
    """Keys each query attends to on average in ``layer``."""
    window = spec.attention.sliding_window
    if window and layer in spec.sliding_window_layers and window < seq:
        # Queries past the window see exactly `window` keys; the first `window` see fewer.
        full = window if not causal else window - window * window / (2 * seq)
        return full
    return seq / 2 if causal else float(seq)


def forward_flops_per_token(spec: ModelSpec, seq: int, causal: bool = False) -> dict[str, float]:
    """Forward matmul FLOPs per token by component, averaged over the layers."""
    return dict(_forward_flops_per_token(spec, seq, causal))


@lru_cache(maxsize=1024)
def _forward_flops_per_token(spec: ModelSpec, seq: int, causal: bool) -> dict[str, float]:
    # Cached: every estimate asks for it several times (FLOPs, the GEMM model, the planner).
    h = spec.hidden_size
    att = spec.attention
    nh, nkv, d, dv = att.num_heads, att.num_kv_heads, att.head_dim, att.v_head_dim
    if att.kind == "mla":
        q = (
            2 * (h * att.q_lora_rank + att.q_lora_rank * nh * d)
            if att.q_lora_rank
            else 2 * h * nh * d
        )
        kv = 2 * h * (att.kv_lora_rank + att.qk_rope_head_dim)
        kv += 2 * att.kv_lora_rank * nh * (att.qk_nope_head_dim + dv)
        proj = q + kv + 2 * nh * dv * h
    else:
        proj = 2 * h * (nh * d + 2 * nkv * d) + 2 * nh * dv * h
    # Layers split into sliding-window and full-attention ones; each kind sees one context.
    sliding = len(spec.sliding_window_layers) if att.sliding_window else 0
    full_ctx = attention_context(spec, seq, causal, -1)
    slide_ctx = (
        attention_context(spec, seq, causal, spec.sliding_window_layers[0]) if sliding else 0.0
    )
    core = 2 * nh * (d + dv) * ((spec.num_layers - sliding) * full_ctx + sliding * slide_ctx)
    parts = dict.fromkeys(FLOP_COMPONENTS, 0.0)
    parts["attention_proj"] = proj * spec.num_layers
    parts["attention_core"] = core
    if spec.mlp is not None:
        per = (6 if spec.mlp.gated else 4) * h * spec.mlp.intermediate_size
        parts["mlp"] = per * spec.num_dense_layers
    if spec.moe is not None and spec.moe_layers:
        moe = spec.moe
        n = len(spec.moe_layers)
        expert = (6 if moe.expert.gated else 4) * h * moe.expert.intermediate_size
        parts["experts"] = n * moe.experts_per_token * expert
        if moe.shared_expert is not None:
            parts["experts"] += n * 6 * h * moe.shared_expert.intermediate_size
        parts["router"] = n * 2 * h * moe.num_experts
    if spec.is_decoder:
        parts["lm_head"] = 2 * h * spec.vocab_size
    return parts


def _backward(forward: float, core: float, frozen_fraction: float) -> float:
    """Backward FLOPs: twice the attention core's forward, and twice the linear layers' (the
    input and the weight gradient) less the weight gradients of frozen weights."""
    return 2 * core + (forward - core) * (2 - frozen_fraction)


def model_step_flops(
    spec: ModelSpec, batch: int, seq: int, frozen_fraction: float = 0.0, pooler: bool = True
) -> float:
    """Model FLOPs of one micro-batch, the numerator of MFU: forward and backward with the full
    ``s x s`` attention and no recomputation (``step_flops(..., causal=False).model_flops``,
    without building the breakdown)."""
    tokens = batch * seq
    per_token = _forward_flops_per_token(spec, seq, False)
    forward = sum(v * tokens for v in per_token.values())
    if spec.architecture == "bert" and pooler:
        forward += 2 * spec.hidden_size * spec.hidden_size * batch
    return forward + _backward(forward, per_token["attention_core"] * tokens, frozen_fraction)


def step_flops(
    spec: ModelSpec,
    batch: int,
    seq: int,
    *,
    recompute: str = "none",
    recompute_every: int = 1,
    causal: bool = False,
    frozen_fraction: float = 0.0,
    pooler: bool = True,
) -> StepFlops:
    """FLOPs of one training micro-batch.

    ``frozen_fraction``: share of the layers' linear FLOPs whose weights are frozen (LoRA: about
    1), which skip the weight gradient. ``recompute``: ``full`` re-runs each layer's forward,
    ``selective`` only the attention core (Korthikanti et al. 2022), ``op`` the even-numbered
    matmuls (torchtitan's per-op checkpointing); ``recompute_every`` K checkpoints every K-th
    layer of ``full`` and ``op``.
    """
    tokens = batch * seq
    per_token = _forward_flops_per_token(spec, seq, causal)
    forward_parts = {k: v * tokens for k, v in per_token.items()}
    if spec.architecture == "bert" and pooler:
        forward_parts["lm_head"] += 2 * spec.hidden_size * spec.hidden_size * batch
    forward = sum(forward_parts.values())
    core = forward_parts["attention_core"]
    backward = _backward(forward, core, frozen_fraction)
    layers = forward - forward_parts["lm_head"]
    if recompute == "op":
        from suanli.estimate.checkpointing import op_recompute_share

        recomputed = (layers - core) * op_recompute_share(spec) / recompute_every
    else:
        recomputed = {"full": layers / recompute_every, "selective": core}.get(recompute, 0.0)
    return StepFlops(
        tokens=tokens,
        forward=forward,
        backward=backward,
        recompute=recomputed,
        forward_by_component=forward_parts,
    )
