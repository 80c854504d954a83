"""Expert parallelism in training (issue 41): each GPU runs its ``E/ep`` experts on the tokens the
whole group routed to them, so the expert GEMMs grow with ``ep`` while the FLOPs per GPU stay; the
all-to-all that feeds them moves ``T·k·h·b`` bytes a direction and, across nodes, leaves through
each GPU's own NIC."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate import expert_parallel
from suanli.estimate.comm import all_to_all_s
from suanli.estimate.device import device_for
from suanli.estimate.expert_parallel import (
    dispatch_bytes,
    expert_all_to_all_s,
    expert_rows_share,
    local_expert_shapes,
)
from suanli.estimate.perf import train_matmul_seconds, training_perf
from suanli.estimate.shapes import linear_shapes
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")

EPS = [1, 2, 4, 8, 16, 32, 64, 128]


def _expert_flops(model: str, ep: int, tokens: int) -> float:
    """Forward FLOPs of one GPU's expert GEMMs per micro-batch, without imbalance."""
    spec = load_model(model).spec
    rows = tokens * expert_rows_share(spec, ep, imbalance=1.0)
    shapes = local_expert_shapes(linear_shapes(spec), spec, ep)
    return sum(2 * rows * s.n_in * s.n_out * s.count for s in shapes if s.kind == "experts")


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "deepseek-v3"])
def test_expert_flops_per_gpu_do_not_depend_on_ep(model: str) -> None:
    """E/ep experts x (T·ep·k/E) rows = T·k rows of expert work on every GPU, at every ep."""
    spec = load_model(model).spec
    assert spec.moe is not None
    one = _expert_flops(model, 1, 4096)
    moe = spec.moe
    width = moe.expert.intermediate_size
    expected = 4096 * moe.experts_per_token * 2 * 3 * spec.hidden_size * width
    assert one == pytest.approx(expected * len(spec.moe_layers), rel=1e-12)
    for ep in EPS:
        assert _expert_flops(model, ep, 4096) == pytest.approx(one, rel=1e-12)


def test_expert_gemm_rows_grow_with_ep() -> None:
    """M of each local expert GEMM: T·k/E at ep 1, ep times that (and the busiest rank's
    imbalance) beyond."""
    spec = load_model("deepseek-v3").spec
    assert spec.moe is not None
    base = spec.moe.experts_per_token / spec.moe.num_experts
    assert expert_rows_share(spec, 1) == base
    imbalance = expert_parallel.LOAD_IMBALANCE
    assert imbalance >= 1.0
    rows = [expert_rows_share(spec, ep) for ep in EPS]
    for ep, share in zip(EPS[1:], rows[1:], strict=True):
        assert share == pytest.approx(base * ep * imbalance, rel=1e-12)
    assert rows == sorted(rows) and rows[-1] > 100 * rows[0]


