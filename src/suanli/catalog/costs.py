"""The price data file, ``costs.toml``: its rows, its loader and the look-ups of one GPU's rows.

Every row carries a source and a date; :func:`cost_data` loads the bundled file and validates it
like the GPU catalog (cloud and purchase rows must name catalog GPUs). The cost comparison
(:mod:`suanli.plan.cost`) and the one price resolver (:mod:`suanli.catalog.prices`) read it.

Money rows are priced in USD or in CNY (``usd_...`` or ``cny_...`` keys, one of the two). A CNY
row keeps its CNY figure (``cny_...``) and also gets the USD one at the bundled exchange rate
(``[[fx]] usd-cny``), so that rows of both currencies sort together; the cost model converts at
the rate the caller chooses (``--usd-cny``). Cloud rows in CNY are the China market
(:attr:`CostData.cloud_cn`), kept apart from the USD ones (:attr:`CostData.cloud`): defaults and
the spot check never mix the two markets.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import msgspec

from suanli.catalog.costs_schema import (
    CLOUD_KINDS,
    COSTS_TABLES,
    FX_ID,
    convert_costs_file,
    explain_costs_error,
    row_values,
)
from suanli.catalog.dates import date_problem
from suanli.catalog.loader import TOO_DEEP, CatalogError
from suanli.catalog.toml_cache import parse_bundled_toml
from suanli.i18n import N_, concat

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The bundled data file.
COSTS_FILE = "costs.toml"

#: Currencies of the data and the answers.
CURRENCIES = ("usd", "cny")

#: Cloud markets: ``global`` (rows in USD) and ``cn`` (Chinese clouds, rows in CNY).
MARKETS = ("global", "cn")


# ---------------------------------------------------------------------------------------------
# Data rows


@dataclass(frozen=True)
class Pue:
    """Power usage effectiveness of a kind of site: facility power / IT power."""

    id: str
    value: float
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False


@dataclass(frozen=True)
class Electricity:
    """Average electricity price of a region, per kWh (USD; CNY rows keep their CNY figure)."""

    region: str
    usd_per_kwh: float
    description: str
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False
    cny_per_kwh: float | None = None
    currency: str = "usd"


@dataclass(frozen=True)
class CloudPrice:
    """A dated cloud rent snapshot for one catalog GPU, per GPU-hour.

    ``usd_per_gpu_hour`` is the price, or for a CNY row (a Chinese cloud, ``market == "cn"``)
    its CNY price ``cny_per_gpu_hour`` at the bundled exchange rate."""

    gpu_id: str
    provider: str
    kind: str
    usd_per_gpu_hour: float
    source: str
    date: str
    serverless: bool = False
    notes: str = ""
    uncertain: bool = False
    cny_per_gpu_hour: float | None = None
    currency: str = "usd"

    @property
    def market(self) -> str:
        """``cn`` for a row priced in CNY (a Chinese cloud), else ``global``."""
        return "cn" if self.currency == "cny" else "global"


@dataclass(frozen=True)
class ServerOverhead:
    """The non-GPU part of a server, per GPU: its price and its power beyond the GPUs' TDP."""

    id: str
    gpus_per_server: int
    usd_per_gpu: float
    watts_per_gpu_overhead: float
    description: str
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False


@dataclass(frozen=True)
class Facility:
    """Space, cooling and power infrastructure per kW of IT capacity per year (energy apart)."""

    id: str
    usd_per_kw_year: float
    description: str
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False


@dataclass(frozen=True)
class ApiPrice:
    """A hosted model's price per million tokens at one provider (CNY rows keep their CNY
    figures; the USD ones are then at the bundled exchange rate)."""

    id: str
    provider: str
    usd_per_million_input_tokens: float
    usd_per_million_output_tokens: float
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False
    cny_per_million_input_tokens: float | None = None
    cny_per_million_output_tokens: float | None = None
    currency: str = "usd"


