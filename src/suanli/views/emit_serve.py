"""A serving plan's chosen layout as something a scheduler runs (``suanli plan --task infer
--emit slurm|k8s``).

Each replica of the plan is one server process on ``tp`` GPUs of one node, started with the
engine's own command line: vLLM (``vllm serve``, the default) or SGLang
(``python -m sglang.launch_server``), with the plan's tensor parallelism, context length, batch
(the engine's concurrent-sequence limit), weight format and KV-cache dtype. ``slurm``: a job
array of ``replicas`` tasks, one server each. ``k8s``: an apps/v1 Deployment of ``replicas``
pods with a readiness probe on the engine's ``/health`` and a Service in front. Every number comes
from the typed plan answer; nothing is re-estimated. Balancing requests over the replicas (the
Service on Kubernetes, your proxy under Slurm) is outside the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from suanli.i18n import N_
from suanli.views.manifests import (
    K8S_GPU_RESOURCE,
    comment_text,
    dns_label,
    refuse_control,
    shell_words,
    yaml_documents,
)

if TYPE_CHECKING:
    from suanli.answers.plan import PlanAnswer

#: The port both engines listen on in the emitted commands (vLLM's default).
PORT = 8000
#: The serving engines the emitter writes commands for; other --framework values map here.
ENGINES = {"hf": "vllm", "vllm": "vllm", "sglang": "sglang"}
#: Official images (the tag is the user's choice: pin the version you tested).
IMAGES = {"vllm": "vllm/vllm-openai:latest", "sglang": "lmsysorg/sglang:latest"}
#: Weight formats the engines quantize on load from a bf16 checkpoint; int8/int4 need a
#: pre-quantized (AWQ, GPTQ) checkpoint, which a comment says.
ONLINE_QUANT = {"fp8"}


@dataclass(frozen=True)
class ServeShape:
    """What a scheduler needs to know about a serving plan's chosen layout."""

    name: str
    model: str
    hf_id: str
    """The Hugging Face repository the engine loads (the preset's, or the model as given)."""
    gpu: str
    vendor: str
    tp: int
    replicas: int
    batch: int
    context: int
    weight_format: str
    kv_dtype: str
    engine: str

    @property
    def gpus(self) -> int:
        """GPUs over all replicas."""
        return self.tp * self.replicas


def serve_shape(answer: PlanAnswer, framework: str = "hf") -> ServeShape:
    """The winner of a serving plan as replicas to start; ValueError with one sentence when the
    plan has nothing to run or the engine is not one the emitter knows."""
    from suanli.answers.plan import ServeLayout
    from suanli.catalog import find_gpu, load_catalog
    from suanli.catalog.network import default_gpus_per_node
    from suanli.models.presets import find_preset

    engine = ENGINES.get(framework)
    if engine is None:
        raise ValueError(
            N_(
                "--emit writes vLLM or SGLang servers; plan with --framework vllm or sglang "
                "(not {framework})"
            ).format(framework=framework)
        )
    row = next((r for r in answer.rows if r.runnable), None)
    if row is None or not isinstance(row.layout, ServeLayout):
        raise ValueError(
            N_(
                "no GPU in this plan can serve {model} (--emit needs a runnable layout); "
                "try more GPUs (--max-gpus) or other GPUs"
            ).format(model=answer.model)
        )
    lay = row.layout
    gpu = find_gpu(row.gpu, load_catalog())
    per_node = default_gpus_per_node(gpu)
    if lay.tp > per_node:
        raise ValueError(
            N_(
                "one replica needs {tp} GPUs, more than a node of {per_node}: multi-node serving "
                "is not emitted; plan with --max-gpus {per_node}"
            ).format(tp=lay.tp, per_node=per_node)
        )
    preset = find_preset(answer.model)
    return ServeShape(
        name=dns_label(f"{answer.model}-serve-{row.gpu}"),
        model=answer.model,
        hf_id=refuse_control(preset.hf_id if preset is not None else answer.model),
        gpu=row.gpu,
        vendor=gpu.vendor,
        tp=lay.tp,
        replicas=lay.replicas,
        batch=lay.batch,
        context=answer.context,
        weight_format=lay.weight_format,
        kv_dtype=lay.kv_dtype,
        engine=engine,
    )


