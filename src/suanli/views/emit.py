"""A plan's chosen layout as something a scheduler runs (``suanli plan ... --emit``).

``slurm``: an sbatch script (nodes, GPUs per node, one torchrun per node launched by srun with a
c10d rendezvous on the first node). ``k8s``: a batch/v1 Indexed Job (plus a headless Service
for the rendezvous when it spans nodes). ``kubeflow``: a Kubeflow PyTorchJob (Master and
Workers). Every number comes from the typed plan answer (the chosen row's layout) and from the
catalog facts the plan itself used (GPUs per node, inter-node link); nothing is re-estimated.
The emitted text is not translated (it is code); errors are catalog sentences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from suanli.i18n import N_
from suanli.views.manifests import (
    K8S_GPU_RESOURCE,
    comment_text,
    dns_label,
    refuse_control,
    shell_flag,
    yaml_documents,
)

if TYPE_CHECKING:
    from suanli.answers.plan import PlanAnswer

EMIT_KINDS = ("slurm", "k8s", "kubeflow")
#: The rendezvous port torchrun listens on (its default, 29500).
RDZV_PORT = 29500
#: Wall-clock margin over the plan's training time for ``#SBATCH --time``: start-up, data
#: loading and checkpoints are outside the speed model.
TIME_MARGIN = 1.25
TIME_SLACK_S = 15 * 60
#: A placeholder the user replaces: the training image (any image with PyTorch and the script).
IMAGE = "REPLACE-ME/your-training-image:tag"


@dataclass(frozen=True)
class JobShape:
    """What a scheduler needs to know about the plan's chosen layout."""

    name: str
    """A DNS-1123 label made of the model, task and GPU (Kubernetes names, Slurm job name)."""
    model: str
    task: str
    gpu: str
    vendor: str
    gpus: int
    nodes: int
    gpus_per_node: int
    tp: int
    pp: int
    dp: int
    zero: int
    sp: bool
    recompute: str
    micro_batch: int
    grad_accum: int
    seq: int
    time_s: float | None
    network: str
    """``infiniband``, ``roce``, ``ethernet``, ``gaudi`` or ``none`` (one node)."""
    link: str
    """The inter-node link id the plan assumed (interconnect.toml)."""
    framework: str
    script: str
    """The training entry point torchrun runs (a placeholder unless the framework has one)."""
    args: tuple[str, ...]
    """Command-line flags of the framework for this layout."""
    settings: tuple[str, ...]
    """The framework's settings that are not flags (config keys), written as comments."""
    perf_command: str

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step."""
        return self.micro_batch * self.grad_accum * self.dp


def _network_kind(link_id: str) -> str:
    if link_id.startswith("ib-"):
        return "infiniband"
    if link_id.startswith("gaudi"):
        return "gaudi"
    if link_id.startswith("roce"):
        return "roce"
    return "ethernet"


def _framework_flags(fw: Any, values: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The framework's config keys for the layout's techniques (catalog frameworks.toml, the same
    table ``suanli fit`` prints from), split into command-line flags and other settings."""
    plain = {"tp": 1, "pp": 1, "zero": 0, "sp": False, "dp": 1, "grad_accum": 1, "recompute": None}
    flags: list[str] = []
    other: list[str] = []
    for c in fw.config:
        if c.option not in values:
            continue  # a technique the plan does not choose (optimizer, offload, ...)
        value = values[c.option]
        wanted = value != plain.get(c.option) if c.value == "*" else value == c.value
        if not wanted:
            continue
        key = c.key.replace("{value}", str(value))
        (flags if key.startswith("--") else other).append(key)
    return tuple(flags), tuple(other)


