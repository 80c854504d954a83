"""Invariants of the MoE training step over random layouts (Hypothesis): the vectorized planner
equals the scalar path with expert, expert-tensor and dispatcher settings drawn; whole experts
(ETP 1) never wait longer on the all-to-all than experts split over TP; the step never beats
its token copies at the card's bandwidth (docs/speed.md, "Routing and token permutation",
"Expert tensor parallelism")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.estimate.expert_parallel import moe_op_bytes
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import CARDS, FLOORS, NETWORKS, Case, device, one_layout, preset

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")

MOE = ("qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v2-lite", "qwen3-235b-a22b")


@st.composite
def moe_cases(draw: st.DrawFn) -> Case:
    """A random MoE training job: model, tp/pp/dp/ep/etp, dispatcher, card and network."""
    spec = preset(draw(st.sampled_from(MOE)))
    heads = spec.attention.num_heads
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if heads % t == 0]))
    assert spec.moe is not None
    ep = draw(st.sampled_from([e for e in (1, 2, 4, 8, 16, 32) if e <= spec.moe.num_experts]))
    parallel = Parallelism(
        dp=draw(st.sampled_from((8, 16, 32, 64))),
        tp=tp,
        pp=draw(st.sampled_from((1, 2, 4))),
        ep=ep,
        etp=draw(st.sampled_from((0, 1, 2))),
        zero=draw(st.sampled_from((0, 1, 3))),
        sp=tp > 1 and draw(st.booleans()),
    )
    work = TrainWork(
        task="pretrain",
        batch=draw(st.sampled_from((1, 2, 4))),
        seq=draw(st.sampled_from((1024, 4096))),
        grad_accum=draw(st.sampled_from((1, 4, 16))),
        recompute=draw(st.sampled_from(("none", "full", "selective"))),
        kernels=draw(st.sampled_from(("eager", "fused"))),
        dtype=draw(st.sampled_from(("bf16", "fp8"))),
        ep_dispatcher=draw(st.sampled_from(("alltoall", "deepep"))),
        parallel=parallel,
    )
    card = draw(st.sampled_from([c for c in CARDS if c not in ("rtx-4090-24gb", "l40s")]))
    per_node = draw(st.sampled_from((None, 4, 8)))
    return Case(spec, work, card, device(card, draw(st.sampled_from(NETWORKS)), per_node))


@settings(FLOORS, max_examples=300)
@given(moe_cases())
def test_vector_planner_equals_scalar_on_moe_layouts(case: Case) -> None:
    par = case.work.parallel
    base = replace(case.work, parallel=Parallelism(ep=par.ep, etp=par.etp))
    speed = vector.train_speed(case.spec, base, one_layout(case), case.device)
    scalar = training_perf(case.spec, case.work, case.device)
    assert speed["step_time_s"][0] == pytest.approx(scalar.step_time_s, rel=1e-9)
    assert speed["communication_s"][0] == pytest.approx(
        scalar.breakdown_s["communication"], rel=1e-9, abs=1e-12
    )


@settings(FLOORS, max_examples=300)
@given(moe_cases())
def test_whole_experts_never_wait_longer_on_the_all_to_all(case: Case) -> None:
    par = case.work.parallel
    whole = replace(case.work, parallel=replace(par, etp=1))
    split = replace(case.work, parallel=replace(par, etp=0))
    a2a = "expert_all_to_all"
    ones = training_perf(case.spec, whole, case.device).comm_detail_s.get(a2a, 0.0)
    tps = training_perf(case.spec, split, case.device).comm_detail_s.get(a2a, 0.0)
    assert ones <= tps * (1 + 1e-9) + 1e-12


@settings(FLOORS, max_examples=200)
@given(moe_cases())
def test_the_step_never_beats_its_token_copies(case: Case) -> None:
    """Forward and backward copies of the routed tokens over the GPU's layers and micro-batches,
    at the card's achievable bandwidth, are a floor under the step's memory time."""
    work, spec = case.work, case.spec
    par = work.parallel
    copies = moe_op_bytes(spec, work, fused=work.fused_kernels)["moe_permute"]
    layers = -(-spec.num_layers // par.pp)
    tokens = work.batch * work.seq * work.grad_accum
    floor = 2 * copies * layers * tokens / par.tp / case.device.bandwidth
    perf = training_perf(spec, work, case.device)
    assert perf.breakdown_s["memory"] >= floor * (1 - 1e-9)
