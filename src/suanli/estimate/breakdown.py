"""The shape of a memory answer: explained lines summed into buckets, and the runtime overhead
every process pays (CUDA context, cuBLAS workspace, allocator reserve, NCCL buffers).

Shared by the training (:mod:`suanli.estimate.memory`) and inference
(:mod:`suanli.estimate.inference_memory`) breakdowns.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.catalog.formats import overhead_bytes, overhead_fraction
from suanli.estimate.activations import Term
from suanli.estimate.workload import Overheads
from suanli.i18n import N_

BREAKDOWN_KEYS = (
    "weights",
    "master_weights",
    "gradients",
    "optimizer",
    "activations",
    "logits",
    "kv_cache",
    "overhead",
    "overlap",
)


@dataclass(frozen=True, kw_only=True)
class Line:
    """One explained line of a breakdown."""

    key: str
    """The breakdown bucket (one of :data:`BREAKDOWN_KEYS`)."""
    label: str
    bytes: float
    formula: str
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class MemoryBreakdown:
    """Bytes per GPU, by component, with the lines that explain them."""

    total_bytes: float
    breakdown: dict[str, float]
    lines: tuple[Line, ...]
    assumptions: tuple[str, ...]
    per_layer: tuple[Term, ...] = ()
    """Activation terms of one layer (bytes per token), for ``--explain``."""
    cpu_bytes: float = 0.0
    """Host memory the workload needs (offloaded optimizer states)."""
    tokens: int = 0
    """Tokens per micro-batch (training) or in the KV cache (inference)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: bytes as integers."""
        return {
            "total_bytes": round(self.total_bytes),
            "breakdown": {k: round(v) for k, v in self.breakdown.items()},
            "cpu_bytes": round(self.cpu_bytes),
            "lines": [
                {
                    "key": ln.key,
                    "label": ln.label,
                    "bytes": round(ln.bytes),
                    "formula": ln.formula,
                    "source": ln.source,
                }
                for ln in self.lines
            ],
            "assumptions": list(self.assumptions),
        }


def assemble(lines: list[Line], assumptions: list[str], **extra: object) -> MemoryBreakdown:
    """The breakdown of ``lines`` summed by bucket, with ``extra`` fields set."""
    breakdown = dict.fromkeys(BREAKDOWN_KEYS, 0.0)
    for line in lines:
        breakdown[line.key] += line.bytes
    return MemoryBreakdown(
        total_bytes=sum(breakdown.values()),
        breakdown=breakdown,
        lines=tuple(lines),
        assumptions=tuple(assumptions),
        **extra,  # type: ignore[arg-type]
    )


def runtime_overhead(
    lines: list[Line], overheads: Overheads, multi_gpu: bool, assumptions: list[str]
) -> list[Line]:
    """CUDA context, allocator reserve (a fraction of what tensors take) and NCCL buffers."""
    out = []
    context, source = overhead_bytes("cuda-context")
    if overheads.cuda_context_bytes is not None:
        context, source = overheads.cuda_context_bytes, N_("user value")
    out.append(
        Line(
            key="overhead",
            label=N_("CUDA context and kernels"),
            bytes=context,
            formula=N_("per process"),
            source=source,
        )
    )
    workspace, source = overhead_bytes("cublas-workspace-sm90")
    out.append(
        Line(
            key="overhead",
            label=N_("cuBLAS workspace"),
            bytes=workspace,
            formula=N_("one stream, sm90"),
            source=source,
        )
    )
    # A serving engine's preallocated KV pool does not fragment; everything else can.
    tensors = sum(ln.bytes for ln in lines if ln.key != "kv_cache")
    fraction = overheads.fragmentation
    frag_source = N_("user value")
    if fraction is None:
        fraction, frag_source = overhead_fraction("torch-allocator-fragmentation")
    out.append(
        Line(
            key="overhead",
            label=N_("allocator reserve and fragmentation"),
            bytes=tensors * fraction,
            formula=N_("{fraction:g} x allocated tensors").format(fraction=fraction),
            source=frag_source,
        )
    )
    if multi_gpu:
        nccl, source = overhead_bytes("nccl-communicator-typical")
        if overheads.nccl_bytes is not None:
            nccl, source = overheads.nccl_bytes, N_("user value")
        out.append(
            Line(
                key="overhead",
                label=N_("NCCL communicator buffers"),
                bytes=nccl,
                formula=N_("per GPU"),
                source=source,
            )
        )
    assumptions.append(
        N_(
            "runtime overhead: CUDA context, cuBLAS workspace, allocator reserve, NCCL buffers "
            "(defaults in catalog/data/overhead.toml; override with --cuda-context, "
            "--fragmentation, --nccl)"
        )
        if multi_gpu
        else N_(
            "runtime overhead: CUDA context, cuBLAS workspace, allocator reserve "
            "(defaults in catalog/data/overhead.toml; override with --cuda-context, "
            "--fragmentation, --nccl)"
        )
    )
    return out