def job_shape(answer: PlanAnswer, framework: str = "hf") -> JobShape:
    """The chosen row of a training plan (the first without a reason: the plan's winner) as a
    job. Raises ``ValueError`` with one sentence when there is nothing to run."""
    from suanli.answers.plan import TrainLayout
    from suanli.catalog import find_gpu, load_catalog
    from suanli.catalog.frameworks import get_framework
    from suanli.catalog.network import default_gpus_per_node, default_inter_node

    if answer.inference:
        raise ValueError(
            N_("--emit writes training jobs; this is a serving plan (--task {task})").format(
                task=answer.task
            )
        )
    row = next((r for r in answer.rows if r.runnable), None)
    if row is None or not isinstance(row.layout, TrainLayout):
        raise ValueError(
            N_(
                "no GPU in this plan can run {model} (--emit needs a runnable layout); "
                "try more GPUs (--max-gpus) or other GPUs"
            ).format(model=answer.model)
        )
    lay = row.layout
    fw = get_framework(framework)
    gpu = find_gpu(row.gpu, load_catalog())
    # The same node size and inter-node link the plan's speed model assumed for this GPU.
    per_node = min(default_gpus_per_node(gpu), lay.gpus)
    if lay.gpus % per_node:
        raise ValueError(
            N_("{gpus} GPUs do not fill whole nodes of {per_node}; plan with --gpus {fit}").format(
                gpus=lay.gpus, per_node=per_node, fit=per_node * math.ceil(lay.gpus / per_node)
            )
        )
    nodes = lay.gpus // per_node
    link = default_inter_node(gpu)
    values = {
        "tp": lay.tp,
        "pp": lay.pp,
        "dp": lay.dp,
        "zero": lay.zero,
        "sp": lay.sp,
        "recompute": lay.recompute,
        "grad_accum": lay.grad_accum,
        "task": answer.task,
    }
    flags, settings = _framework_flags(fw, values)
    script = "train.py"
    if fw.id == "megatron":
        script = "pretrain_gpt.py"
        flags = (
            *flags,
            f"--micro-batch-size {lay.batch}",
            f"--global-batch-size {lay.batch * lay.grad_accum * lay.dp}",
            f"--seq-length {answer.seq}",
        )
    return JobShape(
        name=dns_label(f"{answer.model}-{answer.task}-{row.gpu}"),
        model=answer.model,
        task=answer.task,
        gpu=row.gpu,
        vendor=gpu.vendor,
        gpus=lay.gpus,
        nodes=nodes,
        gpus_per_node=per_node,
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        zero=lay.zero,
        sp=lay.sp,
        recompute=lay.recompute,
        micro_batch=lay.batch,
        grad_accum=lay.grad_accum,
        seq=answer.seq,
        time_s=lay.time_s,
        network=_network_kind(link) if nodes > 1 else "none",
        link=link,
        framework=fw.id,
        script=script,
        args=tuple(flags),
        settings=settings,
        perf_command=answer.best_command or "",
    )


def _layout_comment(job: JobShape) -> list[str]:
    """The plan in words, for comment lines; the model (user text) escaped."""
    return [
        f"suanli plan: {comment_text(job.model)} --task {job.task} on {job.gpus} x {job.gpu}"
        f" ({job.nodes} node(s) x {job.gpus_per_node} GPUs)",
        f"layout: tp {job.tp}, pp {job.pp}, dp {job.dp}, zero {job.zero}, "
        f"sequence parallel {'on' if job.sp else 'off'}, recompute {job.recompute}, "
        f"micro-batch {job.micro_batch}, grad-accum {job.grad_accum}, "
        f"global batch {job.global_batch}, seq {job.seq}",
        f"numbers: {comment_text(job.perf_command)}",
        f"framework: {job.framework}"
        + (f" (settings for your config: {'; '.join(job.settings)})" if job.settings else ""),
    ]


