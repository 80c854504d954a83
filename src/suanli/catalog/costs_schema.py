"""The typed schema of the price file (``costs.toml``): one table of rows per kind of price.

:data:`COSTS_TABLES` says, per table, each key's type, whether it is required and its plausible
range; the msgspec structs and the JSON Schema (``schemas/costs.schema.json``) are built from it.
msgspec checks types, ranges (refusing NaN and infinity), enumerations and date shapes; the price
loader (:mod:`suanli.catalog.costs`) then checks real dates, currencies, catalog GPU ids and
spot below on-demand. :func:`explain_costs_error` turns msgspec's complaint into one sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from suanli.catalog.dates import YEAR_DATE_PATTERN, date_problem
from suanli.catalog.explain import split_error
from suanli.i18n import N_

#: Allowed ``kind`` values of a cloud price.
CLOUD_KINDS = ("on-demand", "reserved", "spot")
#: Allowed ``kind`` values of a purchase price.
PURCHASE_KINDS = ("street", "launch", "msrp")
#: The one exchange rate id.
FX_ID = "usd-cny"

TEXT = "text"
NUMBER = "number"
INTEGER = "integer"
BOOL = "bool"

#: Key -> (type, required, (low, high) for numbers).
TableSpec = dict[str, tuple[str, bool, tuple[float, float] | None]]

#: Keys every row has.
COMMON_KEYS: TableSpec = {
    "source": (TEXT, True, None),
    "date": (TEXT, True, None),
    "notes": (TEXT, False, None),
    "uncertain": (BOOL, False, None),
}

#: Per table: key -> (type, required, (low, high) for numbers), the common keys apart.
COSTS_TABLES: dict[str, TableSpec] = {
    "pue": {
        "id": (TEXT, True, None),
        "value": (NUMBER, True, (1.0, 3.0)),
    },
    "electricity": {
        "region": (TEXT, True, None),
        "usd_per_kwh": (NUMBER, False, (0.005, 2.0)),
        "cny_per_kwh": (NUMBER, False, (0.03, 15.0)),
        "description": (TEXT, True, None),
    },
    "cloud": {
        "gpu_id": (TEXT, True, None),
        "provider": (TEXT, True, None),
        "kind": (TEXT, True, None),
        "usd_per_gpu_hour": (NUMBER, False, (0.01, 100.0)),
        "cny_per_gpu_hour": (NUMBER, False, (0.05, 700.0)),
        "serverless": (BOOL, False, None),
    },
    "server": {
        "id": (TEXT, True, None),
        "gpus_per_server": (INTEGER, True, (1, 64)),
        "usd_per_gpu": (NUMBER, True, (0.0, 100_000.0)),
        "watts_per_gpu_overhead": (NUMBER, True, (0.0, 5_000.0)),
        "description": (TEXT, True, None),
    },
    "facility": {
        "id": (TEXT, True, None),
        "usd_per_kw_year": (NUMBER, True, (0.0, 50_000.0)),
        "description": (TEXT, True, None),
    },
    "api": {
        "id": (TEXT, True, None),
        "provider": (TEXT, True, None),
        "usd_per_million_input_tokens": (NUMBER, False, (0.0, 1_000.0)),
        "usd_per_million_output_tokens": (NUMBER, False, (0.0, 1_000.0)),
        "cny_per_million_input_tokens": (NUMBER, False, (0.0, 7_000.0)),
        "cny_per_million_output_tokens": (NUMBER, False, (0.0, 7_000.0)),
    },
    "purchase": {
        "gpu_id": (TEXT, True, None),
        "kind": (TEXT, True, None),
        "usd_per_gpu": (NUMBER, False, (10.0, 1_000_000.0)),
        "cny_per_gpu": (NUMBER, False, (70.0, 7_000_000.0)),
    },
    "fx": {
        "id": (TEXT, True, None),
        "cny_per_usd": (NUMBER, True, (1.0, 20.0)),
    },
}

#: Text keys restricted to a list of values, per table.
_ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("cloud", "kind"): CLOUD_KINDS,
    ("purchase", "kind"): PURCHASE_KINDS,
    ("fx", "id"): (FX_ID,),
}


def table_keys(table: str) -> TableSpec:
    """Every key of ``table``'s rows, the common ones last."""
    return {**COSTS_TABLES[table], **COMMON_KEYS}


def _key_type(table: str, key: str, kind: str, bounds: tuple[float, float] | None) -> Any:
    if kind == BOOL:
        return bool
    if kind in (NUMBER, INTEGER):
        low, high = bounds if bounds is not None else (0.0, math.inf)
        base: Any = int if kind == INTEGER else float
        return Annotated[base, Meta(ge=low, le=high)]
    if (table, key) in _ENUMS:
        return Literal[_ENUMS[(table, key)]]  # a Literal over a tuple is one of its members
    if key == "date":
        return Annotated[str, Meta(pattern=YEAR_DATE_PATTERN, description="YYYY[-MM[-DD]]")]
    return Annotated[str, Meta(pattern=r"\S")]


