"""The typed schema of a GPU catalog file (``[[gpu]]`` tables), built from the field tables of
:mod:`suanli.catalog.gpu` so that the two never drift apart.

msgspec checks every type, enumeration, plausible range (which also refuses NaN and infinity)
and date shape in one pass in C; what one field cannot say alone (sparse = 2 x dense, FLOP/s per
watt, pairs of keys, sources covering every figure, real calendar dates) is checked afterwards by
:mod:`suanli.catalog.loader`. :func:`gpu_json_schema` is the JSON Schema published for users'
own ``gpus.toml`` (``src/suanli/catalog/schemas/gpus.schema.json``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from suanli.catalog.dates import MONTH_DATE_PATTERN
from suanli.catalog.gpu import (
    ALL_FIELDS,
    BOOL_FIELDS,
    FORM_FACTORS,
    INTERCONNECT_KINDS,
    NUMERIC_FIELDS,
    REQUIRED_FIELDS,
    SOFTWARE_STACKS,
    TEXT_FIELDS,
    VENDORS,
)

#: Allowed ``price_kind`` values.
PRICE_KINDS = ("launch-msrp", "street", "list")

#: Lower-case letters, digits, '.' and '-', starting with a letter or digit.
ID_PATTERN = r"^[a-z0-9][a-z0-9.-]*$"

#: Numeric fields that are counts or years: whole numbers.
INTEGER_FIELDS = frozenset(
    {
        "memory_bytes",
        "launch_year",
        "pcie_gen",
        "pcie_lanes",
        "nvenc_engines",
        "nvdec_engines",
        "rt_cores",
        "cores",
        "memory_channels",
    }
)

#: Enumerated text fields and their allowed values.
ENUM_FIELDS: dict[str, tuple[str, ...]] = {
    "vendor": VENDORS,
    "form_factor": FORM_FACTORS,
    "software_stack": SOFTWARE_STACKS,
    "interconnect_kind": INTERCONNECT_KINDS,
    "price_kind": PRICE_KINDS,
}

#: Fields holding a date string (checked again as a calendar date after the schema).
DATE_FIELDS = ("price_date", "cloud_price_date")

_NON_EMPTY = r"\S"


def _literal(values: tuple[str, ...]) -> Any:
    return Literal[values]  # a Literal over a tuple is the Literal of its members


def _field_type(key: str) -> Any:
    """The annotated type of one ``[[gpu]]`` key."""
    if key in NUMERIC_FIELDS:
        low, high = NUMERIC_FIELDS[key]
        base: Any = int if key in INTEGER_FIELDS else float
        return Annotated[base, Meta(ge=low, le=high)]
    if key in BOOL_FIELDS:
        return Annotated[bool, Meta(description=BOOL_FIELDS[key])]
    description = TEXT_FIELDS.get(key, "")
    if key in ENUM_FIELDS:
        return Annotated[_literal(ENUM_FIELDS[key]), Meta(description=description)]
    if key == "id":
        return Annotated[str, Meta(pattern=ID_PATTERN, description=description)]
    if key in DATE_FIELDS:
        return Annotated[str, Meta(pattern=MONTH_DATE_PATTERN, description=description)]
    if key in ("name", "memory_type"):
        return Annotated[str, Meta(pattern=_NON_EMPTY, description=description)]
    return Annotated[str, Meta(description=description)]


#: A name a source may cover: a field, or ``*`` for every figure not named elsewhere.
_FIELD_NAME: Any = _literal(("*", *sorted(ALL_FIELDS)))

#: One ``[[gpu.sources]]`` table: the document a group of figures comes from.
Source = msgspec.defstruct(
    "Source",
    [
        (
            "fields",
            Annotated[
                list[_FIELD_NAME],
                Meta(description="the figures this source covers; '*' covers every other one"),
            ],
        ),
        (
            "ref",
            Annotated[str, Meta(pattern=_NON_EMPTY, description="the document, page or table")],
        ),
        (
            "date",
            Annotated[
                str,
                Meta(
                    pattern=MONTH_DATE_PATTERN,
                    description="when it was published or read: YYYY-MM or YYYY-MM-DD",
                ),
            ],
        ),
    ],
    forbid_unknown_fields=True,
)


def _gpu_fields() -> list[tuple[str, Any, Any]]:
    fields: list[tuple[str, Any, Any]] = [
        (key, _field_type(key), msgspec.NODEFAULT) for key in REQUIRED_FIELDS
    ]
    optional = sorted(ALL_FIELDS - set(REQUIRED_FIELDS) - {"aliases", "sources", "uncertain"})
    fields += [(key, _field_type(key) | UnsetType, UNSET) for key in optional]
    fields += [
        ("aliases", Annotated[list[str], Meta(description="other names it is known by")], []),
        (
            "uncertain",
            Annotated[list[str], Meta(description="fields not confirmed by a primary source")],
            [],
        ),
        (
            "sources",
            Annotated[
                list[Source],  # type: ignore[valid-type]
                Meta(min_length=1, description="[[gpu.sources]]: where every figure comes from"),
            ],
            msgspec.NODEFAULT,
        ),
    ]
    return fields


#: One ``[[gpu]]`` table. Absent optional figures are ``UNSET``.
GpuEntry = msgspec.defstruct("GpuEntry", _gpu_fields(), kw_only=True, forbid_unknown_fields=True)

#: A whole catalog file: ``[[gpu]]`` tables, and optionally the ``$schema`` an editor reads.
GpuFile = msgspec.defstruct(
    "GpuFile",
    [
        ("gpu", list[GpuEntry], []),  # type: ignore[valid-type]
        ("schema", str | UnsetType, UNSET),
    ],
    kw_only=True,
    forbid_unknown_fields=True,
    rename={"schema": "$schema"},
)


def convert_gpu_file(doc: dict[str, Any]) -> Any:
    """The parsed TOML document as a :data:`GpuFile`; raises ``msgspec.ValidationError``."""
    return msgspec.convert(doc, GpuFile)


def gpu_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07, which editors read widely) of a catalog file (Taplo, VS Code)."""
    body = msgspec.json.schema(GpuFile)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "suanli GPU catalog (gpus.toml)",
        "description": (
            "[[gpu]] entries in base units (bytes, bytes/s, dense FLOP/s, watts, USD), each "
            "figure covered by a dated [[gpu.sources]] entry; see docs/catalog.md. suanli also "
            "checks what a schema cannot: sparse = 2 x dense, FLOP/s per watt, real dates."
        ),
        **body,
    }