def nccl_env(job: JobShape) -> list[tuple[str, str | None, str]]:
    """(variable, value or None for a commented-out line, why) for the job's network kind."""
    if job.network == "none":
        return [("NCCL_DEBUG", None, "one node: NCCL uses the GPUs' own links; set INFO to debug")]
    if job.network == "gaudi":
        return [
            ("HCCL_SOCKET_IFNAME", None, "Gaudi uses HCCL over its on-chip RoCE ports, not NCCL"),
        ]
    out: list[tuple[str, str | None, str]] = []
    if job.network in ("infiniband", "roce"):
        out.append(
            (
                "NCCL_IB_HCA",
                "mlx5",
                f"{job.link}: use the ConnectX HCAs (prefix match; pin mlx5_0,... per ibv_devinfo)",
            )
        )
    if job.network == "roce":
        out.append(("NCCL_IB_GID_INDEX", None, "the RoCE v2 GID index on your hosts (show_gids)"))
    if job.network == "ethernet":
        out.append(("NCCL_IB_DISABLE", "1", f"{job.link}: plain TCP sockets, no RDMA"))
    out.append(
        ("NCCL_SOCKET_IFNAME", None, "the interface the nodes reach each other on (ip -br addr)")
    )
    out.append(("NCCL_DEBUG", None, "set INFO to see the transport NCCL picked"))
    return out


def _slurm_time(seconds: float) -> str:
    total_min = math.ceil((seconds * TIME_MARGIN + TIME_SLACK_S) / 60)
    days, minutes = divmod(total_min, 24 * 60)
    return f"{days}-{minutes // 60:02d}:{minutes % 60:02d}:00"


def _train_command(job: JobShape, rendezvous: list[str]) -> list[str]:
    """torchrun and the script with the framework's flags, one piece per line; every flag's
    words are quoted (the script and the rendezvous pieces are ours)."""
    lines = [
        "torchrun",
        f"--nnodes={job.nodes}",
        f"--nproc-per-node={job.gpus_per_node}",
        *rendezvous,
        '"${TRAIN_SCRIPT:-' + job.script + '}"',
        *(shell_flag(flag) for flag in job.args),
        '"$@"',
    ]
    return lines


def slurm_script(job: JobShape) -> str:
    """The sbatch script for ``job``."""
    head = ["#!/bin/bash"]
    head += [
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --nodes={job.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={job.gpus_per_node}",
        "#SBATCH --exclusive",
        f"#SBATCH --output={job.name}-%j.out",
    ]
    if job.time_s is not None:
        head.append(f"#SBATCH --time={_slurm_time(job.time_s)}")
    body = ["", *(f"# {line}" for line in _layout_comment(job))]
    body += [
        "# --time: the plan's training time x1.25 + 15 min (start-up, checkpoints)."
        if job.time_s is not None
        else "# no --time: the plan has no training time; add your partition's limit",
        "# One srun task per node; torchrun starts the GPUs' processes and rendezvous on the",
        "# first node. TRAIN_SCRIPT: your training entry point; extra arguments are passed on.",
        "set -euo pipefail",
        "",
    ]
    for name, value, why in nccl_env(job):
        body.append(f"export {name}={value}  # {why}" if value else f"# export {name}=  # {why}")
    body += [
        "",
        'HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}",
        "",
    ]
    command = _train_command(
        job,
        [
            '--rdzv-id="$SLURM_JOB_ID"',
            "--rdzv-backend=c10d",
            f'--rdzv-endpoint="$HEAD_NODE:{RDZV_PORT}"',
        ],
    )
    body.append("srun --ntasks-per-node=1 " + " \\\n    ".join(command))
    return "\n".join(head + body) + "\n"


# ---- Kubernetes -----------------------------------------------------------------------------


def _container(job: JobShape, name: str, rendezvous: list[str]) -> dict[str, Any]:
    env = [{"name": n, "value": v} for n, v, _why in nccl_env(job) if v]
    resource = K8S_GPU_RESOURCE.get(job.vendor)
    if resource is None:
        raise ValueError(
            N_(
                "no Kubernetes device plugin resource is known for {vendor} GPUs; use --emit slurm"
            ).format(vendor=job.vendor)
        )
    script = "set -euo pipefail\n" + " \\\n  ".join(_train_command(job, rendezvous)[:-1]) + "\n"
    return {
        "name": name,
        "image": IMAGE,
        "command": ["bash", "-c", script],
        "env": env,
        # A Quantity is a string in the Kubernetes schema.
        "resources": {
            "limits": {resource: str(job.gpus_per_node)},
            "requests": {resource: str(job.gpus_per_node)},
        },
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _pod_spec(container: dict[str, Any], restart: str) -> dict[str, Any]:
    # NCCL and the data loaders share memory through /dev/shm; the default 64 MiB is too small.
    return {
        "restartPolicy": restart,
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }


def k8s_objects(job: JobShape) -> list[dict[str, Any]]:
    """A batch/v1 Indexed Job (one pod per node), with a headless Service giving the pods DNS
    names for the rendezvous when it spans nodes."""
    labels = {"app.kubernetes.io/name": job.name, "app.kubernetes.io/managed-by": "suanli"}
    endpoint = f"{job.name}-0.{job.name}:{RDZV_PORT}"
    rendezvous = (
        [
            "--node-rank=$JOB_COMPLETION_INDEX",
            f"--rdzv-id={job.name}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={endpoint}",
        ]
        if job.nodes > 1
        else ["--standalone"]
    )
    pod = _pod_spec(_container(job, "trainer", rendezvous), "Never")
    if job.nodes > 1:
        pod["subdomain"] = job.name
    objects: list[dict[str, Any]] = []
    if job.nodes > 1:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": job.name, "labels": labels},
                "spec": {
                    "clusterIP": "None",
                    "selector": {"job-name": job.name},
                    "ports": [{"name": "rendezvous", "port": RDZV_PORT}],
                },
            }
        )
    objects.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job.name, "labels": labels},
            "spec": {
                "completionMode": "Indexed",
                "completions": job.nodes,
                "parallelism": job.nodes,
                "backoffLimit": 0,
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        }
    )
    return objects


