"""``cost`` in CNY: the exchange rate, CNY inputs, the China-market rows and the target commands."""

from __future__ import annotations

import json
import re

import pytest

from suanli.answers.cost import CostRequest, cost
from suanli.plan.cost import cost_data
from suanli.plan.cost.data import cheapest_cloud, cloud_prices, exchange_rate, parse_costs_text

from ..cli.test_cli import run

RATE = exchange_rate().cny_per_usd


def test_the_exchange_rate_is_dated_and_sourced() -> None:
    fx = exchange_rate()
    assert 5 < fx.cny_per_usd < 9 and fx.source and re.fullmatch(r"20\d\d-\d\d-\d\d", fx.date)


def test_every_usd_amount_equals_the_cny_one_over_the_rate() -> None:
    answer = cost(CostRequest("h100", price=25000, currency="cny", utilisation=0.5))
    assert answer.currency == "CNY" and answer.usd_cny == RATE
    totals = answer.totals
    for key in ("buy", "rent", "capex", "electricity", "facility"):
        usd, cny = getattr(totals, f"{key}_usd"), getattr(totals, f"{key}_cny")
        assert usd == pytest.approx(cny / RATE)
    for row in answer.per_year:
        assert row.buy_cumulative_usd == pytest.approx((row.buy_cumulative_cny or 0) / RATE)
        assert row.rent_cumulative_usd == pytest.approx((row.rent_cumulative_cny or 0) / RATE)
    point = answer.curve[-1]
    assert point.buy_cumulative_usd == pytest.approx((point.buy_cumulative_cny or 0) / RATE)
    assert "¥" in answer.verdict and "$" not in answer.verdict


def test_cny_inputs_are_read_in_cny() -> None:
    in_cny = cost(
        CostRequest("h100", price=180000, rent=15, currency="cny", usd_cny=7.0, region="us")
    )
    in_usd = cost(CostRequest("h100", price=180000 / 7.0, rent=15 / 7.0, region="us"))
    assert in_cny.totals.buy_usd == pytest.approx(in_usd.totals.buy_usd)
    assert in_cny.totals.rent_usd == pytest.approx(in_usd.totals.rent_usd)
    assert in_cny.totals.capex_cny == pytest.approx(8 * 180000 + 8 * 5900 * 7.0)
    given = {a.name: a.value for a in in_cny.assumptions if a.source == "given"}
    assert given["price_cny_per_gpu"] == 180000 and given["rent_cny_per_gpu_hour"] == 15
    assert given["usd_cny"] == 7.0


def test_usd_answers_keep_their_keys() -> None:
    doc = cost(CostRequest("h100", price=25000)).to_json()
    assert doc["currency"] == "USD" and "usd_cny" not in doc
    assert not any(k.endswith("_cny") for k in doc["totals"])
    assert not any(k.endswith("_cny") for k in doc["per_year"][0])


def test_cn_rent_rows_load_dated_in_cny() -> None:
    rows = cost_data().cloud_cn
    assert len(rows) >= 8
    for row in rows:
        assert row.currency == "cny" and row.market == "cn" and row.cny_per_gpu_hour
        assert row.usd_per_gpu_hour == pytest.approx(row.cny_per_gpu_hour / RATE)
        assert row.source and re.fullmatch(r"20\d\d(-\d\d(-\d\d)?)?", row.date), row
        assert "read" in row.source or "recalled" in row.source
    assert {r.gpu_id for r in rows} >= {"rtx-4090d-24gb", "rtx-4090-24gb", "h20-96gb"}
    # The China market is kept apart from the global (USD) one.
    assert all(r.currency == "usd" for r in cost_data().cloud)
    assert cloud_prices("rtx-4090-24gb", "on-demand", "cn")[0].provider.startswith("算家云")


