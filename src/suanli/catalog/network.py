"""Interconnects (``data/interconnect.toml``) and measured ceilings (``data/efficiency.toml``).

Turns a catalog GPU into the numbers the speed model needs: its network tiers and the share of
its datasheet peaks that real kernels reach. Every value comes from a data row with a source.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from suanli.catalog.gpu import GPU, PRECISION_FIELDS
from suanli.catalog.loader import CatalogError
from suanli.estimate.comm import Link, Network

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _read(name: str) -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{name}: not valid TOML ({exc})") from None
    return data


@dataclass(frozen=True)
class LinkSpec:
    """A kind of interconnect, as stored in interconnect.toml."""

    id: str
    name: str
    tier: str
    unidirectional_bytes_per_s: float
    latency_s: float
    bus_efficiency: float
    source: str
    date: str

    def link(self, bandwidth: float | None = None) -> Link:
        """As a :class:`Link`, optionally with a GPU-specific bandwidth."""
        bw = bandwidth if bandwidth is not None else self.unidirectional_bytes_per_s
        return Link(self.name, bw, self.latency_s, self.bus_efficiency)


@lru_cache(maxsize=1)
def links() -> dict[str, LinkSpec]:
    """All interconnect kinds by id, validated."""
    out: dict[str, LinkSpec] = {}
    for raw in _read("interconnect.toml").get("link", []):
        lid = str(raw.get("id", ""))
        try:
            spec = LinkSpec(
                id=lid,
                name=str(raw["name"]),
                tier=str(raw["tier"]),
                unidirectional_bytes_per_s=float(raw["unidirectional_bytes_per_s"]),
                latency_s=float(raw["latency_s"]),
                bus_efficiency=float(raw["bus_efficiency"]),
                source=str(raw["source"]),
                date=str(raw["date"]),
            )
        except KeyError as exc:
            raise CatalogError(f"interconnect.toml, link {lid!r}: missing {exc}") from None
        if not 1e8 <= spec.unidirectional_bytes_per_s <= 2e13:
            raise CatalogError(f"interconnect.toml, link {lid!r}: implausible bandwidth")
        if not 1e-8 <= spec.latency_s <= 1e-3 or not 0 < spec.bus_efficiency <= 1:
            raise CatalogError(f"interconnect.toml, link {lid!r}: implausible latency/efficiency")
        out[lid] = spec
    return out


def get_link(link_id: str) -> LinkSpec:
    """An interconnect kind by id; ValueError lists the known ones."""
    table = links()
    if link_id not in table:
        raise ValueError(f"unknown interconnect {link_id!r}; use one of {', '.join(table)}")
    return table[link_id]


#: PCIe link ids by generation (x16).
_PCIE = {3: "pcie3-x16", 4: "pcie4-x16", 5: "pcie5-x16", 6: "pcie6-x16"}
#: NVLink kinds in the GPU catalog -> link ids in interconnect.toml.
_NVLINK = {"nvlink2": "nvlink2", "nvlink3": "nvlink3", "nvlink4": "nvlink4", "nvlink5": "nvlink5"}


def _pcie_link(gpu: GPU) -> LinkSpec:
    gen = int(gpu.get("pcie_gen") or 4)
    return get_link(_PCIE.get(min(max(gen, 3), 6), "pcie4-x16"))


#: GeForce cards have peer-to-peer disabled: NCCL stages GPU-to-GPU traffic through host
#: memory and nccl-tests reach about half of the PCIe link (0.45-0.56, see
#: docs/research/interconnect-and-efficiency-sources.md).
NO_P2P_FACTOR = 0.5


def intra_node_link(gpu: GPU) -> Link:
    """GPU-to-GPU inside a node: NVLink (the GPU's own per-direction bandwidth), Infinity
    Fabric, Gaudi's on-chip RoCE, or PCIe (halved on GeForce cards without peer-to-peer)."""
    kind = gpu.get("interconnect_kind")
    total = gpu.get("interconnect_bytes_per_s")
    if kind in _NVLINK and _NVLINK[kind] in links():
        spec = links()[_NVLINK[kind]]
        return spec.link(total / 2 if total else None)
    if kind == "infinity-fabric" and total and "infinity-fabric-mi300x" in links():
        return links()["infinity-fabric-mi300x"].link(total / 2)
    if kind == "roce" and gpu.vendor == "intel":
        lid = "gaudi3-roce" if "gaudi3" in gpu.id else "gaudi-roce"
        if lid in links():
            return links()[lid].link(total / 2 if total else None)
    pcie = _pcie_link(gpu)
    lanes = int(gpu.get("pcie_lanes") or 16)
    link = pcie.link(pcie.unidirectional_bytes_per_s * lanes / 16)
    if gpu.vendor == "nvidia" and gpu.form_factor == "consumer":
        link = Link(
            f"{link.name} (no P2P: via host memory)",
            link.bandwidth_bytes_per_s,
            link.latency_s,
            link.efficiency * NO_P2P_FACTOR,
        )
    return link


def default_inter_node(gpu: GPU) -> str:
    """Inter-node link id a typical cluster of this GPU uses (overridable with --inter-node)."""
    if gpu.vendor == "intel" and "gaudi" in gpu.id:
        scaleout = "gaudi3-roce-scaleout" if "gaudi3" in gpu.id else "gaudi2-roce-scaleout"
        if scaleout in links():
            return scaleout
    if gpu.form_factor in ("sxm", "oam"):
        return "ib-ndr" if gpu.launch_year >= 2022 else "ib-hdr"
    if gpu.form_factor == "pcie":
        return "roce-200g" if "roce-200g" in links() else "eth-100g"
    return "eth-25g"


def default_gpus_per_node(gpu: GPU) -> int:
    """GPUs per node of the usual server for this form factor."""
    return {"sxm": 8, "oam": 8, "pcie": 8, "workstation": 4, "consumer": 8, "soc": 1}.get(
        gpu.form_factor, 8
    )


def network_for(gpu: GPU, gpus_per_node: int | None = None, inter: str | None = None) -> Network:
    """The two network tiers a job on ``gpu`` sees."""
    intra = intra_node_link(gpu)
    inter_spec = get_link(inter or default_inter_node(gpu))
    return Network(intra, inter_spec.link(), gpus_per_node or default_gpus_per_node(gpu))


@dataclass(frozen=True)
class Ceiling:
    """The share of a datasheet peak that real kernels reach, and where that comes from."""

    matmul_fraction: float
    memory_fraction: float
    source: str


@lru_cache(maxsize=1)
def _efficiency_table() -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, dict[str, Any]]]:
    data = _read("efficiency.toml")
    ceilings = {(str(r["gpu_id"]), str(r["precision"])): r for r in data.get("ceiling", [])}
    defaults = {str(r["id"]): r for r in data.get("default", [])}
    return ceilings, defaults


