"""How a benchmark reads inference throughput (static batch, closed-loop clients), pipeline
stages at inference, and the precision fp8 weights compute in."""

from __future__ import annotations

import math

import pytest

from suanli.answers.perf import InferPerfAnswer, PerfRequest, perf
from suanli.answers.request import WorkRequest
from suanli.estimate.load import closed_loop


def _infer(
    gpu: str = "h100", prompt: int = 2048, output: int = 256, **work: object
) -> InferPerfAnswer:
    options = {"task": "infer", "batch": 1, **work}
    answer = perf(
        PerfRequest(
            model="llama-3.1-8b",
            gpu=gpu,
            work=WorkRequest(**options),  # type: ignore[arg-type]
            prompt=prompt,
            output=output,
            ignore_fit=True,
        )
    )
    assert isinstance(answer, InferPerfAnswer)
    return answer


def test_static_batch_rate_counts_the_prefill() -> None:
    a = _infer(batch=32)
    assert a.request_s == pytest.approx(a.ttft_s + 255 * a.tpot_s)
    assert a.batch_tokens_per_s == pytest.approx(32 * 256 / a.request_s)
    # The prefill of 32 prompts of 2,048 tokens is not free: the whole-batch rate is lower.
    assert a.batch_tokens_per_s < 0.9 * a.tokens_per_s


def test_one_closed_loop_client_is_one_request_after_another() -> None:
    loop = closed_loop(1, 500, prefill_one_s=0.4, decode_step_s=0.02)
    assert loop.ttft_s == pytest.approx(0.4)  # nobody else's prefill to wait for
    assert loop.tpot_s == pytest.approx(0.02)
    assert loop.tokens_per_s == pytest.approx(500 / (0.4 + 499 * 0.02))


def test_closed_loop_clients_share_the_replica() -> None:
    loops = [closed_loop(c, 500, prefill_one_s=0.4, decode_step_s=0.02) for c in (1, 10, 50)]
    ttfts = [x.ttft_s for x in loops]
    assert ttfts == sorted(ttfts) and ttfts[-1] > ttfts[0]
    for x in loops:
        # Every cycle prefills each client's prompt once: never faster than decode alone.
        assert x.tokens_per_s <= x.clients / 0.02
        assert x.tpot_s >= 0.02
        assert 0 < x.prefill_share < 1
        # The client's view adds up to its cycle.
        assert x.ttft_s + 499 * x.tpot_s == pytest.approx(x.cycle_s)
    # Prefilled one after another, not all at once: far below 50 prompts' prefill.
    assert loops[-1].ttft_s < 50 * 0.4 / 4


def test_closed_loop_rejects_no_clients() -> None:
    with pytest.raises(ValueError):
        closed_loop(0, 10, 0.1, 0.01)


def test_perf_answer_carries_the_closed_loop() -> None:
    a = _infer(batch=16, output=300)
    loop = a.closed_loop
    assert loop is not None and loop.clients == 16
    alone = _infer(batch=1, output=300)
    assert loop.ttft_s >= alone.ttft_s
    assert loop.ttft_s < a.ttft_s  # all 16 prompts prefilled at once take longer
    assert math.isfinite(loop.tokens_per_s) and loop.tokens_per_s < a.tokens_per_s
    doc = a.to_json()
    assert set(doc["closed_loop"]) >= {"clients", "ttft_s", "tpot_s", "tokens_per_s"}
    assert doc["batch_tokens_per_s"] == pytest.approx(a.batch_tokens_per_s)


def test_pipeline_stages_split_memory_not_time() -> None:
    one = _infer(gpu="rtx4090", quant="gguf-q4_k_m", output=128)
    split = _infer(gpu="rtx4090", quant="gguf-q4_k_m", output=128, gpus=4, pp=4)
    # Each GPU holds a quarter of the layers and their KV cache, one of the embeddings and the
    # LM head (each 0.5 B parameters for Llama 3's vocabulary), and the fixed CUDA overheads.
    assert split.memory_bytes < 0.6 * one.memory_bytes
    # The stages run in turn: never faster than one card, a little slower for the hops.
    assert split.tpot_s >= one.tpot_s
    assert split.tpot_s < 1.1 * one.tpot_s
    assert any("pipeline" in t.term for t in split.terms)


def test_pipeline_gpus_must_match_tp_times_pp() -> None:
    with pytest.raises(ValueError, match="tp x pp"):
        _infer(gpus=3, pp=2)


def test_fp8_weights_compute_in_fp8_only_where_the_card_can() -> None:
    def prefill(gpu: str, quant: str) -> float:
        return _infer(gpu=gpu, quant=quant, batch=8, prompt=4096).ttft_s

    # H100 has fp8 tensor cores: a long prefill is well over 1.3x faster than in bf16.
    assert prefill("h100", "bf16") / prefill("h100", "fp8") > 1.3
    # A100 has none: fp8 weights are dequantized to bf16 (W8A16), the prefill barely changes.
    assert prefill("a100", "bf16") / prefill("a100", "fp8") == pytest.approx(1.0, abs=0.1)


def test_partial_offload_trades_memory_for_speed() -> None:
    def run(layers: int | None, host: str | None = None) -> InferPerfAnswer:
        answer = perf(
            PerfRequest(
                model="llama-3-70b",
                gpu="rtx4090",
                work=WorkRequest(task="infer", quant="gguf-q4_k_m", gpu_layers=layers),
                prompt=512,
                output=128,
                ignore_fit=True,
                host_cpu=host,
            )
        )
        assert isinstance(answer, InferPerfAnswer)
        return answer

    whole, half, none = run(None), run(40), run(0)
    assert not whole.fits and half.fits  # 42 GB of weights: half of them fit a 24 GB card
    assert half.memory_bytes < 0.6 * whole.memory_bytes
    # The CPU's layers read system memory (83 GB/s) instead of GDDR6X (1 TB/s): much slower,
    # and never faster than the CPU alone is slower than the split.
    assert none.tpot_s > half.tpot_s > 3 * whole.tpot_s
    # A faster host (12-channel DDR5) runs the same split faster.
    assert run(40, "epyc-9654-cpu").tpot_s < half.tpot_s
    assert "cpu_layers_decode" in half.breakdown_s


def test_gpu_layers_is_an_inference_option() -> None:
    from suanli.answers.request import build_work

    with pytest.raises(ValueError):
        build_work(WorkRequest(task="infer", gpu_layers=-1))
