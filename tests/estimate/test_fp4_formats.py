"""FP4 weights (``--quant nvfp4``, ``--quant mxfp4``): their bytes from the block layouts, only
on cards with fp4 tensor units, and what they change in a serving answer (docs/speed.md, "FP4
weights on Blackwell")."""

from __future__ import annotations

from typing import Any

import pytest

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.formats import format_problem, get_format, runnable_format
from suanli.estimate.fitting import FORMAT_LADDER
from suanli.plan.serve_search import SERVE_FORMATS


def test_the_bytes_are_the_block_layouts() -> None:
    """NVFP4: 4-bit values and an 8-bit scale per 16; MXFP4: an 8-bit scale per 32."""
    assert get_format("nvfp4").bits_per_weight == 4 + 8 / 16
    assert get_format("mxfp4").bits_per_weight == 4 + 8 / 32
    assert get_format("nvfp4").gemm_dtype == get_format("mxfp4").gemm_dtype == "fp4"


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4"])
def test_only_cards_with_fp4_units_run_them(fmt: str) -> None:
    cards = bundled_gpus()
    for gpu in ("b200", "rtx-5090"):
        assert format_problem(find_gpu(gpu, cards), fmt) is None
    for gpu in ("h100", "a100", "rtx-4090", "mi300x"):
        card = find_gpu(gpu, cards)
        problem = format_problem(card, fmt)
        assert problem is not None and "--quant gptq-4bit-g128" in problem
        assert runnable_format(card, fmt) == "gptq-4bit-g128"


def _answer(quant: str, **options: Any) -> InferPerfAnswer:
    work = WorkRequest(task="infer", framework="vllm", quant=quant, **options)
    answer = perf(PerfRequest("llama-3.1-70b", work, gpu="b200"))
    assert isinstance(answer, InferPerfAnswer)
    return answer


def test_fp4_prefill_is_faster_than_fp8_but_never_above_the_tensor_rate_ratio() -> None:
    """A long prefill is compute-bound: the fp4 rate (twice fp8's on the B200) speeds it up,
    attention staying in 16 bits and the activation casts keeping it below 2x."""
    fp8 = _answer("fp8", batch=8)
    fp4 = _answer("nvfp4", batch=8)
    gpu = find_gpu("b200", bundled_gpus())
    ratio = gpu.peak_flops("fp4") / gpu.peak_flops("fp8")
    assert 1 < fp8.ttft_s / fp4.ttft_s < ratio


def test_fp4_decode_reads_fewer_bytes() -> None:
    """Batch-1 decode is memory-bound: fewer weight bytes, a shorter step, but not shorter than
    the bytes ratio of the linear layers allows (4.5 against 8 bits; the rest stays 16-bit)."""
    fp8, fp4 = _answer("fp8"), _answer("nvfp4")
    assert fp4.tpot_s < fp8.tpot_s
    assert fp4.tpot_s / fp8.tpot_s > 4.5 / 8


def test_the_planners_try_fp4_between_8_bit_and_4_bit_integer_weights() -> None:
    for ladder in (FORMAT_LADDER, SERVE_FORMATS):
        assert ladder.index("int8") < ladder.index("nvfp4") < ladder.index("awq-4bit-g128")


def test_a_card_with_fp4_units_computes_in_fp4_and_one_without_falls_back() -> None:
    from suanli.estimate.device import device_for

    cards = bundled_gpus()
    assert device_for(find_gpu("b200", cards), "fp4").precision == "fp4"
    assert device_for(find_gpu("h100", cards), "fp4").precision == "fp8"
    assert device_for(find_gpu("a100", cards), "fp4").precision == "bf16"