def test_cny_answers_prefer_the_china_market_and_region() -> None:
    answer = cost(CostRequest("rtx4090", gpus=1, currency="cny"))
    src = {a.name: a for a in answer.assumptions}
    assert src["rent_cny_per_gpu_hour"].value == 1.24  # the cheapest Chinese cloud row
    assert src["price_cny_per_gpu"].value == 18000  # the China street price
    assert src["cny_per_kwh"].unit.endswith("(cn)")
    # USD keeps the global market.
    usd = {a.name: a for a in cost(CostRequest("rtx4090", gpus=1)).assumptions}
    cheapest = cheapest_cloud("rtx-4090-24gb")
    assert cheapest is not None and cheapest.currency == "usd"
    assert usd["rent_usd_per_gpu_hour"].value == cheapest.usd_per_gpu_hour


def test_cloud_and_province_selection() -> None:
    answer = cost(CostRequest("rtx4090", gpus=1, cloud="autodl", region="cn-guangdong"))
    src = {a.name: a for a in answer.assumptions}
    assert src["rent_usd_per_gpu_hour"].source.startswith("AutoDL")
    assert src["rent_usd_per_gpu_hour"].value == pytest.approx(1.98 / RATE)
    assert src["usd_per_kwh"].unit.endswith("(cn-guangdong)")
    with pytest.raises(ValueError, match="no cloud provider matching 'nowhere'"):
        cost(CostRequest("rtx4090", cloud="nowhere"))


def test_cny_rows_need_a_rate_and_keep_spot_below_on_demand() -> None:
    row = (
        '[[cloud]]\ngpu_id = "x"\nprovider = "P"\nkind = "{kind}"\ncny_per_gpu_hour = {price}\n'
        'source = "s"\ndate = "2026"\n'
    )
    fx = '[[fx]]\nid = "usd-cny"\ncny_per_usd = 7.0\nsource = "s"\ndate = "2026"\n'
    with pytest.raises(Exception, match="needs the exchange rate"):
        parse_costs_text(row.format(kind="on-demand", price=2.0))
    data = parse_costs_text(fx + row.format(kind="on-demand", price=2.0))
    assert data.cloud_cn[0].usd_per_gpu_hour == pytest.approx(2.0 / 7.0)
    with pytest.raises(Exception, match="spot 3 CNY/GPU-hour is above"):
        text = fx + row.format(kind="on-demand", price=2.0) + row.format(kind="spot", price=3.0)
        parse_costs_text(text)


def test_cn_api_prices_in_cny() -> None:
    answer = cost(
        CostRequest(
            "h100",
            price=25000,
            api="deepseek-v3",
            tokens_per_year=1e9,
            gpu_tokens_per_s=1000,
            currency="cny",
        )
    )
    src = {a.name: a for a in answer.assumptions}
    assert src["api_cny_per_million_output_tokens"].value == 8.0
    assert answer.totals.api_cny == pytest.approx(3 * 1000 * 8.0)


@pytest.mark.parametrize("currency", ["eur", "", "CNYX"])
def test_unknown_currency_is_a_value_error(currency: str) -> None:
    with pytest.raises(ValueError, match=r"^unknown currency .*; use usd or cny$"):
        cost(CostRequest("h100", currency=currency))


def test_unknown_currency_is_one_sentence_exit_2() -> None:
    out = run("cost", "h100", "--price", "1", "--currency", "eur")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].endswith("unknown currency 'eur'; use usd or cny")


@pytest.mark.parametrize(
    "args", [["h20", "--gpus", "8", "--currency", "cny"], ["4090d", "--currency", "cny"]]
)
def test_target_commands_answer_in_cny(args: list[str]) -> None:
    out = run("cost", *args)
    assert out.returncode == 0, out.stderr
    assert "¥" in out.stdout and "CNY" in out.stdout and "$" not in out.stdout
    doc = json.loads(run("cost", *args, "--json").stdout)
    assert doc["currency"] == "CNY" and doc["totals"]["buy_cny"] > 0
    dated = {a["name"]: a["date"] for a in doc["assumptions"]}
    assert dated["price_cny_per_gpu"] and dated["rent_cny_per_gpu_hour"] == "2026"
