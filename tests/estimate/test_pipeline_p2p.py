"""Pipeline stage transfers and bubbles (issue 41): the fill and drain wait on a transfer per
hop, interleaving multiplies the boundaries and Megatron overlaps them, vectorized == scalar."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.comm import pipeline_p2p_s
from suanli.estimate.device import device_for
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model
from tests.estimate.floors import FLOORS, Case, cases

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")


def _hop_floor_s(case: Case) -> float:
    """One stage-to-stage send at the wire's full rate: ``b·s·h·bytes/tp`` through one NIC when
    the pipeline's neighbours sit on different nodes (no efficiency, no latency)."""
    par = case.work.parallel
    net = case.device.network
    nbytes = case.work.batch * case.work.seq * case.spec.hidden_size * case.work.tensor_bytes
    nbytes /= par.tp
    if par.pp * par.tp <= net.gpus_per_node:
        return nbytes / net.intra.for_group(2).bandwidth_bytes_per_s
    return nbytes / net.inter.bandwidth_bytes_per_s


@FLOORS
@given(cases(zero=(0, 1)), st.sampled_from((1, 2, 4)))
def test_bubble_waits_on_each_hops_transfer(case: Case, vpp: int) -> None:
    """The fill and drain cross ``p - 1`` boundaries each way, a transfer at the wire's rate at
    the least: the bubble is never shorter than that, and never shorter than ``(p-1)/vpp`` of
    the busy micro-batch time."""
    par = case.work.parallel
    if par.pp <= 1:
        return
    work = replace(case.work, parallel=replace(par, vpp=vpp))
    perf = training_perf(case.spec, work, case.device)
    bubble = perf.breakdown_s["bubble"]
    assert bubble >= 2 * (par.pp - 1) * _hop_floor_s(case) * (1 - 1e-9)
    if vpp == 1 and perf.comm_detail_s["pipeline_p2p"] > 0:
        # Without interleaving 1F1B blocks on its sends: 2 per micro-batch at the wire's rate.
        floor = 2 * work.grad_accum * _hop_floor_s(case)
        assert perf.comm_detail_s["pipeline_p2p"] >= floor * (1 - 1e-9)


@FLOORS
@given(cases(zero=(0, 1)))
def test_bubble_shrinks_with_chunks_and_its_share_with_micro_batches(case: Case) -> None:
    """More model chunks per GPU shorten the bubble; more micro-batches shrink its share of the
    step (Narayanan et al. 2021 §2.2)."""
    par = case.work.parallel
    if par.pp <= 1:
        return
    bubbles = []
    for vpp in (1, 2, 4):
        work = replace(case.work, parallel=replace(par, vpp=vpp))
        bubbles.append(training_perf(case.spec, work, case.device).breakdown_s["bubble"])
    assert bubbles[0] > bubbles[1] > bubbles[2]
    shares = []
    for m in (1, 4, 32):
        perf = training_perf(case.spec, replace(case.work, grad_accum=m), case.device)
        shares.append(perf.breakdown_s["bubble"] / perf.step_time_s)
    assert shares[0] > shares[1] > shares[2]


def test_interleaved_transfers_overlap_only_up_to_a_chunks_forward() -> None:
    """Blocking without interleaving; with it, ``vpp`` times the transfers, of which only what
    outlasts a chunk's forward (a third of its time) shows."""
    assert pipeline_p2p_s(0.001, 0.3, 1, 8) == pytest.approx(2 * 0.001 * 8)
    # 0.3 s a micro-batch over 2 chunks: a chunk's forward is 50 ms, a 1 ms send hides.
    assert pipeline_p2p_s(0.001, 0.3, 2, 8) == 0.0
    # A 60 ms send outlasts it by 10 ms, 2 x 2 times per micro-batch.
    assert pipeline_p2p_s(0.06, 0.3, 2, 8) == pytest.approx(2 * 2 * 0.01 * 8)
    hops = np.array([0.001, 0.06])
    assert np.allclose(pipeline_p2p_s(hops, 0.3, 2, 8), [0.0, 0.32])


@pytest.mark.parametrize("vpp", [2, 4])
@pytest.mark.parametrize("gpu", ["h100", "a100-sxm-80gb"])
def test_vector_equals_scalar_interleaved(vpp: int, gpu: str) -> None:
    """The vectorized planner charges interleaved pipelines exactly as the scalar path."""
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu(gpu, bundled_gpus()), "bf16", inter_node="ib-hdr")
    base = TrainWork(task="pretrain", seq=4096, parallel=Parallelism(vpp=vpp))
    rng = random.Random(41)
    rows = [
        {
            "tp": rng.choice([1, 2, 4, 8]),
            "pp": rng.choice([2, 4, 8]),
            "dp": rng.choice([1, 2, 16, 64]),
            "zero": rng.choice([0, 1]),
            "batch": rng.choice([1, 2]),
            "grad_accum": rng.choice([1, 8, 32]),
            "sp": 0,
        }
        for _ in range(30)
    ]
    lay = vector.Layouts.of(**{k: [r[k] for r in rows] for k in rows[0]})
    speed = vector.train_speed(spec, base, lay, device)
    for i, r in enumerate(rows):
        par = Parallelism(dp=r["dp"], tp=r["tp"], pp=r["pp"], zero=r["zero"], vpp=vpp)
        work = replace(base, parallel=par, batch=r["batch"], grad_accum=r["grad_accum"])
        scalar = training_perf(spec, work, device)
        assert speed["step_time_s"][i] == pytest.approx(scalar.step_time_s, rel=1e-9)
        assert speed["bubble_s"][i] == pytest.approx(scalar.breakdown_s["bubble"], rel=1e-9)