@dataclass(frozen=True)
class Purchase:
    """A purchase price of one catalog GPU in a market (China street prices are in CNY), used
    where the GPU catalog has none or the China market is asked for."""

    gpu_id: str
    kind: str
    usd_per_gpu: float
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False
    cny_per_gpu: float | None = None
    currency: str = "usd"


@dataclass(frozen=True)
class ExchangeRate:
    """A dated exchange rate: CNY per USD."""

    id: str
    cny_per_usd: float
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False


@dataclass(frozen=True)
class CostData:
    """Every table of ``costs.toml``."""

    pue: tuple[Pue, ...]
    electricity: tuple[Electricity, ...]
    cloud: tuple[CloudPrice, ...]
    """Cloud rows priced in USD (the global market)."""
    server: tuple[ServerOverhead, ...]
    facility: tuple[Facility, ...]
    api: tuple[ApiPrice, ...]
    purchase: tuple[Purchase, ...] = ()
    fx: tuple[ExchangeRate, ...] = ()
    cloud_cn: tuple[CloudPrice, ...] = ()
    """Cloud rows priced in CNY (Chinese GPU clouds)."""

    def rows(self) -> tuple[Any, ...]:
        """All rows of all tables."""
        return (
            *self.pue,
            *self.electricity,
            *self.cloud,
            *self.cloud_cn,
            *self.server,
            *self.facility,
            *self.api,
            *self.purchase,
            *self.fx,
        )


# ---------------------------------------------------------------------------------------------
# Loader

#: Per table: the money keys as (USD key, CNY key) pairs; a row gives one of each pair, all in
#: the same currency.
_MONEY: dict[str, tuple[tuple[str, str], ...]] = {
    "electricity": (("usd_per_kwh", "cny_per_kwh"),),
    "cloud": (("usd_per_gpu_hour", "cny_per_gpu_hour"),),
    "api": (
        ("usd_per_million_input_tokens", "cny_per_million_input_tokens"),
        ("usd_per_million_output_tokens", "cny_per_million_output_tokens"),
    ),
    "purchase": (("usd_per_gpu", "cny_per_gpu"),),
}

_ROW_TYPES: dict[str, type] = {
    "pue": Pue,
    "electricity": Electricity,
    "cloud": CloudPrice,
    "server": ServerOverhead,
    "facility": Facility,
    "api": ApiPrice,
    "purchase": Purchase,
    "fx": ExchangeRate,
}
#: Per table: the keys that make a row unique.
_UNIQUE: dict[str, tuple[str, ...]] = {
    "pue": ("id",),
    "electricity": ("region",),
    "cloud": ("gpu_id", "provider", "kind"),
    "server": ("id",),
    "facility": ("id",),
    "api": ("id", "provider"),
    "purchase": ("gpu_id",),
    "fx": ("id",),
}


def _make_row(
    table: str,
    values: dict[str, Any],
    origin: str,
    gpu_ids: frozenset[str] | None,
    cny_per_usd: float | None = None,
) -> tuple[tuple[Any, ...], Any]:
    """What the schema cannot check of one row (its values, schema-valid): a real date, a
    catalog GPU, one currency; then the row's unique key and the row."""
    label = "/".join(str(values.get(k, "?")) for k in _UNIQUE[table])
    where = f"{origin}, [[{table}]] {label!r}"
    problem = date_problem(values["date"], "date", year_only=True)
    if problem:
        raise CatalogError(concat(where, N_(": "), problem))
    in_catalog = gpu_ids is None or values.get("gpu_id") in gpu_ids
    if table in ("cloud", "purchase") and not in_catalog:
        raise CatalogError(
            N_("{where}: gpu_id {gpu!r} is not in the GPU catalog").format(
                where=where, gpu=values["gpu_id"]
            )
        )
    _money(table, values, where, cny_per_usd)
    unique = tuple(values[k] for k in _UNIQUE[table])
    return unique, _ROW_TYPES[table](**values)


