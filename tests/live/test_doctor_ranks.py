"""``suanli doctor --all-ranks``: the rendezvous from torchrun's and srun's variables, the pure
comparison, and real 4-rank runs over gloo on loopback with a mismatch injected on one rank."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from suanli.live.ranks import (
    INJECT_ENV,
    SLURM_PORT_BASE,
    RankFacts,
    compare,
    first_slurm_host,
    rank_ranges,
    rendezvous,
)

pytest.importorskip("torch")

#: Launcher variables removed before each simulated launch (this shell may be inside one).
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", INJECT_ENV)


def _facts(rank: int, host: str = "n0", **changed: str | None) -> RankFacts:
    facts: dict[str, str | None] = {
        "driver_version": "550.54",
        "torch_version": "2.13.0+cu128",
        "nccl_version": "2.27.3",
        "gpu_models": "NVIDIA H100 80GB HBM3",
        "network_interfaces": "eth0,ib0",
    }
    facts.update(changed)
    return RankFacts(rank, host, rank % 8, facts)


def test_compare_names_the_odd_rank_and_fact_most_common_value_first() -> None:
    ranks = [_facts(r) for r in range(8)]
    ranks[5] = _facts(5, nccl_version="2.21.5")
    ranks[6] = _facts(6, network_interfaces="eth1,ib0")
    found = compare(ranks)
    assert [(d.fact, d.critical) for d in found] == [
        ("nccl_version", True),
        ("network_interfaces", False),
    ]
    nccl = found[0].values
    assert [(g.value, g.ranks) for g in nccl] == [
        ("2.27.3", (0, 1, 2, 3, 4, 6, 7)),
        ("2.21.5", (5,)),
    ]


def test_compare_agreeing_ranks_and_a_missing_fact() -> None:
    assert compare([_facts(r, host=f"n{r}") for r in range(4)]) == []  # hostnames may differ
    found = compare([_facts(0), _facts(1, driver_version=None)])
    assert found[0].fact == "driver_version" and found[0].values[1].value is None


def test_rank_ranges() -> None:
    assert rank_ranges([6, 0, 1, 2, 3]) == "0-3,6"
    assert rank_ranges([4]) == "4"


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [("gpu[03-04,07],cpu1", "gpu03"), ("node7", "node7"), ("a1,b2", "a1"), ("h[9]", "h9")],
)
def test_first_slurm_host(nodelist: str, first: str) -> None:
    assert first_slurm_host(nodelist) == first


def test_rendezvous_from_torchrun_and_from_srun() -> None:
    torchrun = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.1"}
    rdv = rendezvous({**torchrun, "MASTER_PORT": "29400", "SLURM_PROCID": "0"})
    assert (rdv.launcher, rdv.rank, rdv.world_size, rdv.local_rank) == ("torchrun", 3, 8, 1)
    assert (rdv.master_addr, rdv.master_port) == ("10.0.0.1", 29400)
    slurm = {
        "SLURM_PROCID": "5",
        "SLURM_NTASKS": "16",
        "SLURM_LOCALID": "5",
        "SLURM_JOB_NODELIST": "gpu[12-13]",
        "SLURM_JOB_ID": "123456",
    }
    rdv = rendezvous(slurm)
    assert (rdv.launcher, rdv.rank, rdv.world_size, rdv.local_rank) == ("slurm", 5, 16, 5)
    assert (rdv.master_addr, rdv.master_port) == ("gpu12", SLURM_PORT_BASE + 123456 % 20000)
    rdv = rendezvous({**slurm, "MASTER_ADDR": "head", "MASTER_PORT": "4000"})
    assert (rdv.master_addr, rdv.master_port) == ("head", 4000)


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({}, "torchrun --nproc-per-node"),
        ({"RANK": "4", "WORLD_SIZE": "4"}, "outside a world of 4"),
        ({"RANK": "x", "WORLD_SIZE": "4"}, "RANK=x"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "MASTER_ADDR"),
    ],
)
def test_rendezvous_refuses_what_no_launcher_set(environ: dict[str, str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        rendezvous(environ)


def _free_port(low: int = 20000, high: int = 30000) -> int:
    for port in range(low + os.getpid() % 5000, high):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def _launch(per_rank: list[dict[str, str]], *args: str) -> list[subprocess.CompletedProcess[str]]:
    """One ``suanli doctor --all-ranks`` process per rank, as a launcher would start them."""
    base = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and "SLURM" not in k}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "suanli", "doctor", "--all-ranks", *args],
            env={**base, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for extra in per_rank
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def test_four_torchrun_ranks_report_the_injected_mismatch() -> None:
    from suanli.answers.schemas import document_schemas

    jsonschema = pytest.importorskip("jsonschema")
    port = str(_free_port())
    ranks = [
        {
            "RANK": str(r),
            "WORLD_SIZE": "4",
            "LOCAL_RANK": str(r),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            INJECT_ENV: "2:torch_version=2.12.0+cpu",
        }
        for r in range(4)
    ]
    results = _launch(ranks, "--json")
    # Rank 0 carries the verdict (torchrun would kill rank 0 if another rank failed first).
    assert [r.returncode for r in results] == [1, 0, 0, 0], [r.stderr for r in results]
    assert [r.stdout for r in results[1:]] == ["", "", ""]  # only rank 0 speaks
    doc: dict[str, Any] = json.loads(results[0].stdout)
    jsonschema.validate(doc, document_schemas()["doctor-ranks"])
    assert (doc["world_size"], doc["backend"], doc["healthy"]) == (4, "gloo", False)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    (torch_row,) = [d for d in doc["disagreements"] if d["fact"] == "torch_version"]
    assert torch_row["critical"] is True
    assert torch_row["values"][-1] == {"value": "2.12.0+cpu", "ranks": [2]}
    assert torch_row["values"][0]["ranks"] == [0, 1, 3]


def test_srun_ranks_meet_on_the_job_port_and_warn_without_failing() -> None:
    port = _free_port(SLURM_PORT_BASE + 5000, SLURM_PORT_BASE + 19000)
    ranks = [
        {
            "SLURM_PROCID": str(r),
            "SLURM_NTASKS": "4",
            "SLURM_LOCALID": str(r),
            "SLURM_JOB_NODELIST": "localhost",
            "SLURM_JOB_ID": str(port - SLURM_PORT_BASE),  # the port is derived from the job id
            INJECT_ENV: "3:network_interfaces=ib7",
            "SUANLI_LANG": "en",
        }
        for r in range(4)
    ]
    results = _launch(ranks)
    assert [r.returncode for r in results] == [0, 0, 0, 0], [r.stderr for r in results]
    assert [r.stdout for r in results[1:]] == ["", "", ""]
    text = results[0].stdout
    assert "4 ranks on 1 host(s), gloo" in text
    assert "WARN" in text and "network interfaces" in text and "ib7" in text
    assert "ranks 0-3" in text


def test_outside_a_launcher_is_one_sentence_and_exit_2() -> None:
    (result,) = _launch([{}])
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "torchrun --nproc-per-node N -m suanli doctor --all-ranks" in result.stderr


def test_under_real_torchrun_rank_0_prints_before_the_launcher_stops() -> None:
    base = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and "SLURM" not in k}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "4",
            "--master-port",
            str(_free_port()),
            "-m",
            "suanli",
            "--lang",
            "en",
            "doctor",
            "--all-ranks",
            "--json",
        ],
        env={**base, INJECT_ENV: "3:nccl_version=2.21.5"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)  # one document: the other ranks printed nothing
    (row,) = [d for d in doc["disagreements"] if d["fact"] == "nccl_version"]
    assert row["values"][-1] == {"value": "2.21.5", "ranks": [3]}