def _default_class(gpu: GPU) -> str:
    """The efficiency.toml default row for a GPU without its own measurement."""
    arch = str(gpu.get("architecture") or "").lower()
    if gpu.vendor == "nvidia":
        return {
            "sxm": "nvidia-datacenter-sxm",
            "pcie": "nvidia-datacenter-pcie",
            "workstation": "nvidia-workstation",
        }.get(gpu.form_factor, "nvidia-geforce")
    if gpu.vendor == "amd":
        if gpu.form_factor == "consumer":
            return "amd-radeon"
        return "amd-instinct-cdna3" if "3" in arch else "amd-instinct-cdna2"
    if gpu.vendor == "intel":
        return "intel-gaudi" if "gaudi" in gpu.id else "intel-arc"
    if gpu.vendor == "apple":
        return "apple-silicon"
    return "fallback"


def ceiling_for(gpu: GPU, precision: str) -> Ceiling:
    """Matmul and memory efficiency: a measured ceiling when the table has one for this GPU and
    precision, else the class default (median of the measured rows of that class)."""
    ceilings, defaults = _efficiency_table()
    default = defaults.get(_default_class(gpu)) or defaults.get("fallback") or {}
    mem_fraction = float(default.get("memory_fraction", 0.85))
    row = ceilings.get((gpu.id, precision))
    if row is None and precision == "fp16":
        row = ceilings.get((gpu.id, "bf16"))
    if row is not None:
        peak = gpu.peak_flops(precision) or gpu.peak_flops("fp16")
        if peak:
            measured_bw = row.get("memory_bandwidth_bytes_per_s")
            if measured_bw:
                mem_fraction = float(measured_bw) / gpu.memory_bandwidth_bytes_per_s
            fraction = min(float(row["matmul_flops"]) / peak, 1.0)
            return Ceiling(fraction, mem_fraction, f"measured: {row['source']} ({row['date']})")
    fraction = float(default.get("matmul_fraction", 0.7))
    source = str(default.get("source", "class default"))
    return Ceiling(fraction, mem_fraction, f"class default {_default_class(gpu)}: {source}")


def compute_precision(gpu: GPU, dtype: str) -> str:
    """The tensor precision a dtype runs at on this GPU (bf16 falls back to fp16 on V100/T4;
    a CPU without a 16-bit rate runs in fp32)."""
    if gpu.form_factor == "cpu":
        # CPU frameworks run whichever is faster: bf16 only pays with AMX-class units.
        rate = gpu.peak_flops(dtype) if dtype in PRECISION_FIELDS else None
        return dtype if rate and rate >= (gpu.peak_flops("fp32") or 0) else "fp32"
    if dtype in ("bf16", "fp16", "fp8") and gpu.peak_flops(dtype):
        return dtype
    if dtype == "bf16" and gpu.peak_flops("fp16"):
        return "fp16"
    if dtype == "fp8":
        return "bf16" if gpu.peak_flops("bf16") else "fp16"
    if dtype == "fp32":
        return "fp32"
    if dtype in PRECISION_FIELDS and gpu.peak_flops(dtype):
        return dtype
    raise ValueError(f"{gpu.id} has no tensor rate for {dtype} in the catalog; pick another GPU")
