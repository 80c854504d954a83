"""The workload a question is about, as every front-end gives it: one frozen request type.

:class:`WorkRequest` holds the shared workload options of ``mem``, ``perf``, ``plan``, ``fit``
and ``verify`` (the CLI's ``--task``, ``--batch``, ... and the web form's fields, same names, same
defaults); :func:`build_work` turns it into the estimators' :class:`TrainWork` or
:class:`InferWork`, raising ``ValueError`` with one sentence on inconsistent values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from suanli.estimate.workload import InferWork, Overheads, Parallelism, TrainWork
from suanli.units import GiB

#: Data-centre power usage effectiveness used for energy when none is given
#: (Uptime Institute 2024 global average 1.56; see catalog docs).
DEFAULT_PUE = 1.5


@dataclass(frozen=True)
class WorkRequest:
    """What to run and how it is laid out (the CLI's workload options)."""

    task: str = "lora"
    """pretrain, full, lora, qlora or infer."""
    batch: int | None = None
    """Micro-batch per GPU (training) or concurrent sequences (inference); default 1."""
    global_batch: int | None = None
    """Sequences per optimizer step; sets gradient accumulation."""
    grad_accum: int = 1
    """Micro-batches per optimizer step."""
    seq: int = 2048
    """Training sequence length in tokens."""
    context: int = 4096
    """Inference: tokens per sequence held in the KV cache."""
    dtype: str = "bf16"
    precision: str = "mixed"
    optimizer: str = "adamw"
    recompute: str = "none"
    attention: str = "sdpa"
    kernels: str = "eager"
    zero: int = 0
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    dp: int | None = None
    """Data-parallel replicas (default: gpus / (tp x pp))."""
    ep: int = 1
    sp: bool = False
    gpus: int | None = None
    """GPUs in the job (training: dp x tp x pp; inference: tp, or tp x pp with pp > 1)."""
    offload_optimizer: bool = False
    lora_rank: int = 16
    lora_targets: str = "q,k,v,o"
    """Comma-separated modules with adapters."""
    dropout: float | None = None
    quant: str = "bf16"
    """Inference weight format (catalog/data/quant.toml)."""
    kv_dtype: str = "bf16"
    prefill_chunk: int | None = None
    gpu_memory_utilization: float | None = None
    cuda_context: float | None = None
    """CUDA context per process, GiB."""
    fragmentation: float | None = None
    nccl: float | None = None
    """NCCL buffers per GPU when GPUs > 1, GiB."""

    @classmethod
    def from_options(cls, opts: dict[str, Any]) -> WorkRequest:
        """The request from a dict of options (extra keys are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in opts.items() if k in names})

    def shape_only(self, task: str, quant: str) -> WorkRequest:
        """This work with the layout reset to the defaults (what ``plan`` searches over)."""
        return replace(
            self,
            task=task,
            quant=quant,
            **{name: getattr(WorkRequest, name) for name in LAYOUT_FIELDS},
        )


#: The fields that describe the layout rather than the work (``plan`` searches them).
LAYOUT_FIELDS = (
    "batch",
    "global_batch",
    "grad_accum",
    "zero",
    "tp",
    "pp",
    "vpp",
    "dp",
    "ep",
    "sp",
    "gpus",
    "offload_optimizer",
    "recompute",
    "prefill_chunk",
    "gpu_memory_utilization",
)

#: The fields that describe the work itself (``plan`` takes only these).
SHAPE_FIELDS = tuple(f.name for f in fields(WorkRequest) if f.name not in LAYOUT_FIELDS)


def lora_target_tuple(text: str) -> tuple[str, ...]:
    """``"q,k,v"`` -> ``("q", "k", "v")``; an empty list is an error."""
    targets = tuple(t.strip() for t in text.split(",") if t.strip())
    if not targets:
        raise ValueError("--lora-targets is empty; give e.g. q,v or q,k,v,o,gate,up,down")
    return targets


def build_work(req: WorkRequest) -> TrainWork | InferWork:
    """The workload the request describes; raises ValueError on inconsistent values."""
    overheads = Overheads(
        cuda_context_bytes=req.cuda_context * GiB if req.cuda_context is not None else None,
        fragmentation=req.fragmentation,
        nccl_bytes=req.nccl * GiB if req.nccl is not None else None,
    )
    gpus = req.gpus
    if req.task == "infer":
        if req.pp > 1:
            if gpus is not None and gpus != req.tp * req.pp:
                raise ValueError(f"--gpus {gpus} != tp x pp = {req.tp * req.pp}; drop one of them")
            tp = req.tp
        else:
            tp = req.tp if req.tp > 1 or gpus is None else gpus
        return InferWork(
            batch=req.batch or 1,
            context=req.context,
            weight_format=req.quant,
            kv_dtype=req.kv_dtype,
            tp=tp,
            pp=req.pp,
            prefill_chunk=req.prefill_chunk,
            gpu_memory_utilization=req.gpu_memory_utilization,
            overheads=overheads,
        )
    tp, pp = req.tp, req.pp
    dp = req.dp
    if dp is None:
        if gpus is not None and gpus % (tp * pp):
            raise ValueError(f"--gpus {gpus} is not a multiple of tp x pp = {tp * pp}")
        dp = gpus // (tp * pp) if gpus is not None else 1
    elif gpus is not None and gpus != dp * tp * pp:
        raise ValueError(f"--gpus {gpus} != dp x tp x pp = {dp * tp * pp}; drop one of them")
    batch = req.batch or 1
    grad_accum = req.grad_accum
    if req.global_batch is not None:
        per_step = batch * dp
        if req.global_batch % per_step:
            raise ValueError(
                f"--global-batch {req.global_batch} is not a multiple of batch x dp = {per_step}"
            )
        grad_accum = req.global_batch // per_step
    return TrainWork(
        task=req.task,
        batch=batch,
        seq=req.seq,
        grad_accum=grad_accum,
        dtype=req.dtype,
        precision=req.precision,
        optimizer=req.optimizer,
        recompute=req.recompute,
        attention=req.attention,
        parallel=Parallelism(dp=dp, tp=tp, pp=pp, vpp=req.vpp, sp=req.sp, ep=req.ep, zero=req.zero),
        offload_optimizer=req.offload_optimizer,
        lora_rank=req.lora_rank,
        lora_targets=lora_target_tuple(req.lora_targets),
        dropout=req.dropout,
        overheads=overheads,
        kernels=req.kernels,
    )
