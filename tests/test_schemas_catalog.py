"""The catalog and price files are checked by typed schemas: the published JSON Schemas are
current, and no generated file with an invalid date, a negative or non-finite figure, or a value
of the wrong type is accepted (hypothesis)."""

from __future__ import annotations

import datetime as dt
import math
import sys
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.catalog.costs_schema import COSTS_TABLES, NUMBER
from suanli.catalog.dates import earliest_day
from suanli.catalog.gpu import NUMERIC_FIELDS
from suanli.catalog.loader import NON_GPU_DATA_FILES, CatalogError, parse_catalog_text
from suanli.catalog.schema_export import SCHEMAS_DIR, schema_documents
from suanli.plan.cost.data import parse_costs_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TODAY = dt.datetime.now(dt.timezone.utc).date()


def test_published_schemas_are_current() -> None:
    for name, text in schema_documents().items():
        path = SCHEMAS_DIR / name
        assert path.is_file(), f"run: python -m suanli.catalog.schema_export ({name} missing)"
        assert path.read_text(encoding="utf-8") == text, (
            f"{name} is stale; run: python -m suanli.catalog.schema_export"
        )


def _bundled(name: str) -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    doc: dict[str, Any] = tomllib.loads(text)
    return doc


def test_bundled_files_satisfy_the_published_json_schemas() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import json

    gpus = json.loads((SCHEMAS_DIR / "gpus.schema.json").read_text(encoding="utf-8"))
    costs = json.loads((SCHEMAS_DIR / "costs.schema.json").read_text(encoding="utf-8"))
    data = resources.files("suanli.catalog") / "data"
    names = [t.name for t in data.iterdir() if t.name.endswith(".toml")]
    for name in names:
        if name not in NON_GPU_DATA_FILES:
            jsonschema.validate(_bundled(name), gpus)
    jsonschema.validate(_bundled("costs.toml"), costs)
    # ... and the JSON Schema refuses what suanli refuses
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"gpu": [{"id": "x", "vendor": "nvidai"}]}, gpus)


# -- generated documents ----------------------------------------------------------------------

GOOD_GPU: dict[str, str] = {
    "id": '"my-card"',
    "name": '"My Card"',
    "vendor": '"nvidia"',
    "form_factor": '"pcie"',
    "memory_bytes": "25_769_803_776",
    "memory_type": '"GDDR6"',
    "memory_bandwidth_bytes_per_s": "600e9",
    "launch_year": "2024",
    "software_stack": '"cuda"',
    "peak_bf16_dense_flops": "100e12",
    "tdp_watts": "300",
    "price_usd": "999",
    "price_date": '"2024-01"',
}

bad_dates = st.sampled_from(
    ["2024-13", "2024-00", "2024-02-30", "2023-02-29", "2024-04-31", "2024-1", "24-01", "2099-01"]
)
good_dates = st.dates(min_value=dt.date(1990, 1, 1), max_value=TODAY).map(
    lambda d: d.isoformat()[: 7 if d.day % 2 else 10]
)
dates = st.one_of(bad_dates, good_dates).map(lambda d: f'"{d}"')
numbers = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "-0.5", "0", "-1e12", "1e400"]),
    st.floats(allow_nan=True, allow_infinity=True)
    .map(repr)
    .map(lambda r: {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(r, r)),
    st.integers(min_value=-(10**12), max_value=10**17).map(str),
)
wrong_types = st.sampled_from(['"12"', "true", "[1, 2]", "{ a = 1 }", "2024-01-01", '""'])
values = st.one_of(dates, numbers, wrong_types)


def _gpu_text(edits: dict[str, str], source_date: str) -> str:
    lines = ["[[gpu]]", *(f"{k} = {v}" for k, v in {**GOOD_GPU, **edits}.items())]
    lines += ["[[gpu.sources]]", 'fields = ["*"]', 'ref = "test"', f"date = {source_date}"]
    return "\n".join(lines) + "\n"


def _real_past_date(value: str) -> bool:
    day = earliest_day(value)
    return day is not None and day <= TODAY + dt.timedelta(days=1)


@PROPERTY
@given(
    edits=st.dictionaries(st.sampled_from(sorted({*GOOD_GPU, *NUMERIC_FIELDS})), values),
    source_date=dates,
)
def test_no_catalog_file_with_a_bad_date_or_figure_is_accepted(
    edits: dict[str, str], source_date: str
) -> None:
    text = _gpu_text(edits, source_date)
    try:
        (gpu,) = parse_catalog_text(text, "fuzz.toml")
    except CatalogError as exc:
        assert "\n" not in str(exc).strip() and "fuzz.toml" in str(exc)
        return
    record = gpu.as_dict()
    for key, value in record.items():
        if key in NUMERIC_FIELDS:
            assert isinstance(value, (int, float)) and not isinstance(value, bool), key
            assert math.isfinite(value) and value >= 0, (key, value)
            low, high = NUMERIC_FIELDS[key]
            assert low <= value <= high, (key, value)
    for key in ("price_date", "cloud_price_date"):
        if key in record:
            assert _real_past_date(record[key]), record[key]
    assert all(_real_past_date(s["date"]) for s in record["sources"])


COSTS_GOOD = {
    "fx": {"id": '"usd-cny"', "cny_per_usd": "7.2"},
    "pue": {"id": '"home"', "value": "1.1"},
    "server": {
        "id": '"box"',
        "gpus_per_server": "8",
        "usd_per_gpu": "1000",
        "watts_per_gpu_overhead": "100",
        "description": '"a box"',
    },
    "api": {
        "id": '"m"',
        "provider": '"p"',
        "usd_per_million_input_tokens": "1",
        "usd_per_million_output_tokens": "2",
    },
}


@PROPERTY
@given(
    table=st.sampled_from(sorted(COSTS_GOOD)),
    edits=st.dictionaries(st.sampled_from(["date", "value", "cny_per_usd", "usd_per_gpu"]), values),
    date=dates,
)
def test_no_price_file_with_a_bad_date_or_figure_is_accepted(
    table: str, edits: dict[str, str], date: str
) -> None:
    row = {**COSTS_GOOD[table], "source": '"s"', "date": date}
    row.update({k: v for k, v in edits.items() if k in COSTS_TABLES[table] or k == "date"})
    text = f"[[{table}]]\n" + "\n".join(f"{k} = {v}" for k, v in row.items()) + "\n"
    try:
        data = parse_costs_text(text, "fuzz.toml")
    except CatalogError as exc:
        assert "\n" not in str(exc).strip() and "fuzz.toml" in str(exc)
        return
    for accepted in data.rows():
        assert _real_past_date(accepted.date), accepted.date
        for key, (kind, _, bounds) in COSTS_TABLES[table].items():
            value = getattr(accepted, key, None)
            if kind == NUMBER and value is not None:
                assert math.isfinite(value) and value >= 0, (key, value)
                assert bounds is not None and bounds[0] <= value <= bounds[1]
