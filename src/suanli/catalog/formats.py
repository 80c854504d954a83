"""Weight storage formats (``data/quant.toml``) and runtime overheads (``data/overhead.toml``).

Both are data with a source per row, validated on load like the GPU catalog.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from suanli.catalog.loader import CatalogError
from suanli.catalog.toml_cache import parse_bundled_toml
from suanli.i18n import N_

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_FORMAT_KINDS = ("float", "int", "nf", "gguf")


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored: effective bits per weight including scales and zeros."""

    id: str
    name: str
    kind: str
    bits_per_weight: float
    derivation: str
    compute_dtype: str
    source: str
    date: str
    unquantized: tuple[str, ...] = ()
    notes: str = ""
    dequant_efficiency: float = 1.0
    """The share of the 16-bit streaming rate at which a decode GEMM reads these weights: the
    kernel's dequantization (measured on a real kernel; 1: none measured or none needed)."""
    dequant_source: str = ""

    @property
    def gemm_dtype(self) -> str:
        """The precision its matmuls ask for: ``fp8`` for 8-bit float weights (W8A8: vLLM and
        TensorRT-LLM quantize activations on the fly on cards with fp8 tensor cores; elsewhere
        the device falls back to its 16-bit rate, as FP8 Marlin's W8A16 does), else ``bf16``."""
        return "fp8" if self.kind == "float" and self.bits_per_weight == 8 else "bf16"


@dataclass(frozen=True)
class Overhead:
    """A runtime memory overhead default (bytes or a fraction) with its source."""

    id: str
    description: str
    source: str
    date: str
    value_bytes: int | None = None
    value_fraction: float | None = None
    notes: str = ""


def _read(name: str) -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    try:
        data: dict[str, Any] = parse_bundled_toml(text, f"catalog/{name}")
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{file}: not valid TOML ({error})").format(file=name, error=exc)
        ) from None
    return data


@lru_cache(maxsize=1)
def weight_formats() -> dict[str, WeightFormat]:
    """All bundled weight formats by id, validated."""
    out: dict[str, WeightFormat] = {}
    for raw in _read("quant.toml").get("format", []):
        fid = str(raw.get("id", ""))
        bits = raw.get("bits_per_weight")
        if not isinstance(bits, (int, float)) or not 1 <= bits <= 32:
            raise CatalogError(
                N_("quant.toml, format {id!r}: bits_per_weight must be in [1, 32]").format(id=fid)
            )
        if raw.get("kind") not in _FORMAT_KINDS:
            raise CatalogError(
                N_("quant.toml, format {id!r}: kind must be one of {kinds}").format(
                    id=fid, kinds=_FORMAT_KINDS
                )
            )
        for key in ("name", "derivation", "source", "date"):
            if not raw.get(key):
                raise CatalogError(
                    N_("quant.toml, format {id!r}: missing {key!r}").format(id=fid, key=key)
                )
        if fid in out:
            raise CatalogError(N_("quant.toml: duplicate format id {id!r}").format(id=fid))
        dequant = raw.get("dequant_efficiency", 1.0)
        if not isinstance(dequant, (int, float)) or not 0.1 <= dequant <= 1:
            raise CatalogError(
                N_("quant.toml, format {id!r}: dequant_efficiency must be in [0.1, 1]").format(
                    id=fid
                )
            )
        if dequant < 1 and not raw.get("dequant_source"):
            raise CatalogError(
                N_("quant.toml, format {id!r}: dequant_efficiency needs a dequant_source").format(
                    id=fid
                )
            )
        out[fid] = WeightFormat(
            id=fid,
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            bits_per_weight=float(bits),
            derivation=str(raw["derivation"]),
            compute_dtype=str(raw.get("compute_dtype", "bf16")),
            source=str(raw["source"]),
            date=str(raw["date"]),
            unquantized=tuple(raw.get("unquantized", [])),
            notes=str(raw.get("notes", "")),
            dequant_efficiency=float(dequant),
            dequant_source=str(raw.get("dequant_source", "")),
        )
    return out


