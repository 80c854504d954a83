"""The 2023 Triton FlashAttention kernel (``--attention triton``): its measured rows, the H100
rate derived from the A100's ratio, the option's refusal on cards it cannot run on, and its
place in the training step."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.answers.perf import PerfRequest, TrainPerfAnswer, perf
from suanli.answers.request import WorkRequest
from suanli.answers.validity import training_lack
from suanli.catalog import bundled_gpus
from suanli.catalog.attention import AttentionPoint, attention_efficiency, attention_points
from suanli.catalog.formats import attention_problem, card_features
from suanli.catalog.gpu import GPU
from suanli.estimate.device import device_for
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import ATTENTION, TrainWork
from suanli.models.resolve import load_model

from ..cli.test_cli import run

A100 = "a100-sxm-80gb"
H100 = "h100-sxm-80gb"
SEQS = {512, 1024, 2048, 4096, 8192, 16384}
GPUS = {g.id: g for g in bundled_gpus()}
#: NVIDIA cards of Ampere and later: the ones the kernel runs on.
RUNS_IT = tuple(
    g
    for g in GPUS.values()
    if g.vendor == "nvidia" and g.form_factor != "cpu" and "flash-attn-2" in card_features(g)
)


def triton_rows() -> list[AttentionPoint]:
    return [p for p in attention_points() if p.kernel == "triton"]


def test_the_rows_are_the_papers_a100_triton_bars_dated_and_sourced() -> None:
    rows = triton_rows()
    assert len(rows) == 72
    for p in rows:
        assert p.gpu_id == A100 and p.dtype == "fp16", p
        fig = {"forward_backward": "Fig. 4(", "forward": "Fig. 5(", "backward": "Fig. 6("}[p.phase]
        assert p.source.startswith("Dao 2023, FlashAttention-2, arXiv:2307.08691, " + fig), p
        assert p.date == "2023-07" and "Triton" in p.note, p
    grid = {(p.phase, p.causal, p.head_dim, p.seq_len) for p in rows}
    assert len(grid) == 72  # every pass, mask, head dim (64, 128) and sequence, once
    assert {p.seq_len for p in rows} == SEQS and {p.head_dim for p in rows} == {64, 128}


def test_forward_backward_bars_agree_with_the_forward_and_backward_bars() -> None:
    # Three figures read separately: a label given to the wrong bar breaks this.
    rows = {(p.phase, p.causal, p.head_dim, p.seq_len): p.tflops for p in triton_rows()}
    for (phase, causal, dim, seq), both in rows.items():
        if phase != "forward_backward":
            continue
        f, b = rows["forward", causal, dim, seq], rows["backward", causal, dim, seq]
        assert 3.5 / (1 / f + 2.5 / b) == pytest.approx(both, rel=0.04), (causal, dim, seq)


def test_triton_is_never_faster_than_flashattention_2_where_both_were_measured() -> None:
    flash2 = {
        (p.phase, p.causal, p.head_dim, p.seq_len): p.tflops
        for p in attention_points()
        if p.kernel == "flash2" and p.gpu_id == A100
    }
    for p in triton_rows():
        assert p.tflops < flash2[p.phase, p.causal, p.head_dim, p.seq_len], p
    # The paper's summary: FlashAttention-2 "around 1.3-1.5x faster than FlashAttention in
    # Triton in the forward pass and around 2x faster in the backward pass".
    for p in triton_rows():
        ratio = flash2[p.phase, p.causal, p.head_dim, p.seq_len] / p.tflops
        assert (1.2 <= ratio <= 1.7) if p.phase == "forward" else ratio >= 1.45


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gpu=st.sampled_from(RUNS_IT),
    seq=st.integers(128, 131072),
    head_dim=st.sampled_from([32, 64, 80, 96, 128, 192, 256]),
    causal=st.booleans(),
    backward=st.booleans(),
)
def test_triton_never_beats_flashattention_2_on_any_card_or_shape(
    gpu: GPU, seq: int, head_dim: int, causal: bool, backward: bool
) -> None:
    peak = gpu.peak_flops("bf16") or gpu.peak_flops("fp16")
    assert peak
    shape = {"seq_len": seq, "head_dim": head_dim, "causal": causal, "backward": backward}
    triton = attention_efficiency(gpu, peak, kernel="triton", **shape)[0]
    flash2 = attention_efficiency(gpu, peak, kernel="flash2", **shape)[0]
    assert 0 < triton < flash2


def test_the_h100_rate_is_flashattention_2_there_times_the_a100_ratio_and_says_so() -> None:
    shape = {"seq_len": 16384, "head_dim": 128, "causal": True, "backward": True}
    a100, h100 = GPUS[A100], GPUS[H100]
    a_peak, h_peak = a100.peak_flops("bf16"), h100.peak_flops("bf16")
    assert a_peak and h_peak
    ratio = 67 / 186  # Fig. 6(d) at 16k: Triton 67, FlashAttention-2 186 TFLOPS
    assert attention_efficiency(a100, a_peak, kernel="triton", **shape)[0] == pytest.approx(
        67e12 / 312e12, rel=1e-3
    )
    flash2 = attention_efficiency(h100, h_peak, kernel="flash2", **shape)[0]
    triton, source = attention_efficiency(h100, h_peak, kernel="triton", **shape)
    assert triton == pytest.approx(flash2 * ratio, rel=1e-3)
    assert "not measured on this generation" in source and A100 in source and "0.36" in source


def test_devices_carry_the_triton_rates_and_the_step_slows_where_attention_dominates() -> None:
    spec = load_model("mpt-7b").spec
    for gpu_id in (A100, H100):
        device = device_for(GPUS[gpu_id], "bf16")
        assert device.triton_attention is not None and "Triton" in device.triton_attention_source
        times = {}
        for attention in ("flash", "triton"):
            work = TrainWork(
                task="pretrain", batch=1, seq=65536, recompute="full", attention=attention
            )
            times[attention] = training_perf(spec, work, device).step_time_s
        # Saved activations as FlashAttention's: no s x s scores.
        flash, triton = (replace(work, attention=a) for a in ("flash", "triton"))
        assert training_memory(spec, triton).total_bytes == training_memory(spec, flash).total_bytes
        assert times["triton"] > 1.3 * times["flash"], gpu_id


def test_the_option_is_declared_and_refused_where_the_kernel_cannot_run() -> None:
    assert "triton" in ATTENTION
    work = TrainWork(batch=1, seq=2048, attention="triton")
    for gpu in GPUS.values():
        problem = attention_problem(gpu, "triton")
        assert (problem is None) == (gpu in RUNS_IT), gpu.id
        assert (training_lack(gpu, work) is None) == (problem is None) or gpu.form_factor == "cpu"
    assert attention_problem(GPUS["mi300x-192gb"], "triton")  # FlashAttention-2 runs there
    assert attention_problem(GPUS["mi300x-192gb"], "flash") is None


def test_cli_refuses_in_one_sentence_and_explains_the_rate() -> None:
    v100 = run(
        "perf", "mpt-7b", "--task", "pretrain", "--gpu", "v100-sxm2-32gb", "--gpus", "8",
        "--zero", "3", "--dtype", "fp16", "--attention", "triton", "--seq", "2048",
    )  # fmt: skip
    assert v100.returncode == 2
    assert "cannot run the Triton FlashAttention kernel" in v100.stderr
    infer = run("perf", "mpt-7b", "--task", "infer", "--gpu", "a100", "--attention", "triton")
    assert infer.returncode == 2 and "--attention applies to" in infer.stderr
    args = ("perf", "mpt-7b", "--task", "pretrain", "--gpu", "h100", "--gpus", "8", "--zero", "3")
    args += ("--seq", "32768", "--batch", "1", "--recompute", "full", "--attention", "triton")
    explained = run(*args, "--explain")
    assert explained.returncode == 0, explained.stderr
    assert "2023 FlashAttention kernel in Triton" in explained.stdout
    doc = json.loads(run(*args, "--json").stdout)
    formula = " ".join(t["formula"] for t in doc["terms"])
    assert "not measured on this generation" in formula


def test_json_answer_matches_the_library_answer() -> None:
    req = WorkRequest(
        task="pretrain", gpus=8, zero=3, seq=32768, batch=1, recompute="full", attention="triton"
    )
    answer = perf(PerfRequest("mpt-7b", req, gpu="a100-sxm-80gb"))
    assert isinstance(answer, TrainPerfAnswer)
    args = ("perf", "mpt-7b", "--task", "pretrain", "--gpu", "a100-sxm-80gb", "--gpus", "8")
    args += ("--zero", "3", "--seq", "32768", "--batch", "1", "--recompute", "full")
    doc = json.loads(run(*args, "--attention", "triton", "--json").stdout)
    assert doc["step_time_s"] == pytest.approx(answer.step_time_s, rel=1e-9)
