"""The serving engines' prefill attention kernel, measured per card (aiconfigurator's tables of
vLLM's attention backends, tests/fixtures/prefill-attention-aiconfigurator.csv): a floor per
call and a rate that saturates with the prompt, instead of the FlashAttention tables' rates,
which hold for long sequences only."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf, serve_kernels
from suanli.estimate.kernel_fits import prefill_attention
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model

from ..scripts import load_script

FIT = load_script("scripts/derive_prefill_attention.py")
CARDS = ("a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "l40s-48gb")


@pytest.mark.parametrize("card", CARDS)
def test_catalog_tables_are_what_the_fit_gives(card: str) -> None:
    floor, rate, half = FIT.fit(FIT.read()[(card, FIT.FIT_LAYOUT)])
    measured = prefill_attention(find_gpu(card, bundled_gpus()))
    assert measured is not None
    assert measured.floor_s == pytest.approx(floor, rel=0.01)
    assert measured.rate_flops == pytest.approx(rate, rel=0.01)
    assert measured.half_tokens == pytest.approx(half, rel=0.01)


@pytest.mark.parametrize(
    ("card", "fitted", "held_out"),
    [
        ("a100-sxm-80gb", 0.05, 0.12),
        ("h100-sxm-80gb", 0.05, 0.10),
        ("h200-sxm-141gb", 0.05, 0.10),
        ("b200-sxm-180gb", 0.08, 0.12),
        ("l40s-48gb", 0.12, 0.20),
    ],
)
def test_the_fit_holds_for_the_other_head_layout(card: str, fitted: float, held_out: float) -> None:
    """Fitted on 32 query / 8 KV heads (Llama-3-8B), checked on 8 / 1 (70B over 8 GPUs)."""
    data = FIT.read()
    measured = prefill_attention(find_gpu(card, bundled_gpus()))
    assert measured is not None
    params = (measured.floor_s, measured.rate_flops, measured.half_tokens)
    inside = FIT.errors(params, data[(card, (32, 8))])
    outside = FIT.errors(params, data[(card, (8, 1))])
    assert statistics.median(abs(e) for e in inside) < fitted
    assert statistics.median(abs(e) for e in outside) < held_out


def test_short_prompts_run_far_below_the_long_prompt_rate() -> None:
    """At 128 tokens vLLM's kernel reaches about a tenth of its long-prompt rate on H100, and a
    call costs at least its floor of about 12 us."""
    measured = prefill_attention(find_gpu("h100", bundled_gpus()))
    assert measured is not None
    assert measured.rate(128) < 0.15 * measured.rate_flops
    assert measured.rate(32768) > 0.95 * measured.rate_flops
    assert 8e-6 < measured.floor_s < 16e-6


def test_cards_take_a_measured_card_of_their_architecture_scaled_by_the_matmul_rate() -> None:
    gpus = bundled_gpus()
    geforce = prefill_attention(find_gpu("rtx-4090", gpus))
    l40s = prefill_attention(find_gpu("l40s", gpus))
    assert geforce is not None and l40s is not None
    assert "l40s-48gb's" in geforce.source
    assert geforce.floor_s == l40s.floor_s and geforce.half_tokens == l40s.half_tokens
    assert 0.3 * l40s.rate_flops < geforce.rate_flops < l40s.rate_flops
    # Nobody measured an AMD card's serving prefill: the FlashAttention tables stay.
    assert prefill_attention(find_gpu("mi300x", gpus)) is None


def test_a_short_prompt_costs_the_floor_in_every_layer() -> None:
    """A 128-token prefill of Llama-3.1-8B on one H100: the measured kernel adds about 32 layers
    x (12 us floor - 6 us launch) to the attention of the FlashAttention rates; at 8k tokens the
    two agree within a tenth (FlashAttention-3's published rates hold for long prompts)."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    gemm = device.gemm_model
    assert gemm.prefill_attention is not None
    tables = dataclasses.replace(device, gemm=dataclasses.replace(gemm, prefill_attention=None))

    def attention_s(dev: object, prompt: int) -> float:
        prefill, _ = serve_kernels(spec, "bf16", 0.0, 1, 1, prompt, dev)  # type: ignore[arg-type]
        return float(prefill.attention_s)

    extra = attention_s(device, 128) - attention_s(tables, 128)
    assert 4e-6 * spec.num_layers < extra < 12e-6 * spec.num_layers
    long_now, long_before = attention_s(device, 8192), attention_s(tables, 8192)
    assert long_now == pytest.approx(long_before, rel=0.1)
    # The whole prefill changes by the attention's difference, nothing else.
    work = InferWork(context=128 + 16)
    now = inference_perf(spec, work, device, 128, 16)
    before = inference_perf(spec, work, tables, 128, 16)
    diff = now.breakdown_s["prefill_kernels"] - before.breakdown_s["prefill_kernels"]
    assert diff == pytest.approx(extra, rel=1e-6)
