"""``suanli plan --emit``: the sbatch script and the Kubernetes manifests for a 64-GPU plan are
accepted by validators (bash -n and sbatch's option grammar; the Kubernetes object models)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from typing import Any

import pytest
import yaml

from suanli.answers.plan import PlanAnswer, PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.views.emit import emit, job_shape, nccl_env

from ..cli.test_cli import run

kubernetes = pytest.importorskip("kubernetes")

#: sbatch options the script may use, each with the grammar of its value (sbatch(1), Slurm
#: 23.x man page: --nodes=<minnodes>[-maxnodes], --ntasks-per-node=<ntasks>,
#: --gpus-per-node=[type:]<number>, --time "days-hours:minutes:seconds", --exclusive without a
#: value, --job-name=<name>, --output=<filename pattern>).
SBATCH_OPTIONS = {
    "job-name": re.compile(r"[A-Za-z0-9._-]+"),
    "nodes": re.compile(r"[1-9]\d*(-[1-9]\d*)?"),
    "ntasks-per-node": re.compile(r"[1-9]\d*"),
    "gpus-per-node": re.compile(r"([a-z0-9_-]+:)?[1-9]\d*"),
    "exclusive": None,
    "output": re.compile(r"[A-Za-z0-9._%/-]+"),
    "time": re.compile(r"\d+-\d{2}:[0-5]\d:[0-5]\d"),
}


@pytest.fixture(scope="module")
def plan64() -> PlanAnswer:
    answer = plan(
        PlanRequest(
            model="llama-3-70b", work=WorkRequest(), task="full", max_gpus=64, gpus=("h100-sxm",)
        )
    )
    assert isinstance(answer, PlanAnswer)
    return answer


def _sbatch(script: str) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for line in script.splitlines():
        if not line.startswith("#SBATCH"):
            continue
        match = re.fullmatch(r"#SBATCH --([a-z-]+)(?:=(\S+))?", line)
        assert match, line
        key, value = match.groups()
        assert key in SBATCH_OPTIONS, f"unknown sbatch option --{key}"
        grammar = SBATCH_OPTIONS[key]
        if grammar is None:
            assert value is None, line
        else:
            assert value is not None and grammar.fullmatch(value), line
        found[key] = value
    return found


def test_slurm_script_parses_and_asks_for_the_plans_64_gpus(plan64: PlanAnswer) -> None:
    script = emit(plan64, "slurm")
    lay = next(r.layout for r in plan64.rows if r.fits and not r.reason)
    assert lay is not None and lay.gpus == 64
    bash = shutil.which("bash")
    assert bash is not None
    check = subprocess.run([bash, "-n"], input=script, text=True, capture_output=True, check=False)
    assert check.returncode == 0, check.stderr
    opts = _sbatch(script)
    assert int(str(opts["nodes"])) * int(str(opts["gpus-per-node"])) == 64
    assert opts["ntasks-per-node"] == "1"  # one torchrun per node
    assert f"--nnodes={opts['nodes']}" in script
    assert f"--nproc-per-node={opts['gpus-per-node']}" in script
    assert '--rdzv-endpoint="$HEAD_NODE:29500"' in script
    # The plan's own numbers: its perf command and layout; H100 clusters are InfiniBand.
    assert str(plan64.best_command) in script
    assert f"tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, zero {lay.zero}" in script
    assert "export NCCL_IB_HCA=mlx5" in script
    # --time covers the plan's training time with the margin
    days, hours, minutes, _ = map(int, re.split(r"[-:]", str(opts["time"])))
    assert lay.time_s is not None
    assert (days * 24 + hours) * 3600 + minutes * 60 >= lay.time_s * 1.25


def test_megatron_gets_its_flags_from_the_layout(plan64: PlanAnswer) -> None:
    script = emit(plan64, "slurm", framework="megatron")
    lay = next(r.layout for r in plan64.rows if r.fits and not r.reason)
    assert lay is not None
    assert "pretrain_gpt.py" in script
    assert f"--micro-batch-size {lay.batch}" in script
    assert f"--global-batch-size {lay.batch * lay.grad_accum * lay.dp}" in script
    assert ("--tensor-model-parallel-size" in script) == (lay.tp > 1)
    assert ("--use-distributed-optimizer" in script) == (lay.zero > 0)


def _roundtrip(obj: dict[str, Any], kind: str) -> Any:
    """Deserialize into the Kubernetes client's model (required fields are checked) and back:
    a misspelt or misplaced field is dropped by the model, so the round trip must equal the
    original."""
    client = kubernetes.client.ApiClient()

    class Response:  # what clients before v33 read (.data)
        data = json.dumps(obj)

    try:  # kubernetes >= 33: deserialize(response_text, response_type, content_type)
        model = client.deserialize(json.dumps(obj), kind, "application/json")
    except (TypeError, AttributeError):
        model = client.deserialize(Response(), kind)
    assert client.sanitize_for_serialization(model) == obj
    return model


def test_k8s_manifest_validates_as_service_and_indexed_job(plan64: PlanAnswer) -> None:
    docs = list(yaml.safe_load_all(emit(plan64, "k8s")))
    assert [d["kind"] for d in docs] == ["Service", "Job"]
    service = _roundtrip(docs[0], "V1Service")
    job = _roundtrip(docs[1], "V1Job")
    assert job.api_version == "batch/v1" and job.spec.completion_mode == "Indexed"
    pod = job.spec.template.spec
    assert pod.subdomain == service.metadata.name
    assert service.spec.selector == {"job-name": job.metadata.name}
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", job.metadata.name)
    gpus = pod.containers[0].resources.limits["nvidia.com/gpu"]
    assert job.spec.completions == job.spec.parallelism
    assert job.spec.completions * int(gpus) == 64
    script = pod.containers[0].command[2]
    check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert check.returncode == 0, check.stderr
    assert f"--nnodes={job.spec.completions}" in script


def test_kubeflow_pytorchjob_pods_validate(plan64: PlanAnswer) -> None:
    (doc,) = yaml.safe_load_all(emit(plan64, "kubeflow"))
    assert doc["apiVersion"] == "kubeflow.org/v1" and doc["kind"] == "PyTorchJob"
    specs = doc["spec"]["pytorchReplicaSpecs"]
    assert set(specs) == {"Master", "Worker"} and specs["Master"]["replicas"] == 1
    total = 0
    for replica in specs.values():
        pod = _roundtrip(replica["template"], "V1PodTemplateSpec")
        (container,) = pod.spec.containers
        assert container.name == "pytorch"  # the training operator looks for this name
        total += replica["replicas"] * int(container.resources.limits["nvidia.com/gpu"])
    assert total == 64 == int(doc["spec"]["nprocPerNode"]) * (specs["Worker"]["replicas"] + 1)


def test_network_kind_sets_the_nccl_environment(plan64: PlanAnswer) -> None:
    job = job_shape(plan64)
    assert job.network == "infiniband" and job.nodes == 8
    eth = dict((n, v) for n, v, _ in nccl_env(replace(job, network="ethernet", link="eth-25g")))
    assert eth["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in eth
    assert eth["NCCL_SOCKET_IFNAME"] is None  # site-specific: a comment, not a guess
    one = nccl_env(replace(job, network="none", nodes=1))
    assert all(value is None for _, value, _ in one)


def test_single_node_plan_is_a_plain_job() -> None:
    answer = plan(PlanRequest(model="llama-3.1-8b", task="lora", max_gpus=1, gpus=("h100-sxm",)))
    assert isinstance(answer, PlanAnswer)
    docs = list(yaml.safe_load_all(emit(answer, "k8s")))
    assert [d["kind"] for d in docs] == ["Job"]
    job = _roundtrip(docs[0], "V1Job")
    assert "--standalone" in job.spec.template.spec.containers[0].command[2]
    assert "#SBATCH --nodes=1" in emit(answer, "slurm")


def test_cli_emit_and_its_bad_combinations() -> None:
    out = run("plan", "llama-3-70b", "--task", "full", "--max-gpus", "64", "--emit", "slurm")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("#!/bin/bash\n#SBATCH")
    # No GPU can run it: one sentence, exit 2.
    out = run("plan", "llama-3-70b", "--task", "full", "--gpu", "rtx-4090", "--emit", "k8s")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "--emit" in out.stderr
    assert "Traceback" not in out.stderr
    out = run("plan", "llama-3.1-8b", "--task", "infer", "--emit", "kubeflow")
    assert out.returncode == 2 and "serving plan" in out.stderr
