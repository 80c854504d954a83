"""Which GPUs are there? The catalog filtered and sorted (``suanli gpus``, ``GET /api/gpus``) and
one GPU in full with the source of every figure (``suanli gpu NAME``).

A GPU's JSON object is the catalog's own serialisation, :meth:`suanli.catalog.GPU.as_dict`: its
fixed fields, then every figure the catalog holds for it (keys vary by GPU, docs/catalog.md),
then ``aliases``, ``uncertain`` and ``sources``; then ``rent`` and ``buy``, the rent per GPU-hour
and the purchase price every view shows for the card (:mod:`suanli.catalog.prices`: provider,
kind, date and source; null when none is known). The catalog's own ``cloud_usd_per_hour`` and
``price_usd`` stay as stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suanli.answers.base import NOT_IN_JSON, SCHEMA_VERSION, Answer, jsonable
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.prices import Price, buy_price, rent_price
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


@dataclass(frozen=True, kw_only=True)
class GpuListAnswer(Answer):
    """The GPUs that pass the filters, in the order asked for.

    Its document (``suanli gpus --json``, ``GET /api/gpus``) is ``schema_version``, then
    ``gpus``: one object per GPU, the catalog's fields in base units (docs/catalog.md).
    """

    schema_name = "gpus"

    gpus: tuple[dict[str, Any], ...]
    """One object per GPU (the catalog's fields, base units, then ``rent`` and ``buy``)."""
    sort: str
    """The metric the GPUs are sorted by (as asked: an alias or a field name)."""
    ascending: bool
    """Whether the smallest come first."""
    devices: tuple[GPU, ...] = field(default=(), metadata=NOT_IN_JSON)
    """The catalog records, for renderers."""
    rents: tuple[Price | None, ...] = field(default=(), metadata=NOT_IN_JSON)
    """The rent every view shows of each of ``devices`` (also each object's ``rent``)."""
    buys: tuple[Price | None, ...] = field(default=(), metadata=NOT_IN_JSON)
    """The purchase price every view shows of each of ``devices`` (each object's ``buy``)."""


def gpu_document(gpu: GPU, rent: Price | None, buy: Price | None) -> dict[str, Any]:
    """One GPU's object: the catalog's serialisation, then its ``rent`` and ``buy`` prices."""
    return {**gpu.as_dict(), "rent": jsonable(rent), "buy": jsonable(buy)}


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
    rents = tuple(rent_price(g) for g in gpus)
    buys = tuple(buy_price(g) for g in gpus)
    return GpuListAnswer(
        gpus=tuple(gpu_document(*row) for row in zip(gpus, rents, buys, strict=True)),
        sort=req.sort,
        ascending=req.ascending,
        devices=tuple(gpus),
        rents=rents,
        buys=buys,
    )


@dataclass(frozen=True)
class GpuRequest:
    """One GPU by name."""

    name: str
    """Any name the catalog knows (case, spaces and dashes forgiven) or an alias."""
    catalog_file: str | None = None
    rent: float | None = None
    """Rent per GPU-hour in USD, shown instead of the data's (as ``given``)."""
    price: float | None = None
    """Purchase price per GPU in USD, shown instead of the data's (as ``given``)."""


@dataclass(frozen=True, kw_only=True)
class GpuAnswer(Answer):
    """One GPU in full: every figure the catalog holds, with its sources.

    The document is ``schema_version`` followed by :meth:`GPU.as_dict` (the fixed fields below,
    then the GPU's figures, then ``aliases``, ``uncertain`` and ``sources``), then ``rent`` and
    ``buy``.
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
    rent: Price | None
    """The rent per GPU-hour every view shows for this card (provider, kind, date, source);
    null when none is known."""
    buy: Price | None
    """The purchase price per GPU every view shows for this card; null when none is known."""

    def to_json(self) -> dict[str, Any]:
        """``schema_version``, then the catalog's serialisation of the GPU, then its prices."""
        return {"schema_version": SCHEMA_VERSION, **gpu_document(self.gpu, self.rent, self.buy)}


def gpu_detail(req: GpuRequest) -> GpuAnswer:
    """The GPU ``req.name`` names, with its prices (``req.rent`` and ``req.price`` replace the
    data's). Raises ``ValueError`` on an unknown or ambiguous name or a negative price."""
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
        rent=rent_price(gpu, override_usd_per_hour=req.rent),
        buy=buy_price(gpu, override_usd_per_gpu=req.price),
    )
