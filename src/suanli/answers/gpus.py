"""Which GPUs are there? The catalog filtered and sorted (``suanli gpus``, ``GET /api/gpus``) and
one GPU in full with the source of every figure (``suanli gpu NAME``).

A GPU's JSON object is the catalog's own serialisation, :meth:`suanli.catalog.GPU.as_dict`: its
fixed fields, then every figure the catalog holds for it (keys vary by GPU, docs/catalog.md),
then ``aliases``, ``uncertain`` and ``sources``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suanli.answers.base import NOT_IN_JSON, SCHEMA_VERSION, Answer
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.query import filter_gpus, sort_gpus
from suanli.units import GiB


@dataclass(frozen=True)
class GpuListRequest:
    """Which part of the catalog, in which order."""

    vendors: tuple[str, ...] = ()
    """Keep only these vendors (none: all)."""
    form_factors: tuple[str, ...] = ()
    """Keep only these form factors (none: all)."""
    min_memory: float | None = None
    """Keep GPUs with at least this much memory, in GiB."""
    sort: str = "bf16"
    """A metric alias (bf16, memory, bandwidth, ...) or any numeric field name."""
    ascending: bool = False
    """Smallest first (default: largest first)."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""


@dataclass(frozen=True)
class GpuListAnswer(Answer):
    """The GPUs that pass the filters, in the order asked for.

    Its document (``suanli gpus --json``, ``GET /api/gpus``) is ``schema_version``, then
    ``gpus``: one object per GPU, the catalog's fields in base units (docs/catalog.md).
    """

    schema_name = "gpus"

    gpus: tuple[dict[str, Any], ...]
    """One object per GPU (the catalog's fields, base units)."""
    sort: str
    """The metric the GPUs are sorted by (as asked: an alias or a field name)."""
    ascending: bool
    """Whether the smallest come first."""
    devices: tuple[GPU, ...] = field(default=(), metadata=NOT_IN_JSON)
    """The catalog records, for renderers."""


def gpu_list(req: GpuListRequest) -> GpuListAnswer:
    """The catalog filtered by vendor, form factor and memory, sorted by ``req.sort``.

    Raises ``ValueError`` with one sentence on an unknown sort key or a bad catalog file.
    """
    gpus = filter_gpus(
        load_catalog(req.catalog_file),
        vendors=req.vendors,
        form_factors=req.form_factors,
        min_memory_bytes=int(req.min_memory * GiB) if req.min_memory is not None else None,
    )
    gpus = sort_gpus(gpus, req.sort, descending=not req.ascending)
    return GpuListAnswer(
        gpus=tuple(g.as_dict() for g in gpus),
        sort=req.sort,
        ascending=req.ascending,
        devices=tuple(gpus),
    )


@dataclass(frozen=True)
class GpuRequest:
    """One GPU by name."""

    name: str
    """Any name the catalog knows (case, spaces and dashes forgiven) or an alias."""
    catalog_file: str | None = None


@dataclass(frozen=True)
class GpuAnswer(Answer):
    """One GPU in full: every figure the catalog holds, with its sources.

    The document is ``schema_version`` followed by :meth:`GPU.as_dict` (the fixed fields below,
    then the GPU's figures, then ``aliases``, ``uncertain`` and ``sources``).
    """

    schema_name = "gpu"

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_bytes: int
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    launch_year: int
    software_stack: str
    gpu: GPU = field(metadata=NOT_IN_JSON)
    """The catalog record (its figures, aliases and sources)."""

    def to_json(self) -> dict[str, Any]:
        """``schema_version``, then the catalog's serialisation of the GPU."""
        return {"schema_version": SCHEMA_VERSION, **self.gpu.as_dict()}


def gpu_detail(req: GpuRequest) -> GpuAnswer:
    """The GPU ``req.name`` names. Raises ``ValueError`` on an unknown or ambiguous name."""
    gpu = find_gpu(req.name, load_catalog(req.catalog_file))
    return GpuAnswer(
        id=gpu.id,
        name=gpu.name,
        vendor=gpu.vendor,
        form_factor=gpu.form_factor,
        memory_bytes=gpu.memory_bytes,
        memory_type=gpu.memory_type,
        memory_bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s,
        launch_year=gpu.launch_year,
        software_stack=gpu.software_stack,
        gpu=gpu,
    )
