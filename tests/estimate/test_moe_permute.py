"""MoE routing and token permutation as memory-bound kernels (docs/speed.md, "Routing and token
permutation")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.estimate.expert_parallel import moe_kernels_per_layer, moe_op_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.spec import ModelSpec
from tests.estimate.floors import device, preset

QWEN = preset("qwen3-30b-a3b")


def _top(spec: ModelSpec, k: int) -> ModelSpec:
    assert spec.moe is not None
    return replace(spec, moe=replace(spec.moe, experts_per_token=k))


def _work(ep: int = 8, **kw: object) -> TrainWork:
    return TrainWork(task="pretrain", seq=4096, parallel=Parallelism(dp=8, ep=ep), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("dispatcher", ["alltoall", "deepep"])
def test_permute_bytes_grow_linearly_with_top_k(fused: bool, dispatcher: str) -> None:
    """Every copy is k rows of width h: each extra routed expert adds the same bytes, at least
    a write in permute and a read in unpermute (2·h·b)."""
    work = _work(ep_dispatcher=dispatcher)
    row = QWEN.hidden_size * work.tensor_bytes
    sizes = [moe_op_bytes(_top(QWEN, k), work, fused=fused)["moe_permute"] for k in (1, 2, 4, 8)]
    ks = (1, 2, 4, 8)
    steps = [(sizes[i + 1] - sizes[i]) / (ks[i + 1] - ks[i]) for i in range(3)]
    assert steps == pytest.approx([steps[0]] * 3)
    assert steps[0] >= 2 * row


def test_fused_never_moves_more_than_eager_and_dense_models_move_nothing() -> None:
    for ep in (1, 8):
        fused, eager = (
            moe_op_bytes(QWEN, _work(ep), fused=True),
            moe_op_bytes(QWEN, _work(ep), fused=False),
        )
        assert all(fused[kind] <= eager[kind] for kind in fused)
    dense = preset("llama-3.1-8b")
    assert moe_op_bytes(dense, _work(1), fused=True) == {"moe_permute": 0.0, "router": 0.0}
    assert moe_kernels_per_layer(dense, _work(1)) == 0


def test_only_the_all_to_all_dispatcher_regroups_received_rows() -> None:
    """Permute 2 and its unsort: EP > 1 with more than one local expert, Megatron's all-to-all
    dispatcher only (DeepEP sorts inside its kernels)."""
    plain = moe_op_bytes(QWEN, _work(8), fused=True)["moe_permute"]
    deep = moe_op_bytes(QWEN, _work(8, ep_dispatcher="deepep"), fused=True)["moe_permute"]
    alone = moe_op_bytes(QWEN, _work(1), fused=True)["moe_permute"]
    assert deep == alone < plain
    assert moe_kernels_per_layer(QWEN, _work(8)) > moe_kernels_per_layer(QWEN, _work(1))


def test_the_step_pays_at_least_the_copies_at_the_bandwidth() -> None:
    """The permutation's bytes, forward and backward, over every layer and micro-batch, at the
    card's achievable bandwidth: a floor under the step's memory time."""
    dev = device("h100-sxm-80gb", None, 8)
    work = _work(8, batch=1, grad_accum=4)
    perf = training_perf(QWEN, work, dev)
    copies = moe_op_bytes(QWEN, work, fused=work.fused_kernels)["moe_permute"]
    floor = 2 * copies * QWEN.num_layers * 4096 * work.grad_accum / dev.bandwidth
    assert perf.breakdown_s["memory"] >= floor
