"""Filter and sort catalog entries (pure functions used by the CLI and the API)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from suanli.catalog.gpu import GPU, NUMERIC_FIELDS
from suanli.catalog.prices import Price, buy_price, rent_price
from suanli.i18n import N_

#: Friendly sort names -> catalog fields.
SORT_ALIASES = {
    "memory": "memory_bytes",
    "bandwidth": "memory_bandwidth_bytes_per_s",
    "fp64": "peak_fp64_flops",
    "fp32": "peak_fp32_flops",
    "tf32": "peak_tf32_dense_flops",
    "fp16": "peak_fp16_dense_flops",
    "bf16": "peak_bf16_dense_flops",
    "fp8": "peak_fp8_dense_flops",
    "fp4": "peak_fp4_dense_flops",
    "int8": "peak_int8_dense_ops",
    "tdp": "tdp_watts",
    "price": "price_usd",
    "cloud": "cloud_usd_per_hour",
    "year": "launch_year",
    "interconnect": "interconnect_bytes_per_s",
}


#: The sort aliases that mean the price every view shows: the resolver's rent and purchase price.
RESOLVED_PRICES: dict[str, Callable[[GPU], Price | None]] = {
    "price": buy_price,
    "cloud": rent_price,
}


def filter_gpus(
    gpus: Iterable[GPU],
    *,
    vendors: Sequence[str] = (),
    form_factors: Sequence[str] = (),
    min_memory_bytes: int | None = None,
) -> list[GPU]:
    """Entries matching every given filter (an empty filter keeps all)."""
    vendor_set = {v.lower() for v in vendors}
    form_set = {f.lower() for f in form_factors}
    return [
        g
        for g in gpus
        if (not vendor_set or g.vendor in vendor_set)
        and (not form_set or g.form_factor in form_set)
        and (min_memory_bytes is None or g.memory_bytes >= min_memory_bytes)
    ]


def sort_gpus(gpus: Iterable[GPU], key: str, descending: bool = True) -> list[GPU]:
    """Sort by a metric name (see :data:`SORT_ALIASES`) or a numeric field; missing values last.

    For ``bf16`` a GPU without bf16 support sorts by its fp16 rate (T4, V100). ``cloud`` and
    ``price`` sort by the rent and purchase price every view shows
    (:mod:`suanli.catalog.prices`), not by the catalog's own figures, which their field names
    still sort by.
    """
    alias = key.lower()
    field = SORT_ALIASES.get(alias, alias)
    if field not in NUMERIC_FIELDS:
        raise ValueError(
            N_("cannot sort by {key!r}; use one of {known} or a numeric field").format(
                key=key, known=", ".join(SORT_ALIASES)
            )
        )

    def value(g: GPU) -> float | None:
        if alias in RESOLVED_PRICES:
            price = RESOLVED_PRICES[alias](g)
            return price.usd if price is not None else None
        v = g.get(field)
        if v is None and field == "peak_bf16_dense_flops":
            v = g.get("peak_fp16_dense_flops")
        return float(v) if v is not None else None

    entries = list(gpus)
    present = [g for g in entries if value(g) is not None]
    missing = [g for g in entries if value(g) is None]
    present.sort(key=lambda g: (value(g) or 0.0, g.id), reverse=descending)
    return present + sorted(missing, key=lambda g: g.id)