def _row_struct(table: str) -> Any:
    fields: list[tuple[str, Any, Any]] = []
    for key, (kind, required, bounds) in table_keys(table).items():
        typ = _key_type(table, key, kind, bounds)
        fields.append((key, typ, msgspec.NODEFAULT) if required else (key, typ | UnsetType, UNSET))
    return msgspec.defstruct(table, fields, kw_only=True, forbid_unknown_fields=True)


#: Per table: the msgspec struct of one row.
ROW_STRUCTS: dict[str, Any] = {table: _row_struct(table) for table in COSTS_TABLES}

#: The whole price file: an array of tables per kind of row, and optionally ``$schema``.
CostsFile = msgspec.defstruct(
    "CostsFile",
    [
        *((table, list[row], []) for table, row in ROW_STRUCTS.items()),  # type: ignore[valid-type]
        ("schema", str | UnsetType, UNSET),
    ],
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"schema": "$schema"},
)


def convert_costs_file(doc: dict[str, Any]) -> Any:
    """The parsed TOML document as a :data:`CostsFile`; raises ``msgspec.ValidationError``."""
    return msgspec.convert(doc, CostsFile)


def row_values(table: str, row: Any) -> dict[str, Any]:
    """The keys a schema-valid row gives (text stripped), in the table's key order."""
    values: dict[str, Any] = {}
    for key in table_keys(table):
        value = getattr(row, key)
        if value is not UNSET:
            values[key] = value.strip() if isinstance(value, str) else value
    return values


def costs_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of a price file, for editors."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "suanli price data (costs.toml)",
        "description": (
            "Dated, sourced rows per table ([[cloud]], [[purchase]], [[api]], ...); money in "
            "USD (usd_...) or CNY (cny_..., with an [[fx]] usd-cny row); see docs/cost.md."
        ),
        **msgspec.json.schema(CostsFile),
    }


def _label(table: str, raw: Mapping[str, Any]) -> str:
    unique = {"electricity": ("region",), "cloud": ("gpu_id", "provider", "kind")}
    unique |= {"api": ("id", "provider"), "purchase": ("gpu_id",)}
    return "/".join(str(raw.get(k, "?")) for k in unique.get(table, ("id",)))


def _key_message(table: str, key: str, value: Any) -> str:
    """Why ``value`` is not allowed for ``key`` of a ``[[table]]`` row (without the place)."""
    kind, _, bounds = table_keys(table).get(key, (TEXT, False, None))
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if (table, key) == ("fx", "id"):
        return N_("the only exchange rate id is {fx!r} (CNY per USD)").format(fx=FX_ID)
    if (table, key) in _ENUMS:
        return N_("kind must be one of {kinds}").format(kinds=", ".join(_ENUMS[(table, key)]))
    if key == "date" and isinstance(value, str) and value.strip():
        return date_problem(value, key, year_only=True) or ""
    if kind == TEXT:
        return N_("{key} must be a non-empty string").format(key=key)
    if kind == BOOL:
        return N_("{key} must be true or false").format(key=key)
    if kind == INTEGER and not is_int:
        return N_("{key} must be an integer, got {value!r}").format(key=key, value=value)
    if not is_int and not isinstance(value, float):
        return N_("{key} must be a number, got {value!r}").format(key=key, value=value)
    if not math.isfinite(value):
        return N_("{key} must be a finite number, got {value!r}").format(key=key, value=value)
    low, high = bounds or (0.0, 0.0)
    return N_("{key} = {value:g} is outside [{low:g}, {high:g}]; check the unit").format(
        key=key, value=value, low=low, high=high
    )


def explain_costs_error(message: str, doc: Mapping[str, Any], origin: str) -> str:
    """One sentence for msgspec's ``message`` about the parsed price file ``doc``."""
    what, steps = split_error(message)
    if not steps:
        unknown = sorted(set(doc) - set(COSTS_TABLES) - {"$schema"})
        return N_("{origin}: unknown table(s) {tables}; use {known}").format(
            origin=origin, tables=", ".join(unknown), known=", ".join(COSTS_TABLES)
        )
    table = str(steps[0])
    rows = doc.get(table)
    if table not in COSTS_TABLES:
        return f"{origin}: {what}"
    if len(steps) < 2 or not isinstance(rows, list):
        return N_("{origin}: {table!r} must be an array of tables ([[{table}]])").format(
            origin=origin, table=table
        )
    raw = rows[int(steps[1])]
    if not isinstance(raw, Mapping):
        return N_("{origin}: each [[{table}]] entry must be a table").format(
            origin=origin, table=table
        )
    where = f"{origin}, [[{table}]] {_label(table, raw)!r}"
    allowed = table_keys(table)
    if len(steps) == 2 and "unknown field" in what:
        return N_("{where}: unknown key(s) {keys}; allowed: {allowed}").format(
            where=where, keys=", ".join(sorted(set(raw) - set(allowed))), allowed=", ".join(allowed)
        )
    if len(steps) == 2:
        missing = [k for k, (_, required, _) in allowed.items() if required and k not in raw]
        return N_("{where}: missing required key {key!r}").format(
            where=where, key=missing[0] if missing else what
        )
    key = str(steps[2])
    return f"{where}: {_key_message(table, key, raw.get(key))}"