def server_args(shape: ServeShape) -> list[str]:
    """The engine's command line for one replica."""
    if shape.engine == "vllm":
        args = [
            "vllm",
            "serve",
            shape.hf_id,
            f"--tensor-parallel-size={shape.tp}",
            f"--max-model-len={shape.context}",
            f"--max-num-seqs={shape.batch}",
            "--host=0.0.0.0",
            f"--port={PORT}",
        ]
        if shape.weight_format in ONLINE_QUANT:
            args.append(f"--quantization={shape.weight_format}")
        if shape.kv_dtype == "fp8":
            args.append("--kv-cache-dtype=fp8")
        return args
    args = [
        "python3",
        "-m",
        "sglang.launch_server",
        f"--model-path={shape.hf_id}",
        f"--tp-size={shape.tp}",
        f"--context-length={shape.context}",
        f"--max-running-requests={shape.batch}",
        "--host=0.0.0.0",
        f"--port={PORT}",
    ]
    if shape.weight_format in ONLINE_QUANT:
        args.append(f"--quantization={shape.weight_format}")
    if shape.kv_dtype == "fp8":
        args.append("--kv-cache-dtype=fp8_e5m2")
    return args


def _comment(shape: ServeShape) -> list[str]:
    """The plan in words, for comment lines; the model (user text) escaped."""
    lines = [
        f"suanli plan: {comment_text(shape.model)} --task infer on {shape.gpus} x {shape.gpu}",
        f"{shape.replicas} replica(s) of tp={shape.tp}; batch {shape.batch}, "
        f"context {shape.context}, weights {shape.weight_format}, KV cache {shape.kv_dtype}",
        f"engine: {shape.engine} (its OpenAI-compatible API on port {PORT})",
    ]
    if shape.weight_format not in ONLINE_QUANT and shape.weight_format not in ("bf16", "fp16"):
        lines.append(
            f"weights {shape.weight_format}: serve a pre-quantized checkpoint of "
            f"{comment_text(shape.hf_id)} "
            "in that format instead (vLLM and SGLang read AWQ/GPTQ from its config)"
        )
    return lines


def _lines(args: list[str]) -> list[str]:
    """The command and its positional words on the first line, then one option per line, each
    word shell-quoted (the model is user text)."""
    first = next(i for i, a in enumerate(args) if a.startswith("--"))
    return [" ".join(shell_words(args[:first])), *shell_words(args[first:])]


def slurm_array(shape: ServeShape) -> str:
    """An sbatch script: a job array with one server per task on ``tp`` GPUs of one node."""
    head = ["#!/bin/bash", *(f"# {line}" for line in _comment(shape))]
    head += [
        f"#SBATCH --job-name={shape.name}",
        f"#SBATCH --array=0-{shape.replicas - 1}",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        f"#SBATCH --gpus-per-task={shape.tp}",
        f"#SBATCH --cpus-per-task={8 * shape.tp}",
        "#SBATCH --time=1-00:00:00",
        "#SBATCH --output=%x-%A_%a.out",
        "",
        "set -euo pipefail",
        'echo "replica ${SLURM_ARRAY_TASK_ID} serves on $(hostname):' + f'{PORT}"',
        "srun " + " \\\n  ".join(_lines(server_args(shape))),
    ]
    return "\n".join(head) + "\n"


def k8s_serving(shape: ServeShape) -> list[dict[str, Any]]:
    """An apps/v1 Deployment of the replicas and a Service in front of them."""
    resource = K8S_GPU_RESOURCE.get(shape.vendor)
    if resource is None:
        raise ValueError(
            N_(
                "no Kubernetes device plugin resource is known for {vendor} GPUs; use --emit slurm"
            ).format(vendor=shape.vendor)
        )
    labels = {"app.kubernetes.io/name": shape.name, "app.kubernetes.io/managed-by": "suanli"}
    container = {
        "name": shape.engine,
        "image": IMAGES[shape.engine],
        "command": server_args(shape),
        "ports": [{"name": "http", "containerPort": PORT}],
        "env": [
            {
                "name": "HF_TOKEN",  # gated models: kubectl create secret generic hf-token ...
                "valueFrom": {
                    "secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}
                },
            }
        ],
        "resources": {
            "limits": {resource: str(shape.tp)},
            "requests": {resource: str(shape.tp)},
        },
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": PORT},
            "periodSeconds": 10,
            "failureThreshold": 60,  # loading the weights takes minutes
        },
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": shape.name, "labels": labels},
        "spec": {
            "replicas": shape.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    # tensor-parallel workers share memory through /dev/shm (64 MiB by default)
                    "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": shape.name, "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]},
    }
    return [deployment, service]


def emit_serving(answer: PlanAnswer, kind: str, framework: str = "hf") -> str:
    """A serving plan as a Slurm job array or Kubernetes manifests."""
    shape = serve_shape(answer, framework)
    if kind == "slurm":
        return slurm_array(shape)
    if kind == "k8s":
        head = [f"# {line}" for line in _comment(shape)]
        return "\n".join(head) + "\n" + yaml_documents(k8s_serving(shape))
    raise ValueError(
        N_("--emit {kind} writes training jobs; a serving plan takes slurm or k8s").format(
            kind=kind
        )
    )
