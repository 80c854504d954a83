"""``suanli doctor scaling --nnodes N``: placement of ranks on nodes, the nccl-tests bus
bandwidth, the speed model's link per tier against NVIDIA's published multi-node all-reduce, and
real runs of 2 "nodes" x 2 ranks over gloo on loopback (simulated, and under torchrun's
variables with the node named by SUANLI_NODE)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from suanli.answers.scaling import SLOW_LINK_RATIO, nodes_answer
from suanli.estimate.comm import all_reduce_s
from suanli.live.bench.grading import busbw
from suanli.live.multinode import (
    NODE_ENV,
    NodesResult,
    Tier,
    _model_links,
    measure_nodes,
    placement,
    tier_point,
)
from suanli.live.ranks import SLURM_PORT_BASE

pytest.importorskip("torch")

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", NODE_ENV)
SMALL = ("--hidden", "64", "--layers", "2", "--batch", "4", "--sizes", "0.004,1")


def test_placement_groups_ranks_by_node_in_first_rank_order() -> None:
    place = placement(["b", "b", "a", "a", "c", "c"], 3)
    assert place.nodes == ("b", "a", "c")
    assert place.node_of_rank == (0, 0, 1, 1, 2, 2)
    assert (place.nnodes, place.ranks_per_node, place.leaders) == (3, 2, [0, 2, 4])
    # Interleaved placements (srun's cyclic distribution) group the same way.
    assert placement(["a", "b", "a", "b"], 2).ranks_of(1) == [1, 3]


@pytest.mark.parametrize(
    ("names", "nnodes", "words"),
    [
        (["a", "a", "b", "b"], 3, "on 2 node\\(s\\), not 3"),
        (["a", "a", "a", "b"], 2, "different numbers of ranks \\(a=3, b=1\\)"),
    ],
)
def test_placement_refuses_what_the_launch_did_not_give(
    names: list[str], nnodes: int, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        placement(names, nnodes)


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all-reduce; 1 GB in 10 ms on
    # 8 ranks is 100 GB/s of algorithm bandwidth and 175 GB/s on each link.
    assert busbw(1e9 / 0.010, 8) == pytest.approx(175e9)
    assert busbw(1e9 / 0.010, 2) == pytest.approx(100e9)
    assert busbw(1e9 / 0.010, 1) == 0.0


@pytest.mark.parametrize(
    ("gpu", "published_bus_gbs"),
    [
        # NVIDIA GTC24 S62129: 2+ DGX nodes, all-reduce bus bandwidth across nodes:
        # DGX H100 with 8x 400G NICs 380 GB/s, DGX A100 with 8x 200G 192 GB/s.
        ("NVIDIA H100 80GB HBM3", 380),
        ("NVIDIA A100-SXM4-80GB", 192),
    ],
)
def test_speed_model_links_per_tier_on_two_dgx_nodes(gpu: str, published_bus_gbs: float) -> None:
    place = placement(["n0"] * 8 + ["n1"] * 8, 2)
    gpu_id, links, note = _model_links("nccl", gpu, place, None)
    assert gpu_id is not None and note is None
    assert set(links) == {"intra-node", "inter-node", "all"}
    assert "NVLink" in links["intra-node"].name
    # One rank per node drives one NIC; every rank of both nodes stripes over the node's NICs.
    assert "x8 per node" in links["all"].name and "x8" not in links["inter-node"].name
    gib = 1 << 30
    bus = {
        tier: busbw(gib / all_reduce_s(gib, n, links[tier]), n)
        for tier, n in (("intra-node", 8), ("inter-node", 2), ("all", 16))
    }
    assert bus["inter-node"] < bus["all"] <= bus["intra-node"]
    assert bus["all"] / 1e9 == pytest.approx(published_bus_gbs, rel=0.10)


def test_no_speed_model_figure_for_gloo_or_an_unknown_gpu() -> None:
    place = placement(["a", "b"], 2)
    assert _model_links("gloo", None, place, None)[1] == {}
    gpu_id, links, note = _model_links("nccl", "Mystery GPU 9000", place, None)
    assert (gpu_id, links) == (None, {})
    assert note is not None and "Mystery GPU 9000" in note


def _result(ratio_at_largest: float | None) -> NodesResult:
    predicted = None if ratio_at_largest is None else 0.010 * ratio_at_largest
    tier = Tier(
        "inter-node",
        2,
        "InfiniBand NDR" if predicted else None,
        (tier_point(1 << 20, 2, 0.001, None), tier_point(1 << 30, 2, 0.010, predicted)),
    )
    return NodesResult(
        "torchrun",
        "nccl",
        ("a", "b"),
        8,
        "h100-sxm-80gb",
        (tier,),
        1000,
        0.1,
        0.12,
        0.02,
        0.11,
        None,
    )


def test_a_link_far_below_the_model_is_named_as_the_cause() -> None:
    slow = nodes_answer(_result(SLOW_LINK_RATIO * 0.6))
    point = slow.tiers[0].points[-1]
    assert point.measured_over_predicted == pytest.approx(SLOW_LINK_RATIO * 0.6)
    assert "all-reduce between nodes reaches 30%" in slow.cause and "InfiniBand NDR" in slow.cause
    fine = nodes_answer(_result(0.9))
    assert "scales well" in fine.cause  # 0.12 s against 0.1 s: 17% communication
    assert fine.speedup == pytest.approx(2 * 0.1 / 0.12)
    assert fine.efficiency == pytest.approx(0.1 / 0.12)


def test_two_simulated_nodes_of_two_gloo_ranks() -> None:
    result = measure_nodes(
        2, 2, environ={}, hidden=64, layers=2, batch=4, steps=4, sizes_bytes=(4096, 1 << 20)
    )
    assert result is not None
    assert (result.launcher, result.backend, result.nodes) == (
        "simulated",
        "gloo",
        ("node0", "node1"),
    )
    assert [(t.name, t.ranks) for t in result.tiers] == [
        ("intra-node", 2),
        ("inter-node", 2),
        ("all", 4),
    ]
    for tier in result.tiers:
        small, large = tier.points
        assert small.seconds > 0 and large.seconds > 0
        # A 4 KiB all-reduce is latency-bound: its bus bandwidth is far below 1 MiB's.
        assert large.bus_bytes_per_s > 3 * small.bus_bytes_per_s
        assert small.predicted_s is None  # gloo: no speed-model figure
    assert result.prediction_note is not None
    assert result.params == 2 * (64 * 64 + 64)
    assert result.predicted_step_n_s >= result.step_1_node_s > 0
    answer = nodes_answer(result)
    assert answer.nnodes == 2 and answer.speedup == pytest.approx(
        2 * answer.step_1_node_s / answer.step_n_nodes_s
    )


def _launcher_env(launcher: str, rank: int, world: int, port: int) -> dict[str, str]:
    """The variables torchrun or srun sets for one rank (two ranks per node)."""
    if launcher == "torchrun":
        return {
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank % 2),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    return {
        "SLURM_PROCID": str(rank),
        "SLURM_NTASKS": str(world),
        "SLURM_LOCALID": str(rank % 2),
        "SLURM_JOB_NODELIST": "localhost",
        "SLURM_JOB_ID": str(port - SLURM_PORT_BASE),  # srun ranks meet on a port from the job id
    }


def _launch(
    nodes: list[str], *args: str, launcher: str = "torchrun"
) -> list[subprocess.CompletedProcess[str]]:
    """One ``suanli doctor scaling --nnodes`` process per rank, as the launcher starts them."""
    from tests.live.test_doctor_ranks import _free_port

    base = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and "SLURM" not in k}
    port = _free_port(SLURM_PORT_BASE + 5000, SLURM_PORT_BASE + 19000)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "suanli", "doctor", "scaling", *args],
            env={
                **base,
                **_launcher_env(launcher, rank, len(nodes), port),
                NODE_ENV: node,
                "SUANLI_LANG": "en",
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, node in enumerate(nodes)
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def test_four_torchrun_ranks_on_two_named_nodes() -> None:
    from suanli.answers.schemas import document_schemas

    jsonschema = pytest.importorskip("jsonschema")
    results = _launch(["nA", "nA", "nB", "nB"], "--nnodes", "2", "--json", *SMALL)
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    assert [r.stdout for r in results[1:]] == ["", "", ""]  # only rank 0 speaks
    doc: dict[str, Any] = json.loads(results[0].stdout)
    jsonschema.validate(doc, document_schemas()["scaling-nodes"])
    assert (doc["launcher"], doc["nodes"], doc["ranks_per_node"]) == ("torchrun", ["nA", "nB"], 2)
    assert [t["name"] for t in doc["tiers"]] == ["intra-node", "inter-node", "all"]
    assert [p["nbytes"] for p in doc["tiers"][0]["points"]] == [4194, 1 << 20]


def test_ranks_on_more_nodes_than_asked_say_so_and_exit_2() -> None:
    # under srun's variables this time (the rendezvous is the one doctor --all-ranks uses)
    results = _launch(["nA", "nB", "nC", "nC"], "--nnodes", "2", *SMALL, launcher="slurm")
    for r in results:
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert "the ranks are on 3 node(s), not 2" in r.stderr


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"nnodes": 1}, "at least 2"),
        ({"nnodes": 64, "procs_per_node": 2}, "starts 128 processes here \\(at most 64\\)"),
        ({"nnodes": 2, "sizes_bytes": (0,)}, "--sizes takes"),
        ({"nnodes": 2, "sizes_bytes": (2 << 30,)}, "--sizes takes"),
        ({"nnodes": 2, "inter_node": "ib-xyz"}, "unknown interconnect 'ib-xyz'"),
    ],
)
def test_bad_requests_are_refused_before_any_process_starts(
    kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        measure_nodes(environ={}, **kwargs)


def test_an_mlp_past_the_bound_is_refused_in_both_modes() -> None:
    from suanli.answers.scaling import (
        NodesScalingRequest,
        ScalingRequest,
        scaling,
        scaling_nodes,
    )

    with pytest.raises(ValueError, match="at most 67,108,864"):
        scaling(ScalingRequest(hidden=16384, layers=64))
    with pytest.raises(ValueError, match="lower --hidden or --layers"):
        scaling_nodes(NodesScalingRequest(hidden=8192, layers=2))