def _money(table: str, values: dict[str, Any], where: str, cny_per_usd: float | None) -> None:
    """Check the money keys of a row (one of each USD/CNY pair, one currency) and, for a CNY
    row, add the USD figures at the bundled rate and ``currency = "cny"``."""
    pairs = _MONEY.get(table, ())
    if not pairs:
        return
    currencies = set()
    for usd_key, cny_key in pairs:
        given = [k for k in (usd_key, cny_key) if k in values]
        if len(given) != 1:
            raise CatalogError(
                N_("{where}: give exactly one of {usd} and {cny}").format(
                    where=where, usd=usd_key, cny=cny_key
                )
            )
        currencies.add("cny" if given[0] == cny_key else "usd")
    if len(currencies) > 1:
        raise CatalogError(
            N_("{where}: give every price of a row in the same currency").format(where=where)
        )
    if currencies == {"cny"}:
        if cny_per_usd is None:
            raise CatalogError(
                N_(
                    "{where}: a CNY price needs the exchange rate; add an [[fx]] row with "
                    "id = {fx!r} and cny_per_usd"
                ).format(where=where, fx=FX_ID)
            )
        for usd_key, cny_key in pairs:
            values[usd_key] = values[cny_key] / cny_per_usd
        values["currency"] = "cny"


def parse_costs_text(
    text: str,
    origin: str = COSTS_FILE,
    gpu_ids: Sequence[str] | None = None,
    *,
    bundled: bool = False,
) -> CostData:
    """Parse and validate the text of a costs file; raises :class:`CatalogError`.

    ``gpu_ids``, when given, are the catalog ids a ``[[cloud]]`` row may name; ``bundled``: the
    package's own file, whose parsed tables :mod:`suanli.catalog.toml_cache` keeps between runs.
    """
    try:
        doc = parse_bundled_toml(text, f"catalog/{origin}") if bundled else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{origin}: not valid TOML ({error}); fix the syntax").format(
                origin=origin, error=exc
            )
        ) from None
    except RecursionError:
        raise CatalogError(TOO_DEEP.format(origin=origin)) from None
    try:
        parsed = convert_costs_file(doc)
    except msgspec.ValidationError as exc:
        raise CatalogError(explain_costs_error(str(exc), doc, origin)) from None
    ids = frozenset(gpu_ids) if gpu_ids is not None else None
    tables: dict[str, tuple[Any, ...]] = {}
    rate: float | None = None
    for table in ("fx", *(t for t in COSTS_TABLES if t != "fx")):
        seen: set[tuple[Any, ...]] = set()
        rows = []
        for struct in getattr(parsed, table):
            key, row = _make_row(table, row_values(table, struct), origin, ids, rate)
            if key in seen:
                raise CatalogError(
                    N_("{origin}: duplicate [[{table}]] {key}").format(
                        origin=origin, table=table, key="/".join(map(str, key))
                    )
                )
            seen.add(key)
            rows.append(row)
        tables[table] = tuple(rows)
        if table == "fx" and rows:
            rate = rows[0].cny_per_usd
    cloud = tables.pop("cloud")
    tables["cloud"] = tuple(r for r in cloud if r.currency == "usd")
    tables["cloud_cn"] = tuple(r for r in cloud if r.currency == "cny")
    _check_spot_below_on_demand(tables["cloud"], origin)
    _check_spot_below_on_demand(tables["cloud_cn"], origin)
    return CostData(**tables)


