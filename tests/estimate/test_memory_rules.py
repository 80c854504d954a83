"""The rules the estimate must obey, each pinned to its source or to an invariant peers break."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.estimate.fitting import fit_inference, fit_training
from suanli.estimate.inference_memory import inference_memory, kv_bytes_per_token
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.models.resolve import load_model
from suanli.units import GiB

LLAMA8 = load_model("llama-3.1-8b").spec
P8 = 8_030_261_248


def _mem(work: TrainWork, spec=LLAMA8) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return training_memory(spec, work).breakdown


def test_total_is_the_sum_of_components_not_the_max() -> None:
    result = training_memory(LLAMA8, TrainWork(task="full"))
    assert result.total_bytes == pytest.approx(sum(result.breakdown.values()))
    assert result.total_bytes > 1.5 * max(result.breakdown.values())


def test_qlora_needs_less_than_lora() -> None:
    lora = training_memory(LLAMA8, TrainWork(task="lora")).total_bytes
    qlora = training_memory(LLAMA8, TrainWork(task="qlora")).total_bytes
    assert qlora < 0.8 * lora  # the base shrinks 4x; bnb layers still save inputs


def test_qlora_base_is_nf4_double_quant() -> None:
    """QLoRA §3: NF4 with double quantization costs 4.127 bits per quantized weight."""
    weights = training_memory(LLAMA8, TrainWork(task="qlora")).lines[0].bytes
    linear = 6_979_321_856  # Llama-3.1-8B linear weights in the layers
    other = P8 - linear
    assert weights == pytest.approx(linear * 4.127 / 8 + other * 2, rel=0.001)


def test_zero_stages_shard_states_as_the_paper_says() -> None:
    base = TrainWork(task="full", precision="mixed")
    states = ("weights", "master_weights", "gradients", "optimizer")
    per_stage = []
    for stage in range(4):
        work = replace(base, parallel=Parallelism(dp=8, zero=stage))
        parts = training_memory(LLAMA8, work)
        per_stage.append(
            sum(
                ln.bytes
                for ln in parts.lines
                if ln.key in states and "all-gathered" not in ln.label
            )
        )
    psi = P8
    assert per_stage[0] == pytest.approx(16 * psi)
    assert per_stage[1] == pytest.approx(4 * psi + 12 * psi / 8)
    assert per_stage[2] == pytest.approx(2 * psi + 14 * psi / 8)
    assert per_stage[3] == pytest.approx(16 * psi / 8)


@pytest.mark.parametrize(
    ("optimizer", "bytes_per_param"),
    [
        ("adamw", 8.0),
        ("adamw8bit", 2 * (1 + 4 / 2048)),
        ("sgd", 0.0),
        ("sgd_momentum", 4.0),
        ("lion", 4.0),
    ],
)
def test_optimizer_state_sizes(optimizer: str, bytes_per_param: float) -> None:
    parts = _mem(TrainWork(task="full", optimizer=optimizer))
    assert parts["optimizer"] == pytest.approx(bytes_per_param * P8)


def test_adafactor_is_factored() -> None:
    assert _mem(TrainWork(task="full", optimizer="adafactor"))["optimizer"] < 0.01 * 8 * P8


def test_pure_bf16_has_no_master_copy() -> None:
    parts = _mem(TrainWork(task="full", precision="pure"))
    assert parts["master_weights"] == 0
    assert parts["optimizer"] == pytest.approx(4 * P8)


def test_offload_moves_optimizer_to_cpu() -> None:
    result = training_memory(LLAMA8, TrainWork(task="full", offload_optimizer=True))
    assert result.breakdown["optimizer"] == 0 and result.breakdown["master_weights"] == 0
    assert result.cpu_bytes == pytest.approx(12 * P8)


def test_eager_attention_adds_the_s_squared_scores() -> None:
    sdpa = _mem(TrainWork(task="full", seq=4096, attention="sdpa"))["activations"]
    eager = _mem(TrainWork(task="full", seq=4096, attention="eager"))["activations"]
    # 32 layers x 32 heads x 4096^2 x (4 + 2) bytes, plus the repeated K/V copies.
    assert eager - sdpa > 32 * 32 * 4096**2 * 6


def test_selective_recompute_drops_the_scores_and_full_keeps_layer_inputs() -> None:
    eager = TrainWork(task="full", seq=4096, attention="eager")
    none = _mem(eager)["activations"]
    selective = _mem(replace(eager, recompute="selective"))["activations"]
    full = _mem(replace(eager, recompute="full"))["activations"]
    assert full < selective < none
    sdpa = TrainWork(task="full", seq=4096)
    assert _mem(replace(sdpa, recompute="selective"))["activations"] == _mem(sdpa)["activations"]


def test_tensor_and_sequence_parallel_split_activations() -> None:
    one = _mem(TrainWork(task="full", recompute="none"))["activations"]
    tp = _mem(TrainWork(task="full", parallel=Parallelism(tp=4)))["activations"]
    sp = _mem(TrainWork(task="full", parallel=Parallelism(tp=4, sp=True)))["activations"]
    assert sp < tp < one
    # Korthikanti §4.2.2: with SP every layer term is divided by t; only the loss terms are not.
    assert sp < one / 2


def test_pipeline_keeps_pp_microbatches_in_flight() -> None:
    """1F1B: stage 0 holds pp micro-batches of L/pp layers, i.e. the layers' activations of one
    micro-batch of the whole model (Narayanan et al. 2021)."""
    base = TrainWork(task="full", grad_accum=8)
    one = training_memory(LLAMA8, base).lines
    pp4 = training_memory(LLAMA8, replace(base, parallel=Parallelism(pp=4))).lines
    layers_one = next(ln.bytes for ln in one if ln.label == "saved by the layers")
    layers_pp4 = next(ln.bytes for ln in pp4 if ln.label == "saved by the layers")
    assert layers_pp4 == pytest.approx(layers_one)
    interleaved = training_memory(LLAMA8, replace(base, parallel=Parallelism(pp=4, vpp=2))).lines
    layers_vpp = next(ln.bytes for ln in interleaved if ln.label == "saved by the layers")
    assert layers_vpp == pytest.approx(layers_one * (1 + 3 / 8))


def test_logits_scale_with_vocabulary() -> None:
    parts = _mem(TrainWork(task="full", batch=1, seq=2048))
    assert parts["logits"] == pytest.approx(2048 * 128_256 * 6)


def test_overheads_are_overridable() -> None:
    work = TrainWork(task="lora", overheads=Overheads(cuda_context_bytes=0, fragmentation=0))
    parts = _mem(work)
    workspace = 32 * 2**20
    assert parts["overhead"] == pytest.approx(workspace)


def test_gqa_kv_cache_per_token() -> None:
    # Llama-3.1-8B: 32 layers x 2 x 8 KV heads x 128 x 2 bytes = 131,072 B per token.
    assert kv_bytes_per_token(LLAMA8, 2, 4096) == 131_072
    assert kv_bytes_per_token(LLAMA8, 1, 4096) == 65_536  # fp8 KV halves it
    assert kv_bytes_per_token(LLAMA8, 2, 4096, tp=2) == 65_536


def test_mla_caches_the_latent() -> None:
    """DeepSeek-V3: (512 + 64) x 2 bytes per layer per token, 61 layers (DeepSeek-V2 §2.1)."""
    ds = load_model("deepseek-v3").spec
    assert kv_bytes_per_token(ds, 2, 4096) == 61 * 576 * 2


def test_sliding_window_layers_cap_the_cache() -> None:
    gemma = load_model("gemma-2-9b").spec
    short = kv_bytes_per_token(gemma, 2, 4096)
    long = kv_bytes_per_token(gemma, 2, 65536)
    assert long < short  # per token, the local layers' share shrinks as context grows


def test_inference_weight_formats() -> None:
    bf16 = inference_memory(LLAMA8, InferWork(weight_format="bf16")).breakdown["weights"]
    awq = inference_memory(LLAMA8, InferWork(weight_format="awq-4bit-g128")).breakdown["weights"]
    q4 = inference_memory(LLAMA8, InferWork(weight_format="gguf-q4_k_m")).breakdown["weights"]
    assert bf16 == pytest.approx(2 * P8)
    assert awq < 0.4 * bf16
    # llama.cpp: Llama-3-8B Q4_K_M is 4.58 GiB (4.89 bits per weight over the whole file).
    assert q4 == pytest.approx(4.58 * GiB, rel=0.02)


def test_fit_finds_largest_batch_and_best_format() -> None:
    fit = fit_training(LLAMA8, TrainWork(task="qlora"), "rtx-4090", 24 * GiB)
    assert fit.fits and fit.max_batch >= 1
    bigger = training_memory(LLAMA8, TrainWork(task="qlora", batch=fit.max_batch + 1))
    assert bigger.total_bytes > 24 * GiB
    at_max = training_memory(LLAMA8, TrainWork(task="qlora", batch=fit.max_batch))
    assert at_max.total_bytes <= 24 * GiB
    seventy = load_model("llama-3.1-70b").spec
    inf = fit_inference(seventy, InferWork(), "h100", 80 * GiB)
    assert not inf.fits and inf.best_format in ("fp8", "int8", "gguf-q8_0", "gguf-q6_k")


def test_engine_reservation_limits_usable_memory() -> None:
    full = fit_inference(LLAMA8, InferWork(context=8192), "h100", 80 * GiB)
    vllm = fit_inference(
        LLAMA8, InferWork(context=8192, gpu_memory_utilization=0.5), "h100", 80 * GiB
    )
    assert vllm.usable_bytes == 40 * GiB and vllm.max_batch < full.max_batch


def test_bad_workloads_raise_one_sentence() -> None:
    with pytest.raises(ValueError, match="--zero"):
        Parallelism(zero=4)
    with pytest.raises(ValueError, match="--batch"):
        TrainWork(batch=0)
    with pytest.raises(ValueError, match="--task"):
        TrainWork(task="infer")
    with pytest.raises(ValueError, match="unknown weight format"):
        inference_memory(LLAMA8, InferWork(weight_format="q9"))
