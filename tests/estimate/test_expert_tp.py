"""Expert tensor parallelism (``--etp``, Megatron's ``--expert-tensor-parallel-size``):
docs/speed.md, "Expert tensor parallelism"."""

from __future__ import annotations

import pytest

from suanli.estimate.expert_parallel import dispatch_bytes, expert_all_to_all_s, expert_tp
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from tests.estimate.floors import device, preset

SPEC = preset("qwen3-235b-a22b")
NETS = [("h100-sxm-80gb", "ib-ndr"), ("a100-sxm-80gb", "ib-hdr"), ("h100-sxm-80gb", "roce-400g")]


def _work(tp: int, ep: int, etp: int, **kw: object) -> TrainWork:
    par = Parallelism(dp=64 // tp, tp=tp, ep=ep, etp=etp, zero=1, sp=tp > 1)
    return TrainWork(task="pretrain", seq=4096, grad_accum=4, parallel=par, **kw)  # type: ignore[arg-type]


def test_the_expert_split_is_the_common_divisor_or_follows_tp() -> None:
    assert expert_tp(4, 0) is None and Parallelism(tp=4).expert_tp == 4
    assert expert_tp(4, 1) == 1 and expert_tp(4, 2) == 2 and expert_tp(2, 4) == 2
    assert Parallelism(tp=4, etp=1).expert_tp == 1
    with pytest.raises(ValueError, match="--etp must be an integer >= 0"):
        Parallelism(etp=-1)


@pytest.mark.parametrize(("gpu", "fabric"), NETS)
@pytest.mark.parametrize("ep", [2, 4, 8, 16, 32])
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_adjacent_ranks_never_wait_longer_on_the_all_to_all(
    gpu: str, fabric: str, ep: int, tp: int
) -> None:
    """The same bytes a GPU over ranks 1 apart instead of ``tp`` apart: as many nodes or fewer,
    so the all-to-all never takes longer (strictly shorter where it leaves the node only at
    ETP = TP)."""
    net = device(gpu, fabric, None).network
    nbytes = dispatch_bytes(4096, SPEC, 2, tp)
    spread = expert_all_to_all_s(net, nbytes, ep, tp)
    for dispatcher in ("alltoall", "deepep"):
        adjacent = expert_all_to_all_s(net, nbytes, ep, 1, spec=SPEC, dispatcher=dispatcher)
        spaced = expert_all_to_all_s(net, nbytes, ep, tp, spec=SPEC, dispatcher=dispatcher)
        assert adjacent <= spaced * (1 + 1e-12)
    if ep <= net.gpus_per_node < ep * tp:
        assert expert_all_to_all_s(net, nbytes, ep, 1) < spread


@pytest.mark.parametrize("tp", [2, 4])
def test_whole_experts_keep_the_flops_and_move_the_all_to_all_inside_the_node(tp: int) -> None:
    dev = device("h100-sxm-80gb", "ib-ndr", None)
    split = training_perf(SPEC, _work(tp, 8, 0), dev)
    whole = training_perf(SPEC, _work(tp, 8, 1), dev)
    assert whole.flops_per_step == split.flops_per_step
    assert whole.comm_detail_s["expert_all_to_all"] < split.comm_detail_s["expert_all_to_all"]
    # The GEMMs change shape (half as tall, tp times as wide), not their FLOPs: within a third.
    assert whole.breakdown_s["compute"] == pytest.approx(split.breakdown_s["compute"], rel=0.35)


def test_etp_equal_to_tp_is_the_default_layout() -> None:
    dev = device("h100-sxm-80gb", "ib-ndr", None)
    assert training_perf(SPEC, _work(4, 8, 4), dev) == training_perf(SPEC, _work(4, 8, 0), dev)
