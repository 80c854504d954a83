"""``--nics-per-node``: the user's count of a node's scale-out NICs in place of the catalog's node
row (docs/speed.md, "A node's NIC count"). Fewer NICs never make a job that spans nodes faster;
a job inside one node does not notice."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from suanli import PerfRequest, TrainPerfAnswer, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate.links import network_for

WORK = WorkRequest(
    task="pretrain",
    gpus=32,
    zero=1,
    batch=4,
    seq=1024,
    recompute="none",
    dtype="fp16",
    blocking_grad_reduce=True,
)


def _step(nics: int | None, work: WorkRequest = WORK) -> float:
    answer = perf(
        PerfRequest("gpt2", work, gpu="v100-sxm2-16gb", inter_node="ib-edr", nics_per_node=nics)
    )
    assert isinstance(answer, TrainPerfAnswer)
    return answer.step_time_s


def test_fewer_nics_never_speed_up_a_job_across_nodes() -> None:
    steps = [_step(n) for n in (8, 4, 2, 1)]
    assert steps == sorted(steps) and steps[-1] > steps[0]
    # The catalog's DGX-1 row has four: the default is that count.
    assert _step(None) == pytest.approx(_step(4))


def test_a_job_inside_one_node_does_not_notice() -> None:
    inside = WorkRequest(
        task="pretrain", gpus=8, zero=1, batch=4, seq=1024, recompute="none", dtype="fp16"
    )
    assert _step(1, inside) == pytest.approx(_step(8, inside))


def test_the_network_shares_the_given_ports_among_the_node_s_gpus() -> None:
    gpu = find_gpu("h100", bundled_gpus())
    one = network_for(gpu, 8, "ib-ndr", stripe_nics=True, nics_per_node=1)
    eight = network_for(gpu, 8, "ib-ndr", stripe_nics=True)
    assert one.nics_per_node == 1 and eight.nics_per_node == 8
    # A data-parallel pair across two tensor-parallel nodes (one rank a node): its GPU's share.
    assert eight.inter_bandwidth(2, 8) == pytest.approx(8 * one.inter_bandwidth(2, 8))
    with pytest.raises(ValueError, match="--nics-per-node must be 1 to 64"):
        network_for(gpu, 8, "ib-ndr", stripe_nics=True, nics_per_node=0)


def test_bad_counts_are_refused_in_one_line_everywhere() -> None:
    result = CliRunner().invoke(
        main, ["perf", "gpt2", "--gpu", "h100", "--gpus", "16", "--nics-per-node", "0"]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--nics-per-node" in result.output
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    body = {"model": "gpt2", "task": "pretrain", "gpu": "h100", "gpus": 16}
    with TestClient(create_app(allow_hub=False), raise_server_exceptions=False) as client:
        bad = client.post("/api/perf", json={**body, "nics_per_node": 0})
        assert 400 <= bad.status_code < 500
        ok = client.post("/api/perf", json={**body, "nics_per_node": 2}).json()
        library = perf(
            PerfRequest("gpt2", WorkRequest(task="pretrain", gpus=16), "h100", nics_per_node=2)
        )
        assert isinstance(library, TrainPerfAnswer)
        assert ok["step_time_s"] == pytest.approx(library.step_time_s, rel=1e-9)