def test_matmul_time_falls_with_ep_but_not_below_the_flops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same FLOPs in taller GEMMs: never slower than at ep 1 and never faster than the card's
    peak allows (the ep-blind model ran 0.74 s at ep 1, 8 and 64 for this step)."""
    monkeypatch.setattr(expert_parallel, "LOAD_IMBALANCE", 1.0)
    spec = load_model("qwen3-30b-a3b").spec
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    tokens = 4096
    times = []
    for ep in (1, 8, 64):
        work = TrainWork(task="pretrain", seq=4096, parallel=Parallelism(dp=64, ep=ep))
        times.append(train_matmul_seconds(spec, work, device, tokens, 1, spec.num_layers))
    assert times[0] > times[1] >= times[2]
    # Forward, input gradient and weight gradient of the experts alone, at the card's peak.
    floor = 3 * _expert_flops("qwen3-30b-a3b", 64, tokens) / device.peak_flops
    assert times[2] > floor
    assert times[1] < 0.7 * times[0]


def test_dispatch_bytes_and_intra_node_all_to_all() -> None:
    """T·k·h·b / tp bytes a dispatch; inside a node the all-to-all is the reduce-scatter-shaped
    collective of comm.all_to_all_s on the same link."""
    spec = load_model("mixtral-8x7b").spec
    assert spec.moe is not None
    nbytes = dispatch_bytes(8192, spec, 2, 2)
    assert nbytes == 8192 * spec.moe.experts_per_token * spec.hidden_size * 2 / 2
    net = device_for(find_gpu("h100", bundled_gpus()), "bf16").network
    for ep, tp in ((2, 1), (4, 2), (8, 1)):
        expected = all_to_all_s(nbytes, ep, net.link_for(ep, tp))
        assert expert_all_to_all_s(net, nbytes, ep, tp) == pytest.approx(expected, rel=1e-12)
    assert expert_all_to_all_s(net, nbytes, 1, 1) == 0.0


@pytest.mark.parametrize(("ep", "tp"), [(16, 1), (64, 1), (8, 2), (32, 8)])
def test_cross_node_all_to_all_floor(ep: int, tp: int) -> None:
    """Across nodes the bytes bound for other nodes, (ep − m)/ep of them, leave through the GPU's
    share of the node's NICs: never faster than at the NIC's line rate (a ring-style estimate
    that striped one GPU's bytes over all eight NICs ran up to 8x under this)."""
    net = device_for(find_gpu("h100", bundled_gpus()), "bf16").network
    nbytes = 256e6
    m = max(min(ep, net.gpus_per_node // tp), 1)
    nic = net.inter.bandwidth_bytes_per_s * net.nics_per_node / net.gpus_per_node
    floor = (ep - m) / ep * nbytes / nic
    seconds = expert_all_to_all_s(net, nbytes, ep, tp)
    assert seconds >= floor
    assert seconds < 1.5 * floor + 1e-3


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "deepseek-v3", "mixtral-8x7b"])
@pytest.mark.parametrize("gpu", ["h100", "mi300x"])
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_vector_equals_scalar_with_expert_parallelism(model: str, gpu: str, dtype: str) -> None:
    """The vectorized planner computes what training_perf computes at ep inside and across
    nodes, with tensor parallelism spacing the group's ranks."""
    spec = load_model(model).spec
    assert spec.moe is not None
    device = device_for(find_gpu(gpu, bundled_gpus()), dtype)
    rng = random.Random(41)
    for ep in (e for e in (2, 8, 16, 64) if e <= spec.moe.num_experts):
        base = TrainWork(task="pretrain", seq=4096, dtype=dtype, parallel=Parallelism(ep=ep))
        rows = [
            {
                "tp": rng.choice([1, 2, 4, 8]),
                "pp": rng.choice([1, 2, 4, 16]),
                "dp": rng.choice([8, 16, 64]),
                "zero": rng.choice([0, 1, 3]),
                "batch": rng.choice([1, 2, 4]),
                "grad_accum": rng.choice([1, 8]),
                "sp": 0,
            }
            for _ in range(12)
        ]
        lay = vector.Layouts.of(**{k: [r[k] for r in rows] for k in rows[0]})
        speed = vector.train_speed(spec, base, lay, device)
        for i, r in enumerate(rows):
            par = Parallelism(dp=r["dp"], tp=r["tp"], pp=r["pp"], zero=r["zero"], ep=ep)
            work = replace(base, parallel=par, batch=r["batch"], grad_accum=r["grad_accum"])
            scalar = training_perf(spec, work, device)
            assert speed["step_time_s"][i] == pytest.approx(scalar.step_time_s, rel=1e-9)
            assert speed["mfu"][i] == pytest.approx(scalar.mfu(device.peak_flops), rel=1e-9)


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "deepseek-v3", "mixtral-8x7b"])
def test_no_step_shorter_than_its_all_to_all_on_the_wire(model: str) -> None:
    """Nothing overlaps the dispatch and combine yet, so a step lasts at least its four
    all-to-alls per MoE layer of the busiest stage and micro-batch, each at least the bytes bound
    for other nodes over the GPU's NIC share (or, inside a node, over its NVLink at line rate)."""
    spec = load_model(model).spec
    assert spec.moe is not None
    device = device_for(find_gpu("h100", bundled_gpus()), "bf16")
    net = device.network
    rng = random.Random(4141)
    for _ in range(30):
        ep = rng.choice([e for e in (2, 4, 8, 16, 32, 64) if e <= spec.moe.num_experts])
        tp, pp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4])
        par = Parallelism(dp=max(ep, 8), tp=tp, pp=pp, ep=ep)
        work = TrainWork(
            task="pretrain",
            seq=4096,
            batch=rng.choice([1, 2, 4]),
            grad_accum=rng.choice([1, 4]),
            parallel=par,
        )
        nbytes = dispatch_bytes(work.batch * work.seq, spec, work.tensor_bytes, tp)
        if ep * tp <= net.gpus_per_node:
            wire = (ep - 1) / ep * nbytes / net.intra.group_bytes_per_s(ep)
        else:
            m = max(min(ep, net.gpus_per_node // tp), 1)
            nic = net.inter.bandwidth_bytes_per_s * net.nics_per_node / net.gpus_per_node
            wire = (ep - m) / ep * nbytes / nic
        layers = -(-len(spec.moe_layers) // pp)
        floor = 4 * layers * wire * work.grad_accum
        assert training_perf(spec, work, device).step_time_s >= floor
