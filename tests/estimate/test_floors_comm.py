"""Physical floors of the step (issue 41), over random models, layouts, cards and networks: no
step is shorter than the bytes its data-parallel collectives must move per GPU at the wires'
full rate (the compute can hide them, never shorten them); more data-parallel GPUs never make a
ZeRO-3 gather faster across a switch or across nodes; the vectorized planner computes what the
scalar path computes on the same layout."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.estimate.data_parallel import fsdp_exposed_s
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import (
    FLOORS,
    Case,
    cases,
    data_parallel_floor_s,
    one_layout,
    tensor_parallel_floor_s,
    wire_floor_s,
)

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")


@settings(FLOORS, max_examples=2500)
@given(cases())
def test_no_step_beats_its_collectives_on_the_wire(case: Case) -> None:
    """Step time >= the data-parallel (and, apart, the tensor-parallel) bytes per GPU over the
    slowest link they cross (wire rate, no latency): compute overlaps collectives but cannot
    make them shorter. This is what the
    70B-on-512-A100 ZeRO-3 question broke by a factor of ten in the issue's report."""
    result = training_perf(case.spec, case.work, case.device)
    floor = data_parallel_floor_s(case)
    assert result.step_time_s >= floor * (1 - 1e-9)
    # Tensor-parallel all-reduces run on their own link, possibly beside the data-parallel ones.
    assert result.step_time_s >= tensor_parallel_floor_s(case) * (1 - 1e-9)
    # And the exposed communication is at least what the compute and memory time cannot cover.
    busy = result.breakdown_s["compute"] + result.breakdown_s["memory"]
    assert result.breakdown_s["communication"] >= (floor - busy) * (1 - 1e-9)


def test_the_issue_70b_on_512_a100s_pays_its_gathers() -> None:
    """Llama-3.1-70B, ZeRO-3 over 512 A100s on HDR (8 NICs a node): each of the >= 3 x 141 GB
    collectives must enter every node through its 8 x 25 GB/s, >= 2 s a step at the wire
    rate (2.08 s); the model charges at least that in collectives and hides them behind ~10 s of
    compute only phase by phase."""
    from tests.estimate.floors import device, preset

    spec = preset("llama-3.1-70b")
    work = TrainWork(
        task="pretrain", batch=1, seq=4096, recompute="full", parallel=Parallelism(dp=512, zero=3)
    )
    dev = device("a100-sxm-80gb", "ib-hdr", None)
    net = dev.network
    params = 70.6e9 * 2
    assert 3 * wire_floor_s(net, params, 512, 1) > 2.0
    # Without compute to hide behind, the collectives are exposed whole: >= the floor.
    result = training_perf(spec, work, dev)
    link = net.link_for(512)
    exposed = fsdp_exposed_s(
        work=work,
        weight_bytes=params,
        grad_bytes=params,
        root_bytes=0.0,
        units=spec.num_layers,
        group=512,
        bandwidth=link.effective_bytes_per_s * link.gather_share,
        ring_latency=net.ring_latency(512),
        base=link.base_latency_s,
        per_micro_s=0.0,
        replica_s=0.0,
        root_s=0.0,
        micro_batches=1,
        syncs=1,
        backward_passes=2,
    )
    assert exposed >= 4 * wire_floor_s(net, params, 512, 1)
    assert result.step_time_s >= exposed


@settings(FLOORS, max_examples=2000)
@given(cases(zero=(3,)), st.sampled_from((2, 4, 8)))
def test_more_data_parallel_gpus_never_shrink_a_zero3_gather(case: Case, factor: int) -> None:
    """The time of one step's ZeRO-3 collectives (no compute to hide behind) never falls when the
    shard group grows, through a switch or across nodes. (A small group on a full mesh inside a
    node, AMD's xGMI, is the exception physics allows: a larger group reaches more peer
    links.)"""
    work, net = case.work, case.device.network
    par = work.parallel
    stride = par.tp * par.pp
    small = par.zero_group
    large = small * factor

    def collectives(group: int) -> float:
        link = net.link_for(group, stride)
        return float(
            fsdp_exposed_s(
                work=work,
                weight_bytes=1e10,
                grad_bytes=1e10,
                root_bytes=0.0,
                units=case.spec.num_layers,
                group=group,
                bandwidth=link.effective_bytes_per_s * link.gather_share,
                ring_latency=net.ring_latency(group, stride),
                base=link.base_latency_s,
                per_micro_s=0.0,
                replica_s=0.0,
                root_s=0.0,
                micro_batches=work.grad_accum,
                syncs=work.grad_accum,
                backward_passes=1,
            )
        )

    # On a mesh a small group inside a node reaches only its peers' links (2 MI300Xs: one
    # 64 GB/s link); a larger group, in the node or across nodes, reaches more of them.
    small_on_mesh = net.intra.per_peer_bytes_per_s > 0 and small * stride <= net.gpus_per_node
    if small > 1 and not small_on_mesh:
        assert collectives(large) >= collectives(small) * (1 - 1e-12)


@settings(FLOORS, max_examples=1500)
@given(st.lists(cases(), min_size=1, max_size=1))
def test_vector_planner_equals_scalar_on_random_layouts(drawn: list[Case]) -> None:
    """The planner's vectorized path and the scalar path agree on every layout the floors draw
    (networks, HSDP groups and node sizes test_vector.py does not vary)."""
    case = drawn[0]
    par = case.work.parallel
    lay = one_layout(case)
    base = replace(case.work, parallel=Parallelism(shard=par.shard, ep=par.ep))
    speed = vector.train_speed(case.spec, base, lay, case.device)
    scalar = training_perf(case.spec, case.work, case.device)
    assert speed["step_time_s"][0] == pytest.approx(scalar.step_time_s, rel=1e-9)
    assert speed["communication_s"][0] == pytest.approx(
        scalar.breakdown_s["communication"], rel=1e-9, abs=1e-12
    )
