"""Price data for the cost comparison: the defaults by form factor and the look-ups of the
non-cloud rows of ``costs.toml`` (PUE, electricity, server, facility, API).

The file itself, its rows, its loader and the cloud and purchase look-ups live in the catalog
(:mod:`suanli.catalog.costs`, re-exported here); the default rent and purchase price of a GPU
come from the one price resolver, :mod:`suanli.catalog.prices`, which every view asks too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from suanli.catalog.costs import (
    COSTS_FILE,
    CURRENCIES,
    MARKETS,
    ApiPrice,
    CloudPrice,
    CostData,
    Electricity,
    ExchangeRate,
    Facility,
    Pue,
    Purchase,
    ServerOverhead,
    cheapest_cloud,
    cloud_prices,
    cost_data,
    exchange_rate,
    parse_costs_text,
    purchase_entry,
    row_source,
)
from suanli.i18n import N_

__all__ = [
    "COSTS_FILE",
    "CURRENCIES",
    "DEFAULT_REGION",
    "DEFAULT_REGION_CN",
    "FORM_FACTOR_DEFAULTS",
    "MARKETS",
    "ApiPrice",
    "CloudPrice",
    "CostData",
    "Electricity",
    "ExchangeRate",
    "Facility",
    "Pue",
    "Purchase",
    "ServerOverhead",
    "api_prices",
    "cheapest_cloud",
    "cloud_prices",
    "cost_data",
    "electricity_entry",
    "exchange_rate",
    "facility_entry",
    "parse_costs_text",
    "pue_entry",
    "purchase_entry",
    "row_source",
    "server_entry",
]


#: Defaults by catalog form factor: (server id, PUE id, facility id).
FORM_FACTOR_DEFAULTS: dict[str, tuple[str, str, str]] = {
    "sxm": ("8-gpu-hgx", "typical-colo", "colocation-us"),
    "oam": ("8-gpu-hgx", "typical-colo", "colocation-us"),
    "mezzanine": ("8-gpu-hgx", "typical-colo", "colocation-us"),
    "pcie": ("pcie-8gpu", "typical-colo", "colocation-us"),
    "workstation": ("workstation", "home", "none"),
    "consumer": ("workstation", "home", "none"),
    "soc": ("none", "home", "none"),
}

#: Default electricity region.
DEFAULT_REGION = "us"

#: Default electricity region of the China market (``--currency cny``, ``--region cn-...``).
DEFAULT_REGION_CN = "cn"

_Row = TypeVar("_Row")


def _pick(rows: Sequence[_Row], attr: str, key: str, what: str) -> _Row:
    for row in rows:
        if getattr(row, attr) == key:
            return row
    known = ", ".join(getattr(r, attr) for r in rows)
    raise ValueError(
        N_("unknown {what} {key!r}; use one of {known}").format(what=what, key=key, known=known)
    )


def pue_entry(pue_id: str) -> Pue:
    """The PUE row ``pue_id`` (hyperscale, typical-colo, enterprise, home)."""
    return _pick(cost_data().pue, "id", pue_id, N_("PUE id"))


def electricity_entry(region: str) -> Electricity:
    """The electricity price of ``region`` (us, eu, cn, ...)."""
    return _pick(cost_data().electricity, "region", region, N_("electricity region"))


def server_entry(server_id: str) -> ServerOverhead:
    """The server overhead row ``server_id`` (8-gpu-hgx, pcie-8gpu, pcie-4gpu, workstation)."""
    return _pick(cost_data().server, "id", server_id, N_("server id"))


def facility_entry(facility_id: str) -> Facility:
    """The facility row ``facility_id`` (colocation-us, none)."""
    return _pick(cost_data().facility, "id", facility_id, N_("facility id"))


def api_prices(model_id: str) -> tuple[ApiPrice, ...]:
    """API prices for ``model_id`` at every provider, cheapest (input + output) first."""
    rows = [r for r in cost_data().api if r.id == model_id]
    if not rows:
        known = ", ".join(sorted({r.id for r in cost_data().api}))
        raise ValueError(
            N_("unknown API model {model!r}; use one of {known}").format(
                model=model_id, known=known
            )
        )
    return tuple(
        sorted(
            rows,
            key=lambda r: (
                r.usd_per_million_input_tokens + r.usd_per_million_output_tokens,
                r.provider,
            ),
        )
    )
