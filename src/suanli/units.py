"""Units and formatting.

Inside suanli every quantity is kept in a base unit, and the unit is in the name:
bytes, FLOP, FLOP/s, seconds, watts, USD. Conversion happens only when formatting.
GB is 10**9 bytes and GiB is 2**30 bytes; the two are never mixed.
"""

from __future__ import annotations

from suanli.i18n import N_

KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

TERA = 1e12
GIGA = 1e9

#: Bytes per element of the dtypes used for weights, gradients and states.
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "fp4": 0.5,
    "int4": 0.5,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of ``dtype`` (e.g. ``bf16`` -> 2); raises ValueError for unknown names."""
    key = dtype.lower().replace("float", "fp").replace("bfloat", "bf")
    aliases = {"fp": "fp32", "half": "fp16", "bfp16": "bf16"}
    key = aliases.get(key, key)
    if key not in DTYPE_BYTES:
        known = ", ".join(DTYPE_BYTES)
        raise ValueError(
            N_("unknown dtype {dtype!r}; use one of {known}").format(dtype=dtype, known=known)
        )
    return DTYPE_BYTES[key]


def fmt_bytes(n_bytes: float, binary: bool = True) -> str:
    """Format a byte count: GiB-style (binary, default) or GB-style (decimal)."""
    if binary:
        steps = [(TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")]
    else:
        steps = [(TB, "TB"), (GB, "GB"), (MB, "MB"), (KB, "kB")]
    for size, name in steps:
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:.2f} {name}"
    return f"{n_bytes:.0f} B"


def fmt_rate(value: float, unit: str = "FLOP/s") -> str:
    """Format a rate with an SI prefix (``989e12`` -> ``989.0 TFLOP/s``)."""
    for size, prefix in [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]:
        if abs(value) >= size:
            return f"{value / size:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def fmt_count(n: float) -> str:
    """Format a large count with a short suffix (``8_030_261_248`` -> ``8.03B``)."""
    for size, suffix in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")]:
        if abs(n) >= size:
            return f"{n / size:.2f}{suffix}"
    return f"{n:.0f}"


def fmt_usd(value: float) -> str:
    """Format a dollar amount (``1599`` -> ``$1,599``; small values keep cents)."""
    if abs(value) < 100:
        return f"${value:,.2f}"
    return f"${value:,.0f}"
