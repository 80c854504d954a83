"""The optimizer step's memory traffic, fused or torch.optim's foreach (docs/speed.md, 'The
optimizer step: fused or foreach'): the foreach count is checked against a pass list written
here from torch/optim/adam.py ``_multi_tensor_adam``, not against the estimator's own table."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.answers.request import WorkRequest, apply_framework, build_work
from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import optimizer_step_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.params import count_params
from suanli.models.resolve import load_model

from ..cli.test_cli import run

# torch/optim/adam.py (v2.13.0) _multi_tensor_adam, AdamW (decoupled weight decay), one line per
# _foreach_ kernel: the tensors it reads, then those it writes. "g" named twice by addcmul
# (grads, grads) is one load from memory.
TORCH_FOREACH_ADAMW = [
    ("_foreach_mul_(params, 1 - lr * weight_decay)", "p", "p"),
    ("_foreach_lerp_(exp_avgs, grads, 1 - beta1)", "m g", "m"),
    ("_foreach_mul_(exp_avg_sqs, beta2)", "v", "v"),
    ("_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)", "v g", "v"),
    ("exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)", "v", "d"),
    ("_foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)", "d", "d"),
    ("_foreach_add_(exp_avg_sq_sqrt, eps)", "d", "d"),
    ("_foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size)", "p m d", "p"),
]


def _passes_bytes(width: dict[str, int]) -> int:
    return sum(
        width[t] for _, reads, writes in TORCH_FOREACH_ADAMW for t in (reads + " " + writes).split()
    )


def test_foreach_mixed_precision_is_the_pass_count_plus_one_cast() -> None:
    # Mixed: fp32 parameter, gradient (autograd gives it the parameter's dtype) and moments;
    # then one cast of the fp32 parameter to bf16 (read 4, write 2).
    fp32 = dict.fromkeys("pgmvd", 4)
    expected = _passes_bytes(fp32) + 4 + 2
    assert expected == 86
    work = TrainWork(task="full", optimizer_impl="foreach")
    assert optimizer_step_bytes(work, 1e6) == pytest.approx(expected * 1e6)
    fused = optimizer_step_bytes(replace(work, optimizer_impl="fused"), 1e6)
    assert fused == pytest.approx(28e6)
    assert 2.9 < expected * 1e6 / fused < 3.2


@pytest.mark.parametrize(("dtype", "size"), [("bf16", 2), ("fp16", 2), ("fp32", 4)])
def test_foreach_pure_precision_is_the_pass_count(dtype: str, size: int) -> None:
    precision = "mixed" if dtype == "fp32" else "pure"  # fp32 storage is pure whatever it says
    work = TrainWork(task="full", dtype=dtype, precision=precision, optimizer_impl="foreach")
    expected = _passes_bytes(dict.fromkeys("pgmvd", size))
    assert expected == 20 * size
    assert optimizer_step_bytes(work, 1.0) == expected
    assert optimizer_step_bytes(replace(work, optimizer_impl="fused"), 1.0) == 7 * size


def test_offloaded_and_non_adamw_optimizers_ignore_the_implementation() -> None:
    """DeepSpeed's CPU Adam is one fused pass; SGD, Lion and the 8-bit optimizers keep theirs."""
    for work in (
        TrainWork(task="full", offload_optimizer=True),
        TrainWork(task="full", optimizer="sgd_momentum"),
        TrainWork(task="full", optimizer="adamw8bit"),
        TrainWork(task="full", optimizer="lion", precision="pure"),
    ):
        fused = optimizer_step_bytes(work, 1e9)
        assert optimizer_step_bytes(replace(work, optimizer_impl="foreach"), 1e9) == fused


def test_a_bad_value_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValueError, match=r"^--optimizer-impl 'loop' is not one of fused, foreach$"):
        TrainWork(optimizer_impl="loop")
    with pytest.raises(ValueError, match="--optimizer-impl"):
        build_work(WorkRequest(task="full", optimizer_impl="for-loop"))
    out = run("perf", "llama-3.2-1b", "--task", "full", "--gpu", "h100", "--optimizer-impl", "x")
    assert out.returncode != 0
    assert "--optimizer-impl" in out.stderr and "foreach" in out.stderr


def test_framework_defaults_apply_and_the_user_wins() -> None:
    plain = apply_framework(WorkRequest(task="full"))
    assert plain.optimizer_impl == "fused"  # transformers' adamw_torch_fused (torch >= 2.8)
    for fw in ("megatron", "deepspeed", "gpt-neox", "torchtitan", "torchtune"):
        applied = apply_framework(WorkRequest(task="full", framework=fw))
        assert applied.optimizer_impl == "fused", fw
        assert "optimizer_impl" in (applied.explicit or ())
    mine = apply_framework(
        WorkRequest(task="full", framework="torchtitan", optimizer_impl="foreach")
    )
    assert mine.optimizer_impl == "foreach"
    assert build_work(mine).optimizer_impl == "foreach"  # type: ignore[union-attr]


def test_the_step_grows_by_the_extra_bytes_at_the_cards_bandwidth() -> None:
    """One GPU, full fine-tune: the step's memory time grows by (86 - 28) bytes per parameter;
    under ZeRO-3 over 8 GPUs by an eighth of that; LoRA's adapters barely move it."""
    spec = load_model("llama-3.2-1b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    params = count_params(spec).total
    fused = TrainWork(task="full", seq=2048)
    foreach = replace(fused, optimizer_impl="foreach")
    a, b = training_perf(spec, fused, device), training_perf(spec, foreach, device)
    grown = b.breakdown_s["memory"] - a.breakdown_s["memory"]
    assert grown == pytest.approx((86 - 28) * params / device.bandwidth, rel=1e-6)
    assert b.step_time_s > a.step_time_s
    zero3 = Parallelism(dp=8, zero=3)
    a8 = training_perf(spec, replace(fused, parallel=zero3), device)
    b8 = training_perf(spec, replace(foreach, parallel=zero3), device)
    grown8 = b8.breakdown_s["memory"] - a8.breakdown_s["memory"]
    assert grown8 == pytest.approx(grown / 8, rel=1e-6)
    lora = replace(fused, task="lora")
    lora_a = training_perf(spec, lora, device).step_time_s
    lora_b = training_perf(spec, replace(lora, optimizer_impl="foreach"), device).step_time_s
    assert lora_a <= lora_b < lora_a * 1.01


def test_vector_planner_follows_the_implementation() -> None:
    pytest.importorskip("numpy")
    vector = pytest.importorskip("suanli.estimate.vector")
    spec = load_model("llama-3.2-1b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    base = TrainWork(task="full", seq=2048, optimizer_impl="foreach")
    rows = [(1, 1, 1, 0, 1), (2, 1, 4, 1, 2), (1, 2, 8, 3, 1), (2, 2, 2, 2, 4)]
    lay = vector.Layouts.of(
        tp=[r[0] for r in rows],
        pp=[r[1] for r in rows],
        dp=[r[2] for r in rows],
        zero=[r[3] for r in rows],
        batch=[r[4] for r in rows],
        grad_accum=[1] * len(rows),
        sp=[0] * len(rows),
    )
    speed = vector.train_speed(spec, base, lay, device)
    for i, (tp, pp, dp, zero, batch) in enumerate(rows):
        work = replace(base, batch=batch, parallel=Parallelism(tp=tp, pp=pp, dp=dp, zero=zero))
        scalar = training_perf(spec, work, device)
        assert speed["step_time_s"][i] == pytest.approx(scalar.step_time_s, rel=1e-9)
