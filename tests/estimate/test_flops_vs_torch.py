"""Exact on the CPU: our FLOPs against torch.utils.flop_counter.FlopCounterMode on real models.

FlopCounterMode counts 2·m·k·n per matmul (mm, addmm, bmm) on the CPU. Two of its blind spots
shape the test: the CPU flash-attention kernel behind SDPA is not counted (so with ``sdpa`` the
attention core is excluded from the comparison; ``eager`` attention runs bmm and is counted), and
transformers' grouped-GEMM experts are not either (the MoE case switches the experts to the eager
per-expert loop, which runs mm).
"""

from __future__ import annotations

import pytest

from suanli.estimate.flops import step_flops
from suanli.models.config import spec_from_config

from .test_memory_vs_torch import CONFIGS, _build

torch = pytest.importorskip("torch")
flop_counter = pytest.importorskip("torch.utils.flop_counter")

TOLERANCE = 0.02
FAMILIES = ["llama", "qwen2", "mixtral", "gpt2", "bert", "qwen3", "gpt_neox"]


def _measure(
    family: str, attention: str, batch: int, seq: int, cfg: dict | None = None
) -> tuple[float, float]:  # type: ignore[type-arg]
    cfg = cfg or CONFIGS[family]
    model = _build(cfg, "fp32", attention)
    if family == "mixtral" and hasattr(model, "set_experts_implementation"):
        # transformers 5 picks an experts kernel; eager is the loop FlopCounterMode sees whole
        # (4.x has only that loop)
        model.set_experts_implementation("eager")
    ids = torch.randint(0, cfg["vocab_size"], (batch, seq))
    with flop_counter.FlopCounterMode(display=False) as forward:
        if family == "bert":
            out = model(input_ids=ids)
            loss = out.last_hidden_state.sum() + out.pooler_output.sum()
        else:
            loss = model(input_ids=ids, labels=ids).loss
    with flop_counter.FlopCounterMode(display=False) as backward:
        loss.backward()
    return forward.get_total_flops(), backward.get_total_flops()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize(("batch", "seq"), [(2, 64), (1, 160), (4, 32)])
def test_forward_and_backward_flops_match(
    family: str, attention: str, batch: int, seq: int
) -> None:
    fwd, bwd = _measure(family, attention, batch, seq)
    spec = spec_from_config(CONFIGS[family], family)
    est = step_flops(spec, batch, seq)
    core = est.forward_by_component["attention_core"]
    expected_fwd = est.forward if attention == "eager" else est.forward - core
    expected_bwd = est.backward if attention == "eager" else est.backward - 2 * core
    assert expected_fwd == pytest.approx(fwd, rel=TOLERANCE)
    assert expected_fwd + expected_bwd == pytest.approx(fwd + bwd, rel=TOLERANCE)


def test_gpt2_with_dropout_counts_the_attention_core() -> None:
    """With attention dropout, SDPA on the CPU runs its math path (bmm), which is counted."""
    cfg = {**CONFIGS["gpt2"], "attn_pdrop": 0.1}
    fwd, bwd = _measure("gpt2", "sdpa", 2, 64, cfg)
    est = step_flops(spec_from_config(cfg, "gpt2"), 2, 64)
    assert est.forward == pytest.approx(fwd, rel=TOLERANCE)
    assert est.model_flops == pytest.approx(fwd + bwd, rel=TOLERANCE)


def test_six_n_rule_for_a_dense_model() -> None:
    """Training FLOPs ≈ 6·N·T when the sequence is short (Kaplan et al. 2020, §2.1)."""
    from suanli.models.params import count_params
    from suanli.models.resolve import load_model

    spec = load_model("llama-2-7b").spec
    est = step_flops(spec, 1, 128)
    n = count_params(spec).total - count_params(spec).by_component["embeddings"]
    assert est.model_flops == pytest.approx(6 * n * 128, rel=0.03)


def test_recompute_and_frozen_weights() -> None:
    spec = spec_from_config(CONFIGS["llama"], "llama")
    plain = step_flops(spec, 2, 64)
    full = step_flops(spec, 2, 64, recompute="full")
    assert full.model_flops == plain.model_flops
    assert full.hardware_flops == pytest.approx(
        plain.model_flops + plain.forward - plain.forward_by_component["lm_head"]
    )
    lora = step_flops(spec, 2, 64, frozen_fraction=1.0)
    assert lora.backward < plain.backward


@pytest.mark.parametrize(
    "name", ["llama-3.1-8b", "bert-base-uncased", "gemma-3-4b", "mixtral-8x7b", "deepseek-v2-lite"]
)
@pytest.mark.parametrize("frozen", [0.0, 1.0])
def test_model_flops_shortcut_is_step_flops(name: str, frozen: float) -> None:
    """MFU's numerator without the breakdown: the same sum, sliding windows, MoE, MLA and
    BERT's pooler included."""
    from suanli.estimate.flops import model_step_flops
    from suanli.models.resolve import load_model

    spec = load_model(name).spec
    full = step_flops(spec, 3, 1024, causal=False, frozen_fraction=frozen).model_flops
    assert model_step_flops(spec, 3, 1024, frozen) == pytest.approx(full, rel=1e-12)
