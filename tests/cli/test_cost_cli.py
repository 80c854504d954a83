"""``suanli cost`` as a user runs it."""

from __future__ import annotations

import json

import pytest

from .test_cli import run


def test_cost_json_and_break_even() -> None:
    out = run(
        "cost",
        "h100",
        "--gpus",
        "8",
        "--price",
        "25000",
        "--years",
        "3",
        "--tokens-per-year",
        "1e10",
        "--api",
        "llama-3.1-8b",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["year"] for r in doc["per_year"]] == [1, 2, 3]
    assert 0 < doc["break_even_utilisation"] < 1
    assert doc["break_even_hours"] == pytest.approx(doc["break_even_utilisation"] * 8760)
    assert doc["totals"]["cheapest"] == "api"  # 10B tokens a year is cheap through an API
    # Renting at the break-even utilisation costs what buying does.
    again = run(
        "cost",
        "h100",
        "--gpus",
        "8",
        "--price",
        "25000",
        "--years",
        "3",
        "--utilisation",
        str(doc["break_even_utilisation"]),
        "--json",
    )
    totals = json.loads(again.stdout)["totals"]
    assert totals["buy_usd"] == pytest.approx(totals["rent_usd"], rel=1e-6)


def test_cost_table() -> None:
    out = run("cost", "rtx4090", "--gpus", "2", "--utilisation", "0.3")
    assert out.returncode == 0, out.stderr
    assert "assumptions" in out.stdout and ("renting" in out.stdout or "buying" in out.stdout)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["h100-pcie-80gb"], "--price"),
        (["h100", "--price", "1", "--region", "mars"], "electricity region"),
        (["h100", "--utilisation", "2"], "Invalid value"),
        ([], "Missing argument"),
    ],
)
def test_cost_bad_input(args: list[str], fragment: str) -> None:
    out = run("cost", *args)
    assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr
