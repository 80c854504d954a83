"""Buy, rent or call an API: what GPU work costs over a period, and where the break-even lies.

The data (PUE, electricity prices, cloud snapshots, server overheads, colocation, API prices) is
in ``suanli/catalog/data/costs.toml``, validated on load like the GPU catalog; every row carries
a source and a date. :func:`compare_costs` is pure arithmetic on its arguments, with defaults
drawn from that file and the GPU catalog; :func:`cost_report` returns the same result as a
JSON-ready document for the CLI. Money is in USD, energy in kWh, power in W. The method and every
formula are in docs/cost.md.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar

from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: The bundled data file.
COSTS_FILE = "costs.toml"

#: Allowed ``kind`` values of a cloud price.
CLOUD_KINDS = ("on-demand", "reserved", "spot")

#: Hours in a (non-leap) year.
HOURS_PER_YEAR = 8760.0

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

_DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")

_Row = TypeVar("_Row")


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
    """Average electricity price of a region, USD per kWh."""

    region: str
    usd_per_kwh: float
    description: str
    source: str
    date: str
    notes: str = ""
    uncertain: bool = False


@dataclass(frozen=True)
class CloudPrice:
    """A dated cloud rent snapshot for one catalog GPU, USD per GPU-hour."""

    gpu_id: str
    provider: str
    kind: str
    usd_per_gpu_hour: float
    source: str
    date: str
    serverless: bool = False
    notes: str = ""
    uncertain: bool = False


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
    """A hosted model's price per million tokens at one provider."""

    id: str
    provider: str
    usd_per_million_input_tokens: float
    usd_per_million_output_tokens: float
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
    server: tuple[ServerOverhead, ...]
    facility: tuple[Facility, ...]
    api: tuple[ApiPrice, ...]

    def rows(self) -> tuple[Any, ...]:
        """All rows of all tables."""
        return (*self.pue, *self.electricity, *self.cloud, *self.server, *self.facility, *self.api)


# ---------------------------------------------------------------------------------------------
# Loader

_TEXT = "text"
_NUM = "number"
_INT = "integer"
_BOOL = "bool"

#: Per table: key -> (type, required, (low, high) for numbers).
_SCHEMA: dict[str, dict[str, tuple[str, bool, tuple[float, float] | None]]] = {
    "pue": {
        "id": (_TEXT, True, None),
        "value": (_NUM, True, (1.0, 3.0)),
    },
    "electricity": {
        "region": (_TEXT, True, None),
        "usd_per_kwh": (_NUM, True, (0.005, 2.0)),
        "description": (_TEXT, True, None),
    },
    "cloud": {
        "gpu_id": (_TEXT, True, None),
        "provider": (_TEXT, True, None),
        "kind": (_TEXT, True, None),
        "usd_per_gpu_hour": (_NUM, True, (0.01, 100.0)),
        "serverless": (_BOOL, False, None),
    },
    "server": {
        "id": (_TEXT, True, None),
        "gpus_per_server": (_INT, True, (1, 64)),
        "usd_per_gpu": (_NUM, True, (0.0, 100_000.0)),
        "watts_per_gpu_overhead": (_NUM, True, (0.0, 5_000.0)),
        "description": (_TEXT, True, None),
    },
    "facility": {
        "id": (_TEXT, True, None),
        "usd_per_kw_year": (_NUM, True, (0.0, 50_000.0)),
        "description": (_TEXT, True, None),
    },
    "api": {
        "id": (_TEXT, True, None),
        "provider": (_TEXT, True, None),
        "usd_per_million_input_tokens": (_NUM, True, (0.0, 1_000.0)),
        "usd_per_million_output_tokens": (_NUM, True, (0.0, 1_000.0)),
    },
}
_COMMON: dict[str, tuple[str, bool, tuple[float, float] | None]] = {
    "source": (_TEXT, True, None),
    "date": (_TEXT, True, None),
    "notes": (_TEXT, False, None),
    "uncertain": (_BOOL, False, None),
}
_ROW_TYPES: dict[str, type] = {
    "pue": Pue,
    "electricity": Electricity,
    "cloud": CloudPrice,
    "server": ServerOverhead,
    "facility": Facility,
    "api": ApiPrice,
}
#: Per table: the keys that make a row unique.
_UNIQUE: dict[str, tuple[str, ...]] = {
    "pue": ("id",),
    "electricity": ("region",),
    "cloud": ("gpu_id", "provider", "kind"),
    "server": ("id",),
    "facility": ("id",),
    "api": ("id", "provider"),
}


def _label(table: str, raw: Mapping[str, Any]) -> str:
    return "/".join(str(raw.get(k, "?")) for k in _UNIQUE[table])


def _parse_row(
    table: str, raw: Any, origin: str, gpu_ids: frozenset[str] | None
) -> tuple[tuple[Any, ...], Any]:
    if not isinstance(raw, Mapping):
        raise CatalogError(f"{origin}: each [[{table}]] entry must be a table")
    label = _label(table, raw)
    where = f"{origin}, [[{table}]] {label!r}"
    schema = {**_SCHEMA[table], **_COMMON}
    unknown = sorted(set(raw) - set(schema))
    if unknown:
        raise CatalogError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(schema)}"
        )
    values: dict[str, Any] = {}
    for key, (kind, required, bounds) in schema.items():
        if key not in raw:
            if required:
                raise CatalogError(f"{where}: missing required key {key!r}")
            continue
        value = raw[key]
        if kind == _TEXT:
            if not isinstance(value, str) or not value.strip():
                raise CatalogError(f"{where}: {key} must be a non-empty string")
            values[key] = value.strip()
        elif kind == _BOOL:
            if not isinstance(value, bool):
                raise CatalogError(f"{where}: {key} must be true or false")
            values[key] = value
        else:
            is_int = isinstance(value, int) and not isinstance(value, bool)
            if kind == _INT and not is_int:
                raise CatalogError(f"{where}: {key} must be an integer, got {value!r}")
            if not is_int and not isinstance(value, float):
                raise CatalogError(f"{where}: {key} must be a number, got {value!r}")
            assert bounds is not None
            if not bounds[0] <= value <= bounds[1]:
                raise CatalogError(
                    f"{where}: {key} = {value:g} is outside [{bounds[0]:g}, {bounds[1]:g}]; "
                    "check the unit"
                )
            values[key] = int(value) if kind == _INT else float(value)
    if not _DATE_RE.match(values["date"]):
        raise CatalogError(f"{where}: date {values['date']!r} must be YYYY, YYYY-MM or YYYY-MM-DD")
    if table == "cloud":
        if values["kind"] not in CLOUD_KINDS:
            raise CatalogError(f"{where}: kind must be one of {', '.join(CLOUD_KINDS)}")
        if gpu_ids is not None and values["gpu_id"] not in gpu_ids:
            raise CatalogError(f"{where}: gpu_id {values['gpu_id']!r} is not in the GPU catalog")
    unique = tuple(values[k] for k in _UNIQUE[table])
    return unique, _ROW_TYPES[table](**values)


def parse_costs_text(
    text: str, origin: str = COSTS_FILE, gpu_ids: Sequence[str] | None = None
) -> CostData:
    """Parse and validate the text of a costs file; raises :class:`CatalogError`.

    ``gpu_ids``, when given, are the catalog ids a ``[[cloud]]`` row may name.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{origin}: not valid TOML ({exc}); fix the syntax") from None
    unknown = sorted(set(doc) - set(_SCHEMA))
    if unknown:
        raise CatalogError(
            f"{origin}: unknown table(s) {', '.join(unknown)}; use {', '.join(_SCHEMA)}"
        )
    ids = frozenset(gpu_ids) if gpu_ids is not None else None
    tables: dict[str, tuple[Any, ...]] = {}
    for table in _SCHEMA:
        entries = doc.get(table, [])
        if not isinstance(entries, list):
            raise CatalogError(f"{origin}: {table!r} must be an array of tables ([[{table}]])")
        seen: set[tuple[Any, ...]] = set()
        rows = []
        for raw in entries:
            key, row = _parse_row(table, raw, origin, ids)
            if key in seen:
                raise CatalogError(f"{origin}: duplicate [[{table}]] {'/'.join(map(str, key))}")
            seen.add(key)
            rows.append(row)
        tables[table] = tuple(rows)
    return CostData(**tables)


@lru_cache(maxsize=1)
def cost_data() -> CostData:
    """The bundled ``costs.toml``, validated (cloud rows must name catalog GPUs)."""
    from suanli.catalog.loader import bundled_gpus

    text = (resources.files("suanli.catalog") / "data" / COSTS_FILE).read_text("utf-8")
    return parse_costs_text(text, COSTS_FILE, [g.id for g in bundled_gpus()])


def _pick(rows: Sequence[_Row], attr: str, key: str, what: str) -> _Row:
    for row in rows:
        if getattr(row, attr) == key:
            return row
    known = ", ".join(getattr(r, attr) for r in rows)
    raise ValueError(f"unknown {what} {key!r}; use one of {known}")


def pue_entry(pue_id: str) -> Pue:
    """The PUE row ``pue_id`` (hyperscale, typical-colo, enterprise, home)."""
    return _pick(cost_data().pue, "id", pue_id, "PUE id")


def electricity_entry(region: str) -> Electricity:
    """The electricity price of ``region`` (us, eu, cn, ...)."""
    return _pick(cost_data().electricity, "region", region, "electricity region")


def server_entry(server_id: str) -> ServerOverhead:
    """The server overhead row ``server_id`` (8-gpu-hgx, pcie-8gpu, pcie-4gpu, workstation)."""
    return _pick(cost_data().server, "id", server_id, "server id")


def facility_entry(facility_id: str) -> Facility:
    """The facility row ``facility_id`` (colocation-us, none)."""
    return _pick(cost_data().facility, "id", facility_id, "facility id")


def cloud_prices(gpu_id: str, kind: str | None = None) -> tuple[CloudPrice, ...]:
    """Cloud snapshots for ``gpu_id``, cheapest first; only ``kind`` ones when given."""
    if kind is not None and kind not in CLOUD_KINDS:
        raise ValueError(f"unknown cloud price kind {kind!r}; use one of {', '.join(CLOUD_KINDS)}")
    rows = [r for r in cost_data().cloud if r.gpu_id == gpu_id and kind in (None, r.kind)]
    return tuple(sorted(rows, key=lambda r: (r.usd_per_gpu_hour, r.provider)))


def cheapest_cloud(gpu_id: str, kind: str = "on-demand") -> CloudPrice | None:
    """The cheapest ``kind`` snapshot for ``gpu_id``, or None."""
    rows = cloud_prices(gpu_id, kind)
    return rows[0] if rows else None


def api_prices(model_id: str) -> tuple[ApiPrice, ...]:
    """API prices for ``model_id`` at every provider, cheapest (input + output) first."""
    rows = [r for r in cost_data().api if r.id == model_id]
    if not rows:
        known = ", ".join(sorted({r.id for r in cost_data().api}))
        raise ValueError(f"unknown API model {model_id!r}; use one of {known}")
    return tuple(
        sorted(
            rows,
            key=lambda r: (
                r.usd_per_million_input_tokens + r.usd_per_million_output_tokens,
                r.provider,
            ),
        )
    )


def default_rent(gpu: GPU) -> tuple[float, str, str, str] | None:
    """The default rent of ``gpu``: (USD per GPU-hour, source, date, notes), or None.

    The cheapest on-demand snapshot in costs.toml, else the catalog's ``cloud_usd_per_hour``.
    """
    row = cheapest_cloud(gpu.id, "on-demand")
    if row is not None:
        source, date, notes = _row_source(row)
        return row.usd_per_gpu_hour, f"{row.provider} on-demand: {source}", date, notes
    price = gpu.get("cloud_usd_per_hour")
    if price is None:
        return None
    src = gpu.source_of("cloud_usd_per_hour")
    ref = src.ref if src is not None else "GPU catalog"
    notes = "uncertain" if "cloud_usd_per_hour" in gpu.uncertain else ""
    return (
        float(price),
        f"GPU catalog cloud_usd_per_hour: {ref}",
        str(gpu.get("cloud_price_date")),
        notes,
    )


def tokens_per_year(
    tokens_per_s: float, utilisation: float, hours_per_year: float = 8760.0
) -> float:
    """Tokens a year at ``tokens_per_s`` while busy a fraction ``utilisation`` of the hours."""
    _check_nonneg("tokens_per_s", tokens_per_s)
    _check_fraction("utilisation", utilisation)
    _check_positive("hours_per_year", hours_per_year)
    return tokens_per_s * 3600.0 * utilisation * hours_per_year


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class Assumption:
    """One input of the comparison: its value, unit, and where it comes from."""

    name: str
    value: float | str
    unit: str
    source: str
    date: str = ""
    notes: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "source": self.source,
            "date": self.date,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class YearRow:
    """Cumulative cost of each option at the end of a year (the last row may be a part-year)."""

    year: float
    buy_cumulative_usd: float
    rent_cumulative_usd: float
    api_cumulative_usd: float | None = None
    spot_cumulative_usd: float | None = None
    reserved_cumulative_usd: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "year": int(self.year) if float(self.year).is_integer() else self.year,
            "buy_cumulative_usd": self.buy_cumulative_usd,
            "rent_cumulative_usd": self.rent_cumulative_usd,
            "api_cumulative_usd": self.api_cumulative_usd,
            "spot_cumulative_usd": self.spot_cumulative_usd,
            "reserved_cumulative_usd": self.reserved_cumulative_usd,
        }


@dataclass(frozen=True)
class CostTotals:
    """Totals over the whole period, and the parts of the buy total."""

    buy_usd: float
    rent_usd: float
    api_usd: float | None
    spot_usd: float | None
    reserved_usd: float | None
    capex_usd: float
    resale_usd: float
    electricity_usd: float
    facility_usd: float
    energy_kwh: float
    it_power_kw: float
    busy_gpu_hours: float
    cheapest: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "buy_usd": self.buy_usd,
            "rent_usd": self.rent_usd,
            "api_usd": self.api_usd,
            "spot_usd": self.spot_usd,
            "reserved_usd": self.reserved_usd,
            "capex_usd": self.capex_usd,
            "resale_usd": self.resale_usd,
            "electricity_usd": self.electricity_usd,
            "facility_usd": self.facility_usd,
            "energy_kwh": self.energy_kwh,
            "it_power_kw": self.it_power_kw,
            "busy_gpu_hours": self.busy_gpu_hours,
            "cheapest": self.cheapest,
        }


@dataclass(frozen=True)
class CostComparison:
    """Buy vs rent (vs spot, reserved, API) for one GPU type over a period."""

    gpu_id: str
    gpus: int
    years: float
    utilisation: float
    hours_per_year: float
    per_year: tuple[YearRow, ...]
    totals: CostTotals
    break_even_utilisation: float | None
    """Utilisation at which buying and renting cost the same over the period; None if none in
    [0, 1] (renting is then cheaper at any utilisation)."""
    break_even_hours: float | None
    """Busy hours per GPU per year at the break-even utilisation."""
    verdict: str
    assumptions: tuple[Assumption, ...]

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready document (see :func:`cost_report`)."""
        return {
            "inputs": {
                "gpu": self.gpu_id,
                "gpus": self.gpus,
                "years": self.years,
                "utilisation": self.utilisation,
                "hours_per_year": self.hours_per_year,
            },
            "per_year": [r.as_dict() for r in self.per_year],
            "totals": self.totals.as_dict(),
            "break_even_utilisation": self.break_even_utilisation,
            "break_even_hours": self.break_even_hours,
            "verdict": self.verdict,
            "assumptions": [a.as_dict() for a in self.assumptions],
        }


# ---------------------------------------------------------------------------------------------
# Checks


def _check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def _check_nonneg(name: str, value: Any) -> float:
    v = _check_number(name, value)
    if v < 0:
        raise ValueError(f"{name} must not be negative, got {v:g}")
    return v


def _check_positive(name: str, value: Any) -> float:
    v = _check_number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be positive, got {v:g}")
    return v


def _check_fraction(name: str, value: Any) -> float:
    v = _check_number(name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (a fraction), got {v:g}")
    return v


def _row_source(row: Any) -> tuple[str, str, str]:
    notes = row.notes + (" (uncertain)" if row.uncertain else "")
    return row.source, row.date, notes.strip()


# ---------------------------------------------------------------------------------------------
# The comparison


def compare_costs(
    gpu: GPU,
    gpus: int = 1,
    years: float = 3.0,
    utilisation: float = 1.0,
    *,
    hours_per_year: float = HOURS_PER_YEAR,
    price_usd: float | None = None,
    server: str | None = None,
    server_usd_per_gpu: float | None = None,
    resale_fraction: float = 0.0,
    watts_per_gpu: float | None = None,
    server_watts_per_gpu: float | None = None,
    idle_power_fraction: float = 0.0,
    pue: float | str | None = None,
    region: str | None = None,
    usd_per_kwh: float | None = None,
    facility: str | None = None,
    facility_usd_per_kw_year: float | None = None,
    rent_usd_per_gpu_hour: float | None = None,
    spot_usd_per_gpu_hour: float | None = None,
    reserved_usd_per_gpu_hour: float | None = None,
    input_tokens_per_year: float = 0.0,
    output_tokens_per_year: float = 0.0,
    api: str | None = None,
    api_provider: str | None = None,
    api_usd_per_million_input_tokens: float | None = None,
    api_usd_per_million_output_tokens: float | None = None,
) -> CostComparison:
    """Cost of buying ``gpus`` GPUs vs renting them (and vs an API) over ``years``.

    ``utilisation`` is the fraction of the ``hours_per_year`` the GPUs are busy: rent is paid for
    busy hours only, owned GPUs draw power while busy (and ``idle_power_fraction`` of it while
    idle), while purchase, resale and facility costs do not depend on it. Defaults come from the
    catalog (purchase price, TDP, cloud price) and from costs.toml by the GPU's form factor
    (server, PUE, facility); every value used is listed in ``assumptions`` with its source.
    Raises ValueError, in one sentence, for a bad input or a missing figure.
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(f"gpus must be a whole number of at least 1, got {gpus!r}")
    years = _check_positive("years", years)
    if years > 50:
        raise ValueError(f"years must be at most 50, got {years:g}")
    utilisation = _check_fraction("utilisation", utilisation)
    hours_per_year = _check_positive("hours_per_year", hours_per_year)
    if hours_per_year > 8784:
        raise ValueError(
            f"hours_per_year must be at most 8784 (a leap year), got {hours_per_year:g}"
        )
    resale_fraction = _check_fraction("resale_fraction", resale_fraction)
    idle_power_fraction = _check_fraction("idle_power_fraction", idle_power_fraction)
    input_tokens_per_year = _check_nonneg("input_tokens_per_year", input_tokens_per_year)
    output_tokens_per_year = _check_nonneg("output_tokens_per_year", output_tokens_per_year)

    form = FORM_FACTOR_DEFAULTS.get(gpu.form_factor, FORM_FACTOR_DEFAULTS["pcie"])
    assumptions: list[Assumption] = [
        Assumption("gpu", gpu.id, "catalog id", "given"),
        Assumption("gpus", gpus, "GPUs", "given"),
        Assumption("years", years, "years", "given"),
        Assumption("utilisation", utilisation, "fraction of hours busy", "given"),
    ]

    def note(name: str, value: float | str, unit: str, given: bool, src: tuple[str, ...]) -> None:
        if given:
            assumptions.append(Assumption(name, value, unit, "given"))
        else:
            assumptions.append(Assumption(name, value, unit, *src))

    note(
        "hours_per_year",
        hours_per_year,
        "h",
        hours_per_year != HOURS_PER_YEAR,
        ("365 days x 24 h", "", ""),
    )

    # Purchase price per GPU.
    if price_usd is None:
        catalog_price = gpu.get("price_usd")
        if catalog_price is None:
            raise ValueError(
                f"the catalog has no purchase price for {gpu.id}; give one with --price "
                "(USD per GPU)"
            )
        price = float(catalog_price)
        src = gpu.source_of("price_usd")
        kind = gpu.get("price_kind") or "price"
        note(
            "price_usd_per_gpu",
            price,
            "USD",
            False,
            (
                f"GPU catalog ({kind}): {src.ref if src else gpu.origin}",
                str(gpu.get("price_date") or ""),
                "uncertain" if "price_usd" in gpu.uncertain else "",
            ),
        )
    else:
        price = _check_positive("price_usd", price_usd)
        note("price_usd_per_gpu", price, "USD", True, ())

    # Server share (price and power).
    server_row = server_entry(server if server is not None else form[0])
    if server_usd_per_gpu is None:
        server_usd = server_row.usd_per_gpu
        note(
            "server_usd_per_gpu",
            server_usd,
            "USD",
            False,
            (f"server {server_row.id!r}: {server_row.source}", *_row_source(server_row)[1:]),
        )
    else:
        server_usd = _check_nonneg("server_usd_per_gpu", server_usd_per_gpu)
        note("server_usd_per_gpu", server_usd, "USD", True, ())
    note(
        "resale_fraction",
        resale_fraction,
        "fraction of purchase",
        resale_fraction != 0.0,
        ("default: no resale value assumed", "", ""),
    )

    if watts_per_gpu is None:
        tdp = gpu.get("tdp_watts")
        if tdp is None:
            raise ValueError(
                f"the catalog has no TDP for {gpu.id}; give the power per GPU with --watts"
            )
        gpu_watts = float(tdp)
        src = gpu.source_of("tdp_watts")
        note(
            "watts_per_gpu",
            gpu_watts,
            "W",
            False,
            (
                f"GPU catalog tdp_watts: {src.ref if src else gpu.origin}",
                src.date if src else "",
                "",
            ),
        )
    else:
        gpu_watts = _check_positive("watts_per_gpu", watts_per_gpu)
        note("watts_per_gpu", gpu_watts, "W", True, ())
    if server_watts_per_gpu is None:
        host_watts = server_row.watts_per_gpu_overhead
        note(
            "server_watts_per_gpu",
            host_watts,
            "W",
            False,
            (f"server {server_row.id!r}: {server_row.source}", *_row_source(server_row)[1:]),
        )
    else:
        host_watts = _check_nonneg("server_watts_per_gpu", server_watts_per_gpu)
        note("server_watts_per_gpu", host_watts, "W", True, ())
    note(
        "idle_power_fraction",
        idle_power_fraction,
        "fraction of full power drawn while idle",
        idle_power_fraction != 0.0,
        ("default: no power drawn while idle (a simplification; see docs/cost.md)", "", ""),
    )

    # Energy price and PUE.
    if pue is None or isinstance(pue, str):
        pue_row = pue_entry(pue if pue is not None else form[1])
        pue_value = pue_row.value
        note("pue", pue_value, f"ratio ({pue_row.id})", False, _row_source(pue_row))
    else:
        pue_value = _check_number("pue", pue)
        if pue_value < 1.0:
            raise ValueError(
                f"pue must be at least 1 (facility power / IT power), got {pue_value:g}"
            )
        note("pue", pue_value, "ratio", True, ())
    if usd_per_kwh is None:
        elec = electricity_entry(region if region is not None else DEFAULT_REGION)
        kwh_price = elec.usd_per_kwh
        note("usd_per_kwh", kwh_price, f"USD/kWh ({elec.region})", False, _row_source(elec))
    else:
        kwh_price = _check_nonneg("usd_per_kwh", usd_per_kwh)
        if region is not None:
            electricity_entry(region)  # still reject an unknown region name
        note("usd_per_kwh", kwh_price, "USD/kWh", True, ())
    if facility_usd_per_kw_year is None:
        fac = facility_entry(facility if facility is not None else form[2])
        fac_price = fac.usd_per_kw_year
        note(
            "facility_usd_per_kw_year",
            fac_price,
            f"USD/kW/year ({fac.id})",
            False,
            _row_source(fac),
        )
    else:
        fac_price = _check_nonneg("facility_usd_per_kw_year", facility_usd_per_kw_year)
        note("facility_usd_per_kw_year", fac_price, "USD/kW/year", True, ())

    # Rent.
    if rent_usd_per_gpu_hour is None:
        found = default_rent(gpu)
        if found is None:
            raise ValueError(
                f"no cloud price is known for {gpu.id}; give one with --rent (USD per GPU-hour)"
            )
        rent, rent_src, rent_date, rent_notes = found
        note(
            "rent_usd_per_gpu_hour", rent, "USD/GPU-hour", False, (rent_src, rent_date, rent_notes)
        )
    else:
        rent = _check_nonneg("rent_usd_per_gpu_hour", rent_usd_per_gpu_hour)
        note("rent_usd_per_gpu_hour", rent, "USD/GPU-hour", True, ())
    spot: float | None
    if spot_usd_per_gpu_hour is None:
        spot_row = cheapest_cloud(gpu.id, "spot")
        spot = spot_row.usd_per_gpu_hour if spot_row is not None else None
        if spot_row is not None:
            note(
                "spot_usd_per_gpu_hour",
                spot_row.usd_per_gpu_hour,
                "USD/GPU-hour",
                False,
                (f"{spot_row.provider} spot: {spot_row.source}", *_row_source(spot_row)[1:]),
            )
    else:
        spot = _check_nonneg("spot_usd_per_gpu_hour", spot_usd_per_gpu_hour)
        note("spot_usd_per_gpu_hour", spot, "USD/GPU-hour", True, ())
    reserved: float | None = None
    if reserved_usd_per_gpu_hour is None:
        reserved_row = cheapest_cloud(gpu.id, "reserved")
        if reserved_row is not None:
            reserved = reserved_row.usd_per_gpu_hour
            note(
                "reserved_usd_per_gpu_hour",
                reserved,
                "USD/GPU-hour, every hour",
                False,
                (
                    f"{reserved_row.provider} reserved: {reserved_row.source}",
                    *_row_source(reserved_row)[1:],
                ),
            )
    else:
        reserved = _check_nonneg("reserved_usd_per_gpu_hour", reserved_usd_per_gpu_hour)
        note("reserved_usd_per_gpu_hour", reserved, "USD/GPU-hour, every hour", True, ())

    # API.
    api_year: float | None = None
    tokens = input_tokens_per_year + output_tokens_per_year
    given_in = api_usd_per_million_input_tokens
    given_out = api_usd_per_million_output_tokens
    if api is not None or given_in is not None or given_out is not None:
        if tokens <= 0:
            raise ValueError(
                "an API price needs a token volume; give input_tokens_per_year and/or "
                "output_tokens_per_year"
            )
        p_in: float
        p_out: float
        if given_in is not None or given_out is not None:
            if given_in is None or given_out is None:
                raise ValueError(
                    "give both API prices, per million input and per million output tokens"
                )
            p_in = _check_nonneg("api_usd_per_million_input_tokens", given_in)
            p_out = _check_nonneg("api_usd_per_million_output_tokens", given_out)
            api_src: tuple[str, str, str] = ("given", "", "")
            api_label = "given"
        else:
            assert api is not None
            rows = api_prices(api)
            if api_provider is not None:
                rows = tuple(r for r in rows if r.provider.lower() == api_provider.lower())
                if not rows:
                    providers = ", ".join(r.provider for r in api_prices(api))
                    raise ValueError(
                        f"no price for {api!r} at {api_provider!r}; known providers: {providers}"
                    )
            row = min(
                rows,
                key=lambda r: (
                    input_tokens_per_year * r.usd_per_million_input_tokens
                    + output_tokens_per_year * r.usd_per_million_output_tokens
                ),
            )
            p_in, p_out = row.usd_per_million_input_tokens, row.usd_per_million_output_tokens
            api_src = (f"{row.provider} {row.id}: {row.source}", *_row_source(row)[1:])
            api_label = f"{row.id} at {row.provider}"
        assumptions.append(
            Assumption("api_usd_per_million_input_tokens", p_in, f"USD ({api_label})", *api_src)
        )
        assumptions.append(
            Assumption("api_usd_per_million_output_tokens", p_out, f"USD ({api_label})", *api_src)
        )
        api_year = (input_tokens_per_year * p_in + output_tokens_per_year * p_out) / 1e6
    elif tokens > 0:
        raise ValueError("a token volume needs an API price; give --api MODEL or both API prices")
    if tokens > 0:
        assumptions.append(
            Assumption("input_tokens_per_year", input_tokens_per_year, "tokens", "given")
        )
        assumptions.append(
            Assumption("output_tokens_per_year", output_tokens_per_year, "tokens", "given")
        )

    # Arithmetic (docs/cost.md).
    it_kw = gpus * (gpu_watts + host_watts) / 1000.0
    duty = utilisation + idle_power_fraction * (1.0 - utilisation)
    energy_kwh_year = it_kw * hours_per_year * duty * pue_value
    electricity_year = energy_kwh_year * kwh_price
    facility_year = it_kw * fac_price
    capex = gpus * (price + server_usd)
    resale = resale_fraction * capex
    busy_hours_year = gpus * utilisation * hours_per_year
    rent_year = busy_hours_year * rent
    spot_year = busy_hours_year * spot if spot is not None else None
    reserved_year = gpus * hours_per_year * reserved if reserved is not None else None

    def buy_at(t: float) -> float:
        credit = resale if t >= years else 0.0
        return capex + t * (electricity_year + facility_year) - credit

    def times(t: float, per_year: float | None) -> float | None:
        return t * per_year if per_year is not None else None

    marks = [min(float(k), years) for k in range(1, math.ceil(years) + 1)]
    per_year = tuple(
        YearRow(
            year=t,
            buy_cumulative_usd=buy_at(t),
            rent_cumulative_usd=t * rent_year,
            api_cumulative_usd=times(t, api_year),
            spot_cumulative_usd=times(t, spot_year),
            reserved_cumulative_usd=times(t, reserved_year),
        )
        for t in marks
    )
    last = per_year[-1]
    options: dict[str, float | None] = {
        "buy": last.buy_cumulative_usd,
        "rent": last.rent_cumulative_usd,
        "spot": last.spot_cumulative_usd,
        "reserved": last.reserved_cumulative_usd,
        "api": last.api_cumulative_usd,
    }
    priced = {k: v for k, v in options.items() if v is not None}
    cheapest = min(priced, key=lambda k: priced[k])
    totals = CostTotals(
        buy_usd=last.buy_cumulative_usd,
        rent_usd=last.rent_cumulative_usd,
        api_usd=last.api_cumulative_usd,
        spot_usd=last.spot_cumulative_usd,
        reserved_usd=last.reserved_cumulative_usd,
        capex_usd=capex,
        resale_usd=resale,
        electricity_usd=years * electricity_year,
        facility_usd=years * facility_year,
        energy_kwh=years * energy_kwh_year,
        it_power_kw=it_kw,
        busy_gpu_hours=years * busy_hours_year,
        cheapest=cheapest,
    )

    # Break-even: buy(u) = fixed + variable * u, rent(u) = rent_per_u * u.
    energy_cost_full = years * it_kw * hours_per_year * pue_value * kwh_price
    fixed = capex - resale + years * facility_year + energy_cost_full * idle_power_fraction
    variable = energy_cost_full * (1.0 - idle_power_fraction)
    rent_per_u = years * gpus * hours_per_year * rent
    break_even: float | None = None
    if rent_per_u > variable:
        u_star = fixed / (rent_per_u - variable)
        if u_star <= 1.0:
            break_even = u_star
    else:
        u_star = math.inf
    break_even_hours = break_even * hours_per_year if break_even is not None else None

    verdict = _verdict(
        years, utilisation, totals, break_even, break_even_hours, u_star, rent_per_u, variable
    )
    return CostComparison(
        gpu_id=gpu.id,
        gpus=gpus,
        years=years,
        utilisation=utilisation,
        hours_per_year=hours_per_year,
        per_year=per_year,
        totals=totals,
        break_even_utilisation=break_even,
        break_even_hours=break_even_hours,
        verdict=verdict,
        assumptions=tuple(assumptions),
    )


def _verdict(
    years: float,
    utilisation: float,
    totals: CostTotals,
    break_even: float | None,
    break_even_hours: float | None,
    u_star: float,
    rent_per_u: float,
    variable: float,
) -> str:
    period = f"over {years:g} year{'s' if years != 1 else ''}"
    if break_even is not None and break_even_hours is not None:
        head = (
            f"buying is cheaper above {break_even:.0%} utilisation "
            f"({break_even_hours:,.0f} h per GPU per year) {period}"
        )
    elif rent_per_u <= variable:
        head = (
            f"renting is cheaper at any utilisation {period}: the rent is below the owned "
            "GPUs' energy cost per busy hour"
        )
    else:
        head = (
            f"renting is cheaper at any utilisation {period}: buying would need "
            f"{u_star:.0%} utilisation to pay back"
        )
    buy, rent = totals.buy_usd, totals.rent_usd
    if buy < rent:
        head += f"; at {utilisation:.0%} buying saves ${rent - buy:,.0f}"
    elif rent < buy:
        head += f"; at {utilisation:.0%} renting saves ${buy - rent:,.0f}"
    else:
        head += f"; at {utilisation:.0%} they cost the same"
    if totals.api_usd is not None and totals.api_usd < min(buy, rent):
        head += f"; the API is cheapest for this token volume (${totals.api_usd:,.0f})"
    return head


def cost_report(
    gpu: GPU | str, *, catalog: Sequence[GPU] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """The JSON-ready document of :func:`compare_costs`, for the CLI to render.

    ``gpu`` is a :class:`GPU` or a name looked up in ``catalog`` (default: the bundled one).
    Keys: inputs, per_year, totals, break_even_utilisation, break_even_hours, verdict,
    assumptions. Other keyword arguments go to :func:`compare_costs`.
    """
    if isinstance(gpu, str):
        from suanli.catalog.loader import bundled_gpus
        from suanli.catalog.lookup import find_gpu

        gpu = find_gpu(gpu, list(catalog) if catalog is not None else list(bundled_gpus()))
    return compare_costs(gpu, **kwargs).as_dict()
