"""The GPU record and the schema of its catalog entries.

Every field is in a base unit named in the field: bytes, bytes/s, FLOP/s (dense), OP/s for
integers, watts, USD. A datasheet figure quoted "with sparsity" is never stored in a ``*_dense_*``
field; the optional ``*_sparse_*`` fields hold it and must be exactly twice the dense one.

CPUs are entries too (``form_factor = "cpu"``, ``software_stack = "cpu"``): their peaks are
cores x clock x FLOP per cycle per core for the instruction set named in ``instruction_set``,
their memory bandwidth is the theoretical channels x transfer rate x 8 bytes (see docs/catalog.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suanli.i18n import N_

#: Allowed values for enumerated fields.
VENDORS = (
    "nvidia",
    "amd",
    "intel",
    "huawei",
    "apple",
    # China domestic vendors (docs/catalog.md, "China-market and domestic accelerators").
    "hygon",
    "cambricon",
    "kunlunxin",
    "moorethreads",
    "metax",
    "iluvatar",
    "biren",
    "enflame",
)
FORM_FACTORS = ("sxm", "oam", "pcie", "workstation", "consumer", "soc", "mezzanine", "cpu")
#: ``cpu`` is PyTorch's CPU backend: oneDNN/MKL (or OpenBLAS) on x86, Accelerate/NEON on Apple,
#: OpenBLAS/Arm Performance Libraries/oneDNN-ACL on other Arm.
#: The China domestic stacks: ``dtk`` Hygon DTK (a ROCm/HIP derivative), ``neuware`` Cambricon
#: (CNToolkit, torch_mlu), ``xpu-kunlun`` Kunlunxin XPU (XRE/XDNN, Paddle and torch_xmlir),
#: ``musa`` Moore Threads (torch_musa), ``maca`` MetaX MXMACA (CUDA-like), ``corex`` Iluvatar
#: CoreX/IXUCA (CUDA-compatible), ``biren`` BIRENSUPA, ``enflame`` Enflame TopsRider (torch_gcu).
SOFTWARE_STACKS = (
    "cuda",
    "rocm",
    "oneapi",
    "synapseai",
    "cann",
    "metal",
    "cpu",
    "dtk",
    "neuware",
    "xpu-kunlun",
    "musa",
    "maca",
    "corex",
    "biren",
    "enflame",
)
INTERCONNECT_KINDS = (
    "none",
    "pcie",
    "nvlink1",
    "nvlink2",
    "nvlink3",
    "nvlink4",
    "nvlink5",
    "nvlink-bridge",
    "infinity-fabric",
    "hccs",
    "roce",
    "unified",
)

#: Numeric figures: name -> (low, high) plausible range. A figure outside is a data error.
NUMERIC_FIELDS: dict[str, tuple[float, float]] = {
    "memory_bytes": (2 * 2**30, 1024 * 2**30),
    "memory_bandwidth_bytes_per_s": (50e9, 30e12),
    "peak_fp64_flops": (0.05e12, 200e12),
    "peak_fp64_tensor_flops": (1e12, 200e12),
    "peak_fp32_flops": (1e12, 500e12),
    "peak_tf32_dense_flops": (5e12, 5e15),
    "peak_fp16_dense_flops": (1e12, 1e16),
    "peak_bf16_dense_flops": (1e12, 1e16),
    "peak_fp8_dense_flops": (10e12, 2e16),
    "peak_fp4_dense_flops": (20e12, 4e16),
    "peak_int8_dense_ops": (1e12, 2e16),
    "peak_int4_dense_ops": (20e12, 4e16),
    "peak_fp16_sparse_flops": (10e12, 2e16),
    "peak_bf16_sparse_flops": (10e12, 2e16),
    "peak_fp8_sparse_flops": (20e12, 4e16),
    "peak_fp4_sparse_flops": (40e12, 8e16),
    "peak_int8_sparse_ops": (20e12, 4e16),
    "interconnect_bytes_per_s": (1e9, 10e12),
    "pcie_gen": (3, 6),
    "pcie_lanes": (1, 16),
    "tdp_watts": (10, 2000),
    "launch_year": (2014, 2027),
    "price_usd": (100, 100_000),
    "cloud_usd_per_hour": (0.05, 50),
    # Media and ray-tracing engines (docs/catalog.md, "Media engines"): one vendor-neutral scheme
    # under NVIDIA's names. nvenc_engines / nvdec_engines count hardware video encode / decode
    # engines (NVIDIA NVENC/NVDEC, AMD VCN instances, Intel Xe media engines, Apple media
    # encode engines); rt_cores counts ray-tracing units (NVIDIA RT cores, AMD Ray
    # Accelerators, Intel RTUs). 0 means "has none" (H100: no NVENC); absent means unknown.
    "nvenc_engines": (0, 16),
    "nvdec_engines": (0, 16),
    "rt_cores": (0, 1000),
    # CPU figures (form_factor "cpu"); optional, and meaningful only for CPUs.
    "cores": (1, 512),
    "base_clock_ghz": (0.5, 6),
    "boost_clock_ghz": (0.5, 7),
    "memory_channels": (1, 24),
}

#: Text figures and their meaning.
TEXT_FIELDS = {
    "id": "unique lower-case id, e.g. 'h100-sxm-80gb'",
    "name": "display name",
    "vendor": f"one of {', '.join(VENDORS)}",
    "architecture": "GPU or CPU core architecture, e.g. 'Hopper', 'Zen 4'",
    "form_factor": f"one of {', '.join(FORM_FACTORS)}",
    "memory_type": "e.g. 'HBM3', 'GDDR6X', 'LPDDR5 unified', '8x DDR5-4800' (CPU)",
    "instruction_set": "CPUs: the vector/matrix ISA of the peaks, e.g. 'AVX-512 + AMX', 'NEON/SME'",
    "interconnect_kind": f"one of {', '.join(INTERCONNECT_KINDS)}",
    "software_stack": f"one of {', '.join(SOFTWARE_STACKS)}",
    "software_note": "a short note on the maturity of the software stack",
    "price_kind": "'launch-msrp', 'street' or 'list'",
    "price_date": "YYYY-MM of the price",
    "cloud_price_date": "YYYY-MM of the cloud snapshot",
    "notes": "free text: caveats, variants",
}

#: True/false figures and their meaning.
BOOL_FIELDS = {
    "av1_encode": "the hardware video encoder encodes AV1 (NVENC 8th gen+, AMD VCN 4+, Intel Arc)",
}

#: The media and ray-tracing figures, for renderers and video pipelines (``GPU.get(name)``).
MEDIA_FIELDS = ("nvenc_engines", "nvdec_engines", "av1_encode", "rt_cores")

#: Structured fields (not figures).
STRUCT_FIELDS = ("aliases", "sources", "uncertain")

REQUIRED_FIELDS = (
    "id",
    "name",
    "vendor",
    "form_factor",
    "memory_bytes",
    "memory_type",
    "memory_bandwidth_bytes_per_s",
    "launch_year",
    "software_stack",
)

ALL_FIELDS = (
    frozenset(NUMERIC_FIELDS)
    | frozenset(TEXT_FIELDS)
    | frozenset(BOOL_FIELDS)
    | frozenset(STRUCT_FIELDS)
)

#: Precision name -> the dense peak field that holds it.
PRECISION_FIELDS = {
    "fp64": "peak_fp64_flops",
    "fp32": "peak_fp32_flops",
    "tf32": "peak_tf32_dense_flops",
    "fp16": "peak_fp16_dense_flops",
    "bf16": "peak_bf16_dense_flops",
    "fp8": "peak_fp8_dense_flops",
    "fp4": "peak_fp4_dense_flops",
    "int8": "peak_int8_dense_ops",
    "int4": "peak_int4_dense_ops",
}


@dataclass(frozen=True)
class Source:
    """Where a group of figures comes from."""

    fields: tuple[str, ...]
    """Field names covered by this source; ``("*",)`` covers every figure not named elsewhere."""
    ref: str
    """The document, page or table, specific enough to find again."""
    date: str
    """When the source was published or read, YYYY-MM or YYYY-MM-DD."""


@dataclass(frozen=True)
class GPU:
    """One accelerator from the catalog. Missing figures are ``None``."""

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_bytes: int
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    launch_year: int
    software_stack: str
    figures: dict[str, Any] = field(default_factory=dict)
    """Every other field as stored (numbers in base units)."""
    aliases: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    uncertain: tuple[str, ...] = ()
    """Fields whose value is not confirmed by a primary source."""
    origin: str = ""
    """The file this entry was loaded from."""

    def get(self, name: str) -> Any:
        """Any field by name (``None`` when the catalog has no figure for it)."""
        if name in self.__dataclass_fields__ and name != "figures":
            return getattr(self, name)
        return self.figures.get(name)

    def peak_flops(self, precision: str) -> float | None:
        """Dense peak FLOP/s (OP/s for integers) for ``precision``, e.g. ``bf16``."""
        key = PRECISION_FIELDS.get(precision)
        if key is None:
            raise ValueError(
                N_("unknown precision {precision!r}; use one of {known}").format(
                    precision=precision, known=", ".join(PRECISION_FIELDS)
                )
            )
        value = self.get(key)
        return float(value) if value is not None else None

    def source_of(self, name: str) -> Source | None:
        """The source that covers field ``name`` (a specific one before the ``*`` default)."""
        for src in self.sources:
            if name in src.fields:
                return src
        for src in self.sources:
            if "*" in src.fields:
                return src
        return None

    def as_dict(self) -> dict[str, Any]:
        """All fields as a flat JSON-ready dict."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "vendor": self.vendor,
            "form_factor": self.form_factor,
            "memory_bytes": self.memory_bytes,
            "memory_type": self.memory_type,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "launch_year": self.launch_year,
            "software_stack": self.software_stack,
        }
        out.update(self.figures)
        out["aliases"] = list(self.aliases)
        out["uncertain"] = list(self.uncertain)
        out["sources"] = [
            {"fields": list(s.fields), "ref": s.ref, "date": s.date} for s in self.sources
        ]
        return out
