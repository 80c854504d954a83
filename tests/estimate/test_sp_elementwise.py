"""Without sequence parallelism every tensor-parallel rank repeats the norms, residual adds and
residual dropouts on whole hidden vectors (Korthikanti et al. 2022, §4.2.2); with ``--sp`` they
split over the group like the rest (docs/speed.md, "Element-wise work every tensor-parallel
rank repeats without --sp")."""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import elementwise_seconds, replicated_op_bytes, training_op_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

H100 = device_for(find_gpu("h100", bundled_gpus()), "bf16")


def _work(tp: int, sp: bool, **extra: object) -> TrainWork:
    return TrainWork(
        task="pretrain",
        batch=1,
        seq=4096,
        kernels="fused",
        parallel=Parallelism(tp=tp, sp=sp),
        **extra,
    )


@pytest.mark.parametrize("model", ["llama-3.1-70b", "gpt2", "mixtral-8x7b"])
def test_the_repeated_part_is_the_whole_hidden_vector_ops(model: str) -> None:
    spec = load_model(model).spec
    for dropout in (0.0, 0.1):
        work = _work(8, False, dropout=dropout)
        found = training_op_bytes(spec, work, fused=True)
        whole = replicated_op_bytes(spec, work, fused=True)
        assert whole["norm"] == found["norm"] and whole["add"] == found["add"]
        assert 0 <= whole["dropout"] <= found["dropout"]
        assert (whole["dropout"] > 0) == (dropout > 0)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_without_sp_the_ranks_repeat_it_and_with_sp_they_split_it(tp: int) -> None:
    spec = load_model("llama-3.1-70b").spec
    model = H100.gemm_model

    def seconds(t: int, sp: bool) -> float:
        work = _work(t, sp)
        return float(elementwise_seconds(spec, work, H100.bandwidth, model, 80, 4096, t))

    assert seconds(tp, False) > seconds(tp, True)
    # With --sp more ranks shrink it; without, what sequence parallelism would save grows with
    # the ranks (the repeated part stays whole while the split part shrinks).
    assert seconds(2 * tp, True) < seconds(tp, True)
    assert seconds(2 * tp, False) - seconds(2 * tp, True) > seconds(tp, False) - seconds(tp, True)
    # One GPU has nothing to repeat: the same either way.
    one = seconds(1, False)
    assert (
        float(elementwise_seconds(spec, _work(1, False), H100.bandwidth, model, 80, 4096, 1)) == one
    )


def test_a_step_without_sp_is_never_faster() -> None:
    spec = load_model("llama-3.1-70b").spec
    plain = training_perf(spec, _work(8, False), H100)
    split = training_perf(spec, _work(8, True), H100)
    assert plain.breakdown_s["memory"] > split.breakdown_s["memory"]


@pytest.mark.parametrize(
    ("model", "one_kernel"), [("gpt2", True), ("mpt-7b", True), ("llama-3.1-8b", False)]
)
def test_a_layernorm_is_one_kernel_even_in_eager_code(model: str, one_kernel: bool) -> None:
    """``aten::native_layer_norm`` reads and writes the row once and launches once; transformers'
    RMSNorm is written op by op (docs/speed.md, "LayerNorm is one kernel in eager PyTorch")."""
    from suanli.estimate.elementwise import elementwise_kernels_per_layer

    spec = load_model(model).spec
    eager = TrainWork(task="pretrain", kernels="eager")
    fused = TrainWork(task="pretrain", kernels="fused")
    eager_norm = training_op_bytes(spec, eager, fused=False)["norm"]
    fused_norm = training_op_bytes(spec, fused, fused=True)["norm"]
    assert (eager_norm == fused_norm) == one_kernel
    assert eager_norm >= fused_norm
    # The eager layer launches five more kernels a norm where the norm is written op by op.
    extra = elementwise_kernels_per_layer(spec, eager) - elementwise_kernels_per_layer(spec, fused)
    assert (extra >= 5 * spec.norm.per_layer) == (not one_kernel)