def kubeflow_object(job: JobShape) -> dict[str, Any]:
    """A Kubeflow PyTorchJob (kubeflow.org/v1): a Master and ``nodes - 1`` Workers; the
    training operator sets MASTER_ADDR, MASTER_PORT and RANK (the node's rank)."""
    rendezvous = [
        "--node-rank=$RANK",
        "--master-addr=$MASTER_ADDR",
        "--master-port=$MASTER_PORT",
    ]
    replica = {
        "restartPolicy": "OnFailure",
        "template": {"spec": _pod_spec(_container(job, "pytorch", rendezvous), "OnFailure")},
    }
    specs: dict[str, Any] = {"Master": {"replicas": 1, **replica}}
    if job.nodes > 1:
        specs["Worker"] = {"replicas": job.nodes - 1, **replica}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": job.name},
        "spec": {"nprocPerNode": str(job.gpus_per_node), "pytorchReplicaSpecs": specs},
    }


def _manifest(job: JobShape, objects: list[dict[str, Any]], note: str) -> str:
    head = [f"# {line}" for line in (*_layout_comment(job), note)]
    head += [f"# {name}: {why}" for name, value, why in nccl_env(job) if not value]
    return "\n".join(head) + "\n" + yaml_documents(objects)


def emit(answer: PlanAnswer, kind: str, framework: str = "hf") -> str:
    """The plan's chosen layout as a Slurm script, a Kubernetes or a Kubeflow manifest (a
    serving plan: :func:`suanli.views.emit_serve.emit_serving`)."""
    refuse_control(answer.model)
    if answer.inference:
        from suanli.views.emit_serve import emit_serving

        return emit_serving(answer, kind, framework)
    job = job_shape(answer, framework)
    if kind == "slurm":
        return slurm_script(job)
    if kind == "k8s":
        return _manifest(
            job, k8s_objects(job), f"image: replace {IMAGE} with an image holding your script"
        )
    if kind == "kubeflow":
        return _manifest(
            job,
            [kubeflow_object(job)],
            f"needs the Kubeflow training operator; replace {IMAGE} with your image",
        )
    raise ValueError(
        N_("--emit {kind!r} is not one of {choices}").format(
            kind=kind, choices=", ".join(EMIT_KINDS)
        )
    )
