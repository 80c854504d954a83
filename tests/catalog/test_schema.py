"""Dates against the calendar, the friendly sentences of the typed schema, and where the user's
catalog file lives."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from suanli.catalog import CatalogError
from suanli.catalog.dates import date_problem
from suanli.catalog.loader import parse_catalog_text, user_catalog_path
from suanli.plan.cost.data import parse_costs_text
from tests.catalog.test_catalog import GOOD

TODAY = dt.date(2026, 12, 1)


@pytest.mark.parametrize("good", ["2024-02", "2024-02-29", "2026-12", "2026-12-02", "1999-12-31"])
def test_real_dates_pass(good: str) -> None:
    assert date_problem(good, "date", today=TODAY) is None


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("2024-13", "not a calendar date"),
        ("2024-00", "not a calendar date"),
        ("2024-02-30", "not a calendar date"),
        ("2023-02-29", "not a calendar date"),
        ("2026-12-03", "in the future"),
        ("2027", "YYYY-MM"),
        ("last year", "YYYY-MM"),
        (dt.date(2024, 1, 1), "quoted string"),
        (202401, "YYYY-MM"),
    ],
)
def test_impossible_or_future_dates_are_refused(bad: object, words: str) -> None:
    problem = date_problem(bad, "date", today=TODAY)
    assert problem is not None and words in problem


def test_a_bare_year_only_where_allowed() -> None:
    assert date_problem("2024", "date", year_only=True, today=TODAY) is None
    assert date_problem("2024", "date", today=TODAY) is not None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('date = "2026-11"', 'date = "2024-13"'), "source date '2024-13' is not a calendar date"),
        (("tdp_watts = 300", "tdp_watts = nan"), "tdp_watts must be a finite number"),
        (("tdp_watts = 300", "tdp_watts = -300"), "outside the plausible range"),
        (("launch_year = 2024", "launch_year = 2024.5"), "launch_year must be a whole number"),
        (("launch_year = 2024", 'launch_year = "2024"'), "launch_year must be a number"),
        (('fields = ["*"]', 'fields = ["*", "hbm"]'), "source names unknown field 'hbm'"),
        (('name = "My Card"', "name = 3"), "name must be a non-empty string"),
        (("[[gpu]]", "extra = 1\n[[gpu]]"), "unknown top-level key(s)"),
    ],
)
def test_schema_refusals_are_one_friendly_sentence(edit: tuple[str, str], message: str) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    with pytest.raises(CatalogError) as err:
        parse_catalog_text(text, "user.toml")
    assert message in str(err.value) and "user.toml" in str(err.value)
    assert "\n" not in str(err.value) and "$.gpu" not in str(err.value)


def test_a_schema_key_for_editors_is_allowed() -> None:
    text = '"$schema" = "https://example.org/gpus.schema.json"\n' + GOOD
    assert parse_catalog_text(text, "user.toml")[0].id == "my-card"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('id = "home"\nvalue = 1.1\nsource = "s"\ndate = "2024-13"', "not a calendar date"),
        ('id = "home"\nvalue = inf\nsource = "s"\ndate = "2024"', "value must be a finite number"),
        ('id = "home"\nvalue = -1\nsource = "s"\ndate = "2024"', "outside [1, 3]"),
        ('id = "home"\nvalue = "1"\nsource = "s"\ndate = "2024"', "value must be a number"),
        ('id = "home"\nvalue = 1.1\nsource = "s"\ndate = "2024"\nx = 1', "unknown key(s) x"),
        ('id = "home"\nsource = "s"\ndate = "2024"', "missing required key 'value'"),
    ],
)
def test_price_rows_are_refused_with_one_sentence(row: str, message: str) -> None:
    with pytest.raises(CatalogError) as err:
        parse_costs_text(f"[[pue]]\n{row}\n", "prices.toml")
    assert message in str(err.value) and "prices.toml, [[pue]] 'home'" in str(err.value)


def test_user_catalog_follows_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUANLI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    if user_catalog_path().parent.parent == tmp_path / "xdg":  # Linux: the XDG directories
        assert user_catalog_path() == tmp_path / "xdg" / "suanli" / "gpus.toml"
    monkeypatch.setenv("SUANLI_CONFIG", str(tmp_path / "mine"))
    assert user_catalog_path() == tmp_path / "mine" / "gpus.toml"
