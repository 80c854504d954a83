"""Random models, layouts, cards and networks for the physical-floor property tests
(tests/estimate/test_floors_*.py), and the floors themselves computed from the wire rates alone
(no bus efficiency, no latency), independently of how the speed model charges a collective."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.comm import Network
from suanli.estimate.device import device_for
from suanli.estimate.perf import Device
from suanli.estimate.sizes import param_split
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model
from suanli.models.spec import ModelSpec

#: Hypothesis settings for the floors: no deadline (the first example of a card builds its
#: tables), examples set per test so the files together run a few thousand in CI.
FLOORS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

PRESETS = ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b", "gpt2", "llama-3.1-405b")
#: NVLink (switch), PCIe with and without peer-to-peer, an xGMI mesh, Hopper and Blackwell.
CARDS = (
    "a100-sxm-80gb",
    "h100-sxm-80gb",
    "b200",
    "l40s",
    "rtx-4090-24gb",
    "mi300x",
    "a100-sxm-40gb",
)
NETWORKS = ("ib-hdr", "ib-ndr", "roce-100g", "roce-400g", "eth-25g", "ib-edr")


@cache
def preset(name: str) -> ModelSpec:
    """A catalog model's spec (loaded once)."""
    return load_model(name).spec


@cache
def synthetic(layers: int, heads: int, kv_heads: int) -> ModelSpec:
    """A Llama-shaped dense model of ``layers`` layers and ``heads`` heads of 128."""
    base = preset("llama-3.1-8b")
    hidden = heads * 128
    intermediate = (hidden * 7 // 2 + 255) // 256 * 256
    assert base.mlp is not None
    return replace(
        base,
        name=f"synthetic-{layers}x{hidden}",
        num_layers=layers,
        hidden_size=hidden,
        attention=replace(base.attention, num_heads=heads, num_kv_heads=kv_heads),
        mlp=replace(base.mlp, intermediate_size=intermediate),
    )


@cache
def device(card: str, inter: str, per_node: int | None) -> Device:
    """The speed model's device for a card on a scale-out network (no saved calibration)."""
    gpu = find_gpu(card, bundled_gpus())
    return device_for(gpu, "bf16", gpus_per_node=per_node, inter_node=inter, auto_calibration=False)


def gpu_memory(card: str) -> int:
    """The card's memory in bytes."""
    return find_gpu(card, bundled_gpus()).memory_bytes


@st.composite
def models(draw: st.DrawFn) -> ModelSpec:
    """A preset, or a synthetic dense model from 2 to 160 layers and 512 to 16,384 wide."""
    if draw(st.booleans()):
        return preset(draw(st.sampled_from(PRESETS)))
    heads = draw(st.sampled_from((4, 8, 16, 32, 64, 128)))
    kv = draw(st.sampled_from(sorted({1, min(8, heads), heads})))
    return synthetic(draw(st.integers(2, 160)), heads, kv)


@dataclass(frozen=True)
class Case:
    """One drawn question: a model, a training job and the device it runs on."""

    spec: ModelSpec
    work: TrainWork
    card: str
    device: Device


@st.composite
def cases(draw: st.DrawFn, *, zero: tuple[int, ...] = (0, 1, 2, 3), pp: bool = True) -> Case:
    """A random training job: model, task, tp/pp/dp/zero/HSDP shard group, micro-batch,
    accumulation, recomputation, card, GPUs per node and inter-node network."""
    spec = draw(models())
    heads = spec.attention.num_heads
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if heads % t == 0]))
    stages = draw(st.sampled_from([p for p in (1, 2, 4, 8) if p <= spec.num_layers])) if pp else 1
    dp = draw(st.sampled_from((1, 2, 4, 8, 16, 32, 64, 256, 1024)))
    stage = draw(st.sampled_from(zero))
    shard = draw(st.sampled_from([0, *[s for s in (2, 4, 8, 16) if s < dp and dp % s == 0]]))
    parallel = Parallelism(
        dp=dp, tp=tp, pp=stages, zero=stage, shard=shard, sp=tp > 1 and draw(st.booleans())
    )
    work = TrainWork(
        task=draw(st.sampled_from(("full", "pretrain", "lora"))),
        batch=draw(st.sampled_from((1, 2, 4))),
        seq=draw(st.sampled_from((256, 1024, 2048, 4096, 8192))),
        grad_accum=draw(st.sampled_from((1, 2, 4, 8, 32))),
        recompute=draw(st.sampled_from(("none", "full", "selective"))),
        parallel=parallel,
        blocking_grad_reduce=draw(st.booleans()),
    )
    card = draw(st.sampled_from(CARDS))
    per_node = draw(st.sampled_from((None, 2, 4, 8)))
    return Case(spec, work, card, device(card, draw(st.sampled_from(NETWORKS)), per_node))