#: Prefix of a GGUF file's own format id: ``gguf-bits-4.8734`` (its exact average bits).
GGUF_FILE_PREFIX = "gguf-bits-"


def gguf_file_format(bits_per_weight: float) -> str:
    """The format id of a GGUF file whose tensors average ``bits_per_weight`` bits."""
    return f"{GGUF_FILE_PREFIX}{bits_per_weight:.6f}"


def get_format(format_id: str) -> WeightFormat:
    """The weight format ``format_id`` (case-insensitive); ValueError lists the known ids.
    ``gguf-bits-N`` is a GGUF file's own mix of quantisation types, N bits per weight."""
    if format_id.lower().startswith(GGUF_FILE_PREFIX):
        try:
            bits = float(format_id[len(GGUF_FILE_PREFIX) :])
        except ValueError:
            bits = float("nan")
        if not 1 <= bits <= 64:
            raise ValueError(
                N_("weight format {id!r}: the bits per weight must be 1 to 64").format(id=format_id)
            )
        return WeightFormat(
            id=format_id.lower(),
            name=N_("the GGUF file's tensors ({bits:.3f} bits per weight on average)").format(
                bits=bits
            ),
            kind="gguf",
            bits_per_weight=bits,
            derivation=N_("exact bytes of every tensor in the file's header / parameters"),
            compute_dtype="bf16",
            source=N_("the file's GGUF header (tensor types and shapes)"),
            date="",
        )
    formats = weight_formats()
    key = (
        format_id.lower().replace("_", "-")
        if format_id.lower() not in formats
        else format_id.lower()
    )
    for candidate in (format_id.lower(), key):
        if candidate in formats:
            return formats[candidate]
    raise ValueError(
        N_("unknown weight format {id!r}; use one of {known}").format(
            id=format_id, known=", ".join(formats)
        )
    )


@lru_cache(maxsize=1)
def overheads() -> dict[str, Overhead]:
    """All bundled runtime overhead defaults by id, validated."""
    out: dict[str, Overhead] = {}
    for raw in _read("overhead.toml").get("overhead", []):
        oid = str(raw.get("id", ""))
        has_bytes = "value_bytes" in raw
        has_fraction = "value_fraction" in raw
        if has_bytes == has_fraction:
            raise CatalogError(
                N_(
                    "overhead.toml, entry {id!r}: give exactly one of value_bytes, value_fraction"
                ).format(id=oid)
            )
        for key in ("description", "source", "date"):
            if not raw.get(key):
                raise CatalogError(
                    N_("overhead.toml, entry {id!r}: missing {key!r}").format(id=oid, key=key)
                )
        out[oid] = Overhead(
            id=oid,
            description=str(raw["description"]),
            source=str(raw["source"]),
            date=str(raw["date"]),
            value_bytes=int(raw["value_bytes"]) if has_bytes else None,
            value_fraction=float(raw["value_fraction"]) if has_fraction else None,
            notes=str(raw.get("notes", "")),
        )
    return out


def overhead_bytes(overhead_id: str) -> tuple[float, str]:
    """Bytes of a byte-valued overhead default and its source."""
    entry = overheads().get(overhead_id)
    if entry is None or entry.value_bytes is None:
        raise CatalogError(
            N_("overhead.toml has no byte-valued entry {id!r}").format(id=overhead_id)
        )
    return float(entry.value_bytes), f"{entry.source} ({entry.date})"


def overhead_fraction(overhead_id: str) -> tuple[float, str]:
    """A fraction-valued overhead default and its source."""
    entry = overheads().get(overhead_id)
    if entry is None or entry.value_fraction is None:
        raise CatalogError(
            N_("overhead.toml has no fraction-valued entry {id!r}").format(id=overhead_id)
        )
    return entry.value_fraction, f"{entry.source} ({entry.date})"
