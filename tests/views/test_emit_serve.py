"""``suanli plan --task infer --emit``: a serving plan as a Slurm job array and as a Kubernetes
Deployment and Service, accepted by the validators (bash -n and sbatch's option grammar; the
Kubernetes object models) and carrying the plan's own replicas, TP, batch and context."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from suanli.answers.plan import PlanAnswer, PlanRequest, ServeLayout, plan
from suanli.answers.request import WorkRequest
from suanli.views.emit import emit

from ..cli.test_cli import run
from .test_emit import SBATCH_OPTIONS, _roundtrip, _sbatch

kubernetes = pytest.importorskip("kubernetes")

#: The array and per-task options a serving script adds (sbatch(1): --array=<indexes>,
#: --ntasks=<number>, --gpus-per-task=[type:]<number>, --cpus-per-task=<ncpus>).
SERVE_OPTIONS = {
    **SBATCH_OPTIONS,
    "array": re.compile(r"0-\d+"),
    "ntasks": re.compile(r"[1-9]\d*"),
    "gpus-per-task": re.compile(r"([a-z0-9_-]+:)?[1-9]\d*"),
    "cpus-per-task": re.compile(r"[1-9]\d*"),
}


@pytest.fixture(scope="module")
def serving() -> tuple[PlanAnswer, ServeLayout]:
    """Llama 3.1 70B for 5 requests/s on H100s: replicas of a tensor-parallel group."""
    answer = plan(
        PlanRequest(
            model="llama-3.1-70b",
            work=WorkRequest(context=8192),
            rps=5.0,
            task="infer",
            max_gpus=16,
            gpus=("h100-sxm",),
        )
    )
    assert isinstance(answer, PlanAnswer) and answer.inference
    row = next(r for r in answer.rows if r.fits and not r.reason)
    assert isinstance(row.layout, ServeLayout)
    return answer, row.layout


def test_slurm_job_array_runs_one_server_per_replica(
    serving: tuple[PlanAnswer, ServeLayout], monkeypatch: pytest.MonkeyPatch
) -> None:
    answer, lay = serving
    script = emit(answer, "slurm")
    bash = shutil.which("bash")
    assert bash is not None
    check = subprocess.run([bash, "-n"], input=script, text=True, capture_output=True, check=False)
    assert check.returncode == 0, check.stderr
    monkeypatch.setattr("tests.views.test_emit.SBATCH_OPTIONS", SERVE_OPTIONS)
    opts = _sbatch(script)
    assert opts["array"] == f"0-{lay.replicas - 1}"
    assert opts["gpus-per-task"] == str(lay.tp) and opts["nodes"] == "1"
    assert "srun vllm serve meta-llama/Llama-3.1-70B \\" in script
    assert f"--tensor-parallel-size={lay.tp}" in script
    assert "--max-model-len=8192" in script
    assert f"--max-num-seqs={lay.batch}" in script
    assert ("--quantization=fp8" in script) == (lay.weight_format == "fp8")
    assert ("--kv-cache-dtype=fp8" in script) == (lay.kv_dtype == "fp8")
    # a weight format the engines do not quantize to on load is a checkpoint to swap in
    needs_checkpoint = lay.weight_format not in ("bf16", "fp16", "fp8")
    assert ("serve a pre-quantized checkpoint" in script) == needs_checkpoint


def test_k8s_deployment_and_service_validate(serving: tuple[PlanAnswer, ServeLayout]) -> None:
    answer, lay = serving
    docs = list(yaml.safe_load_all(emit(answer, "k8s", framework="sglang")))
    assert [d["kind"] for d in docs] == ["Deployment", "Service"]
    deployment = _roundtrip(docs[0], "V1Deployment")
    service = _roundtrip(docs[1], "V1Service")
    assert deployment.spec.replicas == lay.replicas
    pod = deployment.spec.template
    assert deployment.spec.selector.match_labels == pod.metadata.labels == service.spec.selector
    (container,) = pod.spec.containers
    assert container.resources.limits["nvidia.com/gpu"] == str(lay.tp)
    assert container.command[:3] == ["python3", "-m", "sglang.launch_server"]
    assert f"--tp-size={lay.tp}" in container.command
    assert f"--max-running-requests={lay.batch}" in container.command
    assert container.readiness_probe.http_get.path == "/health"
    assert service.spec.ports[0].target_port == container.ports[0].container_port


def test_bad_serving_combinations_are_one_sentence() -> None:
    out = run("plan", "llama-3.1-8b", "--task", "infer", "--emit", "kubeflow")
    assert out.returncode == 2 and out.stdout == "" and "serving plan" in out.stderr
    out = run("plan", "llama-3.1-8b", "--task", "infer", "--framework", "ollama", "--emit", "k8s")
    assert out.returncode == 2 and "--framework vllm or sglang" in out.stderr
    assert "Traceback" not in out.stderr
    out = run("plan", "llama-3.1-8b", "--task", "infer", "--emit", "k8s")
    assert out.returncode == 0 and "kind: Deployment" in out.stdout