def wire_floor_s(net: Network, nbytes: float, group: int, stride: int) -> float:
    """The least time a ring all-gather or reduce-scatter of a ``nbytes`` tensor over ``group``
    ranks spaced ``stride`` GPUs apart can take at the wires' full rate: inside a node every
    rank receives ``(n-1)/n`` of it through its own link; across nodes a node must bring in
    the ``(n-m)/n`` its ``m`` ranks do not hold through the share of its NICs this group has
    (``m / gpus_per_node`` of them, since every group runs the same collective at once)."""
    if group <= 1 or nbytes <= 0:
        return 0.0
    per_node = net.gpus_per_node
    if group * stride <= per_node:
        return (group - 1) / group * nbytes / net.intra.group_bytes_per_s(group)
    m = max(min(group, per_node // stride), 1)
    nics = net.nics_per_node if net.nics_per_node > 0 else per_node
    node_in = net.inter.bandwidth_bytes_per_s * nics * m / per_node
    return (group - m) / group * nbytes / node_in


def data_parallel_floor_s(case: Case) -> float:
    """The least time per step the data-parallel traffic of ``case`` takes on the wires:
    ZeRO-3 gathers the parameters at least once and reduce-scatters the gradients at least
    once (Rajbhandari et al. 2020: 3Ψ with two gathers; one is a floor for any schedule);
    ZeRO 0-2 all-reduce (or reduce-scatter) the gradients at least once; HSDP replicas
    all-reduce a shard across the groups (another link: the larger of the two counts)."""
    work, par = case.work, case.work.parallel
    if par.dp <= 1:
        return 0.0
    net = case.device.network
    split = param_split(case.spec, par.tp, par.pp, par.ep)
    tb = work.tensor_bytes
    trainable = 0.0 if work.is_lora else split.total * tb
    stride = par.tp * par.pp
    group = par.zero_group if par.zero else par.dp
    floor = wire_floor_s(net, trainable, group, stride)
    if par.zero >= 3:
        floor += wire_floor_s(net, split.total * tb, group, stride)
    replicas = par.dp // group
    if replicas > 1:
        # Another link (across the groups), which can run while the group's own collectives do.
        floor = max(floor, wire_floor_s(net, trainable / group, replicas, stride * group))
    return floor


def tensor_parallel_floor_s(case: Case) -> float:
    """The least time per step the tensor-parallel all-reduces of ``case`` take on the wires:
    two in forward and two in backward per layer of the stage, each of the micro-batch's
    activations (Megatron-LM; Korthikanti et al. 2022 for the same bytes with sequence
    parallelism), each moving at least ``(n-1)/n`` of them through every rank's link."""
    work, par = case.work, case.work.parallel
    if par.tp <= 1:
        return 0.0
    layers = -(-case.spec.num_layers // par.pp)
    activations = work.batch * work.seq * case.spec.hidden_size * work.tensor_bytes
    one = wire_floor_s(case.device.network, activations, par.tp, 1)
    return 4 * layers * work.grad_accum * one


def one_layout(case: Case) -> Any:
    """The vectorized planner's :class:`~suanli.estimate.vector.Layouts` holding the case's one
    layout (numpy imported here, as the planner does)."""
    from suanli.estimate import vector

    par = case.work.parallel
    return vector.Layouts.of(
        tp=[par.tp],
        pp=[par.pp],
        dp=[par.dp],
        zero=[par.zero],
        batch=[case.work.batch],
        grad_accum=[case.work.grad_accum],
        sp=[int(par.sp)],
    )