def _check_spot_below_on_demand(rows: Sequence[Any], origin: str) -> None:
    """Spot is the discounted tier: a spot price above the on-demand price of the same GPU at
    the same provider, or above the cheapest on-demand price of that GPU anywhere in the same
    market (the two that the cost comparison shows side by side), is a data error. ``rows`` are
    the rows of one market, compared in their own currency."""

    def price(row: CloudPrice) -> float:
        return row.cny_per_gpu_hour if row.cny_per_gpu_hour is not None else row.usd_per_gpu_hour

    on_demand: dict[tuple[str, str], float] = {}
    cheapest: dict[str, Any] = {}
    for row in rows:
        if row.kind == "on-demand":
            on_demand[(row.gpu_id, row.provider)] = price(row)
            best = cheapest.get(row.gpu_id)
            if best is None or price(row) < price(best):
                cheapest[row.gpu_id] = row
    for row in rows:
        if row.kind != "spot":
            continue
        unit = f"{row.currency.upper()}/GPU-hour"
        where = f"{origin}, [[cloud]] {row.gpu_id}/{row.provider}/spot"
        same = on_demand.get((row.gpu_id, row.provider))
        if same is not None and price(row) > same:
            raise CatalogError(
                N_(
                    "{where}: spot {spot:g} {unit} is above the same provider's on-demand "
                    "{same:g}; spot must be the cheaper tier, check the source"
                ).format(where=where, spot=price(row), unit=unit, same=same)
            )
        best = cheapest.get(row.gpu_id)
        if best is not None and price(row) > price(best):
            raise CatalogError(
                N_(
                    "{where}: spot {spot:g} {unit} is above the cheapest on-demand price of "
                    "{gpu} ({provider}, {cheapest:g}); spot must be the cheaper tier, check "
                    "the source"
                ).format(
                    where=where,
                    spot=price(row),
                    unit=unit,
                    gpu=row.gpu_id,
                    provider=best.provider,
                    cheapest=price(best),
                )
            )


@lru_cache(maxsize=1)
def cost_data() -> CostData:
    """The bundled ``costs.toml``, validated (cloud rows must name catalog GPUs)."""
    from suanli.catalog.loader import bundled_gpus

    text = (resources.files("suanli.catalog") / "data" / COSTS_FILE).read_text("utf-8")
    return parse_costs_text(text, COSTS_FILE, [g.id for g in bundled_gpus()], bundled=True)


def cloud_prices(
    gpu_id: str, kind: str | None = None, market: str = "global", provider: str | None = None
) -> tuple[CloudPrice, ...]:
    """Cloud snapshots for ``gpu_id`` in ``market`` (``global``: USD rows, ``cn``: Chinese
    clouds in CNY, ``all``), cheapest first; only ``kind`` ones, and only providers whose name
    contains ``provider`` (case-insensitive), when given."""
    if kind is not None and kind not in CLOUD_KINDS:
        raise ValueError(
            N_("unknown cloud price kind {kind!r}; use one of {kinds}").format(
                kind=kind, kinds=", ".join(CLOUD_KINDS)
            )
        )
    if market not in (*MARKETS, "all"):
        raise ValueError(
            N_("unknown cloud market {market!r}; use one of {markets}").format(
                market=market, markets=", ".join(MARKETS)
            )
        )
    data = cost_data()
    pool = {"global": data.cloud, "cn": data.cloud_cn, "all": data.cloud + data.cloud_cn}[market]
    needle = provider.strip().lower() if provider is not None else None
    rows = [
        r
        for r in pool
        if r.gpu_id == gpu_id
        and kind in (None, r.kind)
        and (needle is None or needle in r.provider.lower())
    ]
    return tuple(sorted(rows, key=lambda r: (r.usd_per_gpu_hour, r.provider)))


def cheapest_cloud(
    gpu_id: str, kind: str = "on-demand", market: str = "global", provider: str | None = None
) -> CloudPrice | None:
    """The cheapest ``kind`` snapshot for ``gpu_id`` in ``market``, or None."""
    rows = cloud_prices(gpu_id, kind, market, provider)
    return rows[0] if rows else None


def purchase_entry(gpu_id: str) -> Purchase | None:
    """The purchase-price row of ``gpu_id`` in costs.toml, or None."""
    return next((r for r in cost_data().purchase if r.gpu_id == gpu_id), None)


def exchange_rate() -> ExchangeRate:
    """The bundled USD -> CNY exchange rate (CNY per USD), with its source and date."""
    rows = cost_data().fx
    if not rows:
        raise ValueError(N_("costs.toml has no exchange rate; give one with --usd-cny"))
    return rows[0]


def row_source(row: Any) -> tuple[str, str, str]:
    """A costs.toml row's (source, date, notes), with " (uncertain)" added to uncertain rows."""
    notes = row.notes + (" (uncertain)" if row.uncertain else "")
    return row.source, row.date, notes.strip()
