"""DeepEP's per-node deduplication of MoE dispatches (``--ep-dispatcher deepep``)."""

from __future__ import annotations

import random

import pytest

from suanli.estimate.expert_parallel import expert_all_to_all_s, node_copy_share
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset

SPEC = preset("qwen3-235b-a22b")


@pytest.mark.parametrize(("ep", "per_node"), [(32, 8), (32, 4), (64, 8), (16, 2)])
def test_the_share_is_the_sampled_node_crossings_over_the_copies(ep: int, per_node: int) -> None:
    """Route 20,000 tokens to k distinct experts of E spread evenly over the nodes and count
    the remote nodes each reaches: the share is that count over k (ep - m)/ep."""
    assert SPEC.moe is not None
    experts, k = SPEC.moe.num_experts, SPEC.moe.experts_per_token
    nodes = -(-ep // per_node)
    rng = random.Random(ep * 100 + per_node)
    crossings = 0
    for _ in range(20_000):
        reached = {e * nodes // experts for e in rng.sample(range(experts), k)}
        crossings += len(reached - {0})  # the token's own node is node 0
    sampled = crossings / 20_000 / (k * (ep - per_node) / ep)
    assert node_copy_share(SPEC, ep, per_node) == pytest.approx(sampled, rel=0.02)


def test_inside_one_node_and_for_dense_models_nothing_changes() -> None:
    assert node_copy_share(SPEC, 8, 8) == 1.0
    assert node_copy_share(preset("llama-3.1-8b"), 32, 8) == 1.0


def test_deepep_never_sends_more_over_the_nic_nor_beats_the_nvlink_floor() -> None:
    net = device("h100-sxm-80gb", "ib-ndr", None).network
    nbytes = 1e8
    for ep, tp in ((8, 1), (16, 1), (32, 2), (64, 1)):
        plain = expert_all_to_all_s(net, nbytes, ep, tp)
        dedup = expert_all_to_all_s(net, nbytes, ep, tp, spec=SPEC, dispatcher="deepep")
        assert dedup <= plain * (1 + 1e-12)
        assert dedup > 0


def test_the_training_step_charges_the_deduplicated_all_to_all() -> None:
    base = dict(task="pretrain", batch=1, seq=4096, grad_accum=8, recompute="full")
    par = Parallelism(dp=32, tp=2, pp=4, ep=32, zero=1)
    dev = device("h100-sxm-80gb", "ib-ndr", None)
    plain = training_perf(SPEC, TrainWork(**base, parallel=par), dev)
    deep = training_perf(SPEC, TrainWork(**base, parallel=par, ep_dispatcher="deepep"), dev)
    assert deep.comm_detail_s["expert_all_to_all"] < plain.comm_detail_s["expert_all_to_all"]
    assert deep.breakdown_s["compute"] == pytest.approx(plain.breakdown_s["compute"])


def test_an_unknown_dispatcher_is_refused_in_one_sentence() -> None:
    with pytest.raises(ValueError, match=r"--ep-dispatcher 'nccl' is not one of alltoall, deepep"):
        TrainWork(task="pretrain", ep_dispatcher="nccl")
