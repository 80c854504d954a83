"""``cost``: buy vs rent vs API, as ``suanli cost --json``, with the web page's curve."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.cost import EXPLAIN, CostAnswer, CostRequest, cost, parse_pue
from suanli.cli.cost import cost_cmd


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cost_cmd, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output)
    return doc


def test_cli_json_equals_the_answer() -> None:
    args = ("h100", "--price", "25000", "--years", "2.5", "--pue", "typical-colo")
    args += ("--spot", "1.5", "--tokens-per-year", "1e10", "--api", "llama-3.1-8b")
    doc = cli_json(*args)
    answer = cost(
        CostRequest(
            "h100",
            price=25000,
            years=2.5,
            pue="typical-colo",
            spot=1.5,
            tokens_per_year=1e10,
            api="llama-3.1-8b",
        )
    )
    assert doc == answer.to_json()
    assert list(doc) == [
        "schema_version",
        "inputs",
        "per_year",
        "totals",
        "break_even_utilisation",
        "break_even_hours",
        "verdict",
        "assumptions",
        "curve",
        "break_even_years",
        "explain",
        "currency",
        "rent",
        "buy",
    ]
    assert doc["schema_version"] == SCHEMA_VERSION
    assert [r["year"] for r in doc["per_year"]] == [1, 2, 2.5]
    assert doc["explain"] == EXPLAIN


def test_rent_is_busy_hours_times_the_rate() -> None:
    # 8 GPUs busy half of 8760 h a year for 3 years at $2/GPU-hour, computed by hand.
    answer = cost(CostRequest("h100", price=25000, utilisation=0.5, rent=2.0))
    assert answer.totals.rent_usd == pytest.approx(8 * 0.5 * 8760 * 3 * 2.0)
    assert answer.break_even_hours == pytest.approx((answer.break_even_utilisation or 0) * 8760)


def test_curve_meets_the_yearly_rows_and_the_break_even() -> None:
    answer = cost(CostRequest("h100", price=25000, years=3, pue="1.3"))
    curve = answer.curve
    assert len(curve) == 37 and curve[0].year == 0 and curve[-1].year == 3
    assert curve[0].rent_cumulative_usd == 0 and curve[0].spot_cumulative_usd is not None
    assert curve[-1].buy_cumulative_usd == pytest.approx(answer.totals.buy_usd)
    for point in curve[12:36:12]:  # the end of years 1 and 2 (monthly steps)
        row = answer.per_year[round(point.year) - 1]
        assert point.buy_cumulative_usd == pytest.approx(row.buy_cumulative_usd)
        assert point.rent_cumulative_usd == pytest.approx(row.rent_cumulative_usd)
    # At the break-even time renting has cost what buying has (resale not counted).
    t = answer.break_even_years
    assert t is not None and 0 < t < 3
    totals = answer.totals
    opex = (totals.electricity_usd + totals.facility_usd) / 3
    assert totals.capex_usd + opex * t == pytest.approx(totals.rent_usd / 3 * t)


def test_no_break_even_when_running_costs_more_than_rent() -> None:
    answer = cost(CostRequest("h100", price=25000, rent=0.01))
    assert answer.break_even_years is None and answer.break_even_utilisation is None


def test_parse_pue() -> None:
    assert parse_pue("1.4") == 1.4 and parse_pue(1.2) == 1.2 and parse_pue(None) is None
    assert parse_pue(" typical-colo ") == "typical-colo"
    assert parse_pue("x" * 100) == "x" * 40
    for bad in ("nan", "inf", math.inf):
        with pytest.raises(ValueError, match="invalid pue"):
            parse_pue(bad)


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="electricity region"):
        cost(CostRequest("h100", price=1, region="mars"))
    with pytest.raises(ValueError, match="unknown GPU"):
        cost(CostRequest("H1000"))


def test_json_schema() -> None:
    schema = json_schema(CostAnswer)
    assert {"curve", "break_even_years", "explain", "totals"} <= set(schema["required"])
    assert "CurvePoint" in schema["$defs"] and "CostTotals" in schema["$defs"]
