"""DeepSpeed ZeRO-3 gathers parameters per prefetch bucket (``stage3_prefetch_bucket_size``,
5e7 elements by default), a bucket closed by the whole parameter that fills it; FSDP gathers
once per layer unit. Each gather pays the ring latency over the whole data-parallel group
(docs/speed.md, ZeRO-3 / FSDP)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import find_gpu, load_catalog
from suanli.estimate.data_parallel import fsdp_exposed_s
from suanli.estimate.device import device_for
from suanli.estimate.perf import training_perf
from suanli.estimate.sizes import DS_PREFETCH_ELEMENTS, layer_matrices, zero3_gathers_per_unit
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.resolve import load_model

SPEC = load_model("llama-2-7b").spec
FSDP = TrainWork(
    task="full", batch=1, seq=2048, precision="mixed", recompute="full",
    parallel=Parallelism(dp=512, zero=3),
)  # fmt: skip
DEEPSPEED = replace(FSDP, zero_buckets="deepspeed")
A100 = find_gpu("a100-sxm-80gb", load_catalog())


def test_fsdp_gathers_once_per_unit() -> None:
    assert zero3_gathers_per_unit(FSDP, 1e9, 7) == 1


@pytest.mark.parametrize("buckets", [1, 2, 3, 5])
def test_small_matrices_share_a_bucket(buckets: int) -> None:
    """Matrices smaller than the bucket: the gathers are the unit's elements over the bucket."""
    elements = buckets * DS_PREFETCH_ELEMENTS
    assert zero3_gathers_per_unit(DEEPSPEED, elements, 1000) == buckets
    assert zero3_gathers_per_unit(DEEPSPEED, elements * 2, 1000) == 2 * buckets


def test_a_matrix_larger_than_the_bucket_is_one_gather() -> None:
    """GPT-3 175B's layer: four matrices of 1.5e8 to 6e8 elements, each above 5e7, so four
    gathers, not 1.8e9 / 5e7 = 36."""
    assert zero3_gathers_per_unit(DEEPSPEED, 1.81e9, 4) == 4
    assert zero3_gathers_per_unit(DEEPSPEED, 1.0, 4) == 1


def test_layer_matrices() -> None:
    assert layer_matrices(SPEC) == 7  # q, k, v, o; gate, up, down
    assert layer_matrices(load_model("gpt2").spec) == 4  # fused qkv, o; up, down


def test_the_latency_term_grows_with_the_ranks() -> None:
    net = device_for(A100, "bf16", inter_node="ib-hdr", auto_calibration=False).network
    latencies = [net.ring_latency(n) for n in (8, 64, 512, 1536)]
    assert latencies == sorted(latencies)
    assert latencies[-1] > 10 * latencies[0]


def _exposed(work: TrainWork, gathers: float) -> float:
    return float(
        fsdp_exposed_s(
            work=work, weight_bytes=14e9, grad_bytes=14e9, root_bytes=0.5e9, units=32,
            group=512, bandwidth=20e9, ring_latency=1e-3, base=1e-5, per_micro_s=0.1,
            replica_s=0.0, root_s=0.0, micro_batches=1, syncs=1, backward_passes=2,
            gathers_per_unit=gathers,
        )
    )  # fmt: skip


def test_each_extra_gather_pays_the_ring_latency_per_unit_and_pass() -> None:
    """Where the link is the bottleneck, k gathers per unit expose (k - 1) · units · passes ·
    (latency + base) more than one, and the bytes are unchanged."""
    one, four = _exposed(FSDP, 1), _exposed(FSDP, 4)
    passes = 3  # forward, recomputed forward, backward
    assert four - one == pytest.approx(3 * 32 * passes * (1e-3 + 1e-5), rel=1e-9)


@pytest.mark.parametrize("dp", [8, 64, 512])
def test_deepspeed_is_never_faster_than_fsdp_at_equal_bytes(dp: int) -> None:
    device = device_for(A100, "bf16", inter_node="ib-hdr", auto_calibration=False)
    fsdp = replace(FSDP, parallel=Parallelism(dp=dp, zero=3))
    ds = replace(fsdp, zero_buckets="deepspeed")
    f, d = training_perf(SPEC, fsdp, device), training_perf(SPEC, ds, device)
    assert d.comm_detail_s["data_parallel"] >= f.comm_detail_s["data_parallel"]
    assert d.step_time_s >= f.step_time_s
    if dp == 512:  # 64 nodes: the extra gathers' latency no longer hides behind the compute
        assert d.step_time_s > f.step_time_s


def test_deepspeed_latency_grows_with_data_parallelism() -> None:
    """Llama-2-7B's layer (2e8 elements: four buckets) over 64 and 192 nodes: the extra
    exposed time grows with the group, as the ring's latency does."""
    device = device_for(A100, "bf16", inter_node="ib-hdr", auto_calibration=False)
    extra = []
    for dp in (512, 1536):
        fsdp = replace(FSDP, parallel=Parallelism(dp=dp, zero=3))
        ds = replace(fsdp, zero_buckets="deepspeed")
        extra.append(
            training_perf(SPEC, ds, device).comm_detail_s["data_parallel"]
            - training_perf(SPEC, fsdp, device).comm_detail_s["data_parallel"]
        )
    assert extra[1] > extra[0] > 0
