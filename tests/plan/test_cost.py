"""The cost model: its data loads with sources, its arithmetic matches hand-computed figures, and
the guidance falls out (steady load -> buy, low utilisation -> rent, tiny volume -> API)."""

from __future__ import annotations

import json
import math
import re

import pytest

from suanli.catalog import GPU, CatalogError, bundled_gpus, find_gpu
from suanli.catalog.loader import NON_GPU_DATA_FILES
from suanli.plan.cost import (
    CLOUD_KINDS,
    FORM_FACTOR_DEFAULTS,
    Assumption,
    CostComparison,
    api_prices,
    cheapest_cloud,
    cloud_prices,
    compare_costs,
    cost_data,
    cost_report,
    electricity_entry,
    facility_entry,
    parse_costs_text,
    pue_entry,
    server_entry,
    tokens_per_year,
)

H100 = "h100-sxm-80gb"


def gpu(name: str) -> GPU:
    return find_gpu(name, bundled_gpus())


# --- data ----------------------------------------------------------------------------------------


def test_every_row_has_a_source_and_a_date() -> None:
    data = cost_data()
    rows = data.rows()
    assert len(data.pue) >= 4 and len(data.electricity) >= 3 and len(data.cloud) >= 40
    assert data.server and data.facility and len(data.api) >= 5
    for row in rows:
        assert row.source.strip(), row
        assert re.fullmatch(r"(19|20)\d\d(-\d\d(-\d\d)?)?", row.date), row


def test_required_ids_are_present() -> None:
    assert {p.id for p in cost_data().pue} >= {"hyperscale", "typical-colo", "enterprise", "home"}
    assert {e.region for e in cost_data().electricity} >= {"us", "eu", "cn"}
    assert {s.id for s in cost_data().server} >= {"8-gpu-hgx", "pcie-4gpu", "workstation"}
    for server, pue, facility in FORM_FACTOR_DEFAULTS.values():
        server_entry(server)
        pue_entry(pue)
        facility_entry(facility)


def test_cloud_rows_name_catalog_gpus_and_valid_kinds() -> None:
    ids = {g.id for g in bundled_gpus()}
    for row in cost_data().cloud:
        assert row.gpu_id in ids
        assert row.kind in CLOUD_KINDS
        assert 0.05 < row.usd_per_gpu_hour < 20


def test_figures_copied_from_the_reference_sheet() -> None:
    assert pue_entry("enterprise").value == 1.58
    assert pue_entry("typical-colo").value == 1.42
    assert electricity_entry("cn").usd_per_kwh == 0.088
    assert electricity_entry("us").usd_per_kwh == pytest.approx(0.1150)
    lambda_h100 = [r for r in cloud_prices(H100) if r.provider == "Lambda"]
    assert [(r.usd_per_gpu_hour, r.date) for r in lambda_h100] == [(3.78, "2026-05-07")]
    # costs.csv: "H100 PCIe 1x on-demand, Lambda, 2.86 USD/GPU-hr, 2026-05-07" (techbytes.app)
    lambda_pcie = [r for r in cloud_prices("h100-pcie-80gb") if r.provider == "Lambda"]
    assert [(r.usd_per_gpu_hour, r.date) for r in lambda_pcie] == [(2.86, "2026-05-07")]
    aws = [r for r in cloud_prices(H100) if r.provider.startswith("AWS")]
    assert aws[0].usd_per_gpu_hour == pytest.approx(98.32 / 8, abs=0.005)


def test_costs_file_is_not_read_as_a_gpu_file() -> None:
    assert "costs.toml" in NON_GPU_DATA_FILES
    assert len(bundled_gpus()) >= 40


def test_lookups() -> None:
    assert pue_entry("hyperscale").value == 1.1
    assert pue_entry("home").value == 1.0
    prices = cloud_prices(H100, "on-demand")
    assert [p.usd_per_gpu_hour for p in prices] == sorted(p.usd_per_gpu_hour for p in prices)
    cheapest = cheapest_cloud(H100)
    assert cheapest is not None and cheapest.usd_per_gpu_hour == prices[0].usd_per_gpu_hour
    assert cheapest_cloud(H100, "spot").kind == "spot"
    assert cheapest_cloud("h800-sxm-80gb") is None
    assert api_prices("llama-3.1-8b")[0].provider == "DeepInfra"
    with pytest.raises(ValueError, match="unknown electricity region 'mars'; use one of us"):
        electricity_entry("mars")
    with pytest.raises(ValueError, match="unknown cloud price kind"):
        cloud_prices(H100, "preemptible")
    with pytest.raises(ValueError, match="unknown API model"):
        api_prices("gpt-17")


# --- validation of the file ----------------------------------------------------------------------

_GOOD_PUE = '[[pue]]\nid = "x"\nvalue = 1.2\nsource = "s"\ndate = "2024-01"\n'


def test_parse_accepts_a_minimal_file() -> None:
    data = parse_costs_text(_GOOD_PUE, "mine.toml")
    assert data.pue[0].value == 1.2 and data.cloud == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_GOOD_PUE + "colour = 'red'\n", r"mine\.toml, \[\[pue\]\] 'x': unknown key\(s\) colour"),
        (_GOOD_PUE.replace("source", "sauce"), "unknown key"),
        ("[[pues]]\nid = 'x'\n", r"mine\.toml: unknown table\(s\) pues"),
        (_GOOD_PUE.replace('source = "s"\n', ""), "missing required key 'source'"),
        (_GOOD_PUE.replace('"2024-01"', '"Jan 2024"'), "date 'Jan 2024' must be"),
        (_GOOD_PUE.replace("1.2", "0.5"), r"value = 0\.5 is outside"),
        (_GOOD_PUE.replace("1.2", '"1.2"'), "value must be a number"),
        (_GOOD_PUE + _GOOD_PUE, r"duplicate \[\[pue\]\] x"),
        (
            '[[cloud]]\ngpu_id = "h100-sxm-80gb"\nprovider = "p"\nkind = "hourly"\n'
            'usd_per_gpu_hour = 2.0\nsource = "s"\ndate = "2026"\n',
            "kind must be one of on-demand, reserved, spot",
        ),
        (
            '[[cloud]]\ngpu_id = "h999"\nprovider = "p"\nkind = "spot"\n'
            'usd_per_gpu_hour = 2.0\nsource = "s"\ndate = "2026"\n',
            "gpu_id 'h999' is not in the GPU catalog",
        ),
        ("[[pue]\n", "not valid TOML"),
    ],
)
def test_parse_rejects_bad_files(text: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        parse_costs_text(text, "mine.toml", [g.id for g in bundled_gpus()])


# --- arithmetic ----------------------------------------------------------------------------------


def test_hand_computed_example() -> None:
    """8 GPUs x $25,000, 700 W, PUE 1.3, $0.08/kWh, 3 years, 100% busy, rent $2.50, spot $2."""
    result = compare_costs(
        gpu(H100),
        gpus=8,
        years=3,
        utilisation=1.0,
        price_usd=25_000,
        server_usd_per_gpu=0,
        watts_per_gpu=700,
        server_watts_per_gpu=0,
        pue=1.3,
        usd_per_kwh=0.08,
        facility_usd_per_kw_year=0,
        rent_usd_per_gpu_hour=2.50,
        spot_usd_per_gpu_hour=2.00,  # given, so the example does not depend on the price snapshot
    )
    # Energy: 8 GPUs x 0.7 kW x 8760 h x 3 years x PUE 1.3 = 191,318.4 kWh; x $0.08 = $15,305.472.
    energy_kwh = 8 * 0.7 * 8760 * 3 * 1.3
    assert energy_kwh == pytest.approx(191_318.4)
    electricity = energy_kwh * 0.08
    assert electricity == pytest.approx(15_305.472)
    t = result.totals
    assert t.energy_kwh == pytest.approx(191_318.4)
    assert t.electricity_usd == pytest.approx(15_305.472)
    assert t.capex_usd == pytest.approx(200_000.0)  # 8 x 25,000
    assert t.buy_usd == pytest.approx(215_305.472)  # capex + electricity
    assert t.rent_usd == pytest.approx(525_600.0)  # 8 x 8760 h x 3 years x $2.50
    assert t.it_power_kw == pytest.approx(5.6)
    assert t.busy_gpu_hours == pytest.approx(210_240.0)
    assert [r.year for r in result.per_year] == [1, 2, 3]
    assert result.per_year[0].buy_cumulative_usd == pytest.approx(200_000 + 5_101.824)
    assert result.per_year[1].rent_cumulative_usd == pytest.approx(350_400.0)
    # Break-even: 200,000 = (525,600 - 15,305.472) u  ->  u = 0.391927...
    assert result.break_even_utilisation == pytest.approx(200_000 / 510_294.528)
    assert result.break_even_hours == pytest.approx(8760 * 200_000 / 510_294.528)
    assert result.verdict.startswith("buying is cheaper above 39% utilisation (3,433 h per GPU")
    assert t.cheapest == "buy"


def test_every_term_of_the_buy_side() -> None:
    """Server share, host power, facility, resale and idle power, at 50% utilisation."""
    result = compare_costs(
        gpu(H100),
        gpus=8,
        years=3,
        utilisation=0.5,
        price_usd=25_000,
        server_usd_per_gpu=5_000,
        resale_fraction=0.1,
        watts_per_gpu=700,
        server_watts_per_gpu=100,
        idle_power_fraction=0.25,
        pue=1.3,
        usd_per_kwh=0.08,
        facility_usd_per_kw_year=1_000,
        rent_usd_per_gpu_hour=2.50,
        spot_usd_per_gpu_hour=1.00,
        reserved_usd_per_gpu_hour=1.50,
        input_tokens_per_year=2e9,
        output_tokens_per_year=1e9,
        api_usd_per_million_input_tokens=0.10,
        api_usd_per_million_output_tokens=0.30,
    )
    # IT power 8 x (700 + 100) W = 6.4 kW; duty 0.5 + 0.25 x 0.5 = 0.625.
    # Energy per year 6.4 x 8760 x 0.625 x 1.3 = 45,552 kWh -> $3,644.16; facility 6.4 x 1000.
    # Capex 8 x 30,000 = 240,000; resale 24,000 at the end.
    t = result.totals
    assert t.it_power_kw == pytest.approx(6.4)
    assert t.energy_kwh == pytest.approx(3 * 45_552.0)
    assert t.electricity_usd == pytest.approx(3 * 3_644.16)
    assert t.facility_usd == pytest.approx(3 * 6_400.0)
    assert t.capex_usd == pytest.approx(240_000.0)
    assert t.resale_usd == pytest.approx(24_000.0)
    assert t.buy_usd == pytest.approx(240_000 + 3 * (3_644.16 + 6_400) - 24_000)  # 246,132.48
    assert result.per_year[0].buy_cumulative_usd == pytest.approx(250_044.16)  # no resale yet
    assert t.rent_usd == pytest.approx(8 * 0.5 * 8760 * 2.50 * 3)  # 262,800: busy hours only
    assert t.spot_usd == pytest.approx(8 * 0.5 * 8760 * 1.00 * 3)  # 105,120
    assert t.reserved_usd == pytest.approx(8 * 8760 * 1.50 * 3)  # 315,360: every hour
    assert t.api_usd == pytest.approx(3 * (2_000 * 0.10 + 1_000 * 0.30))  # 1,500
    assert result.per_year[1].api_cumulative_usd == pytest.approx(1_000.0)
    assert t.cheapest == "api"
    # Break-even: fixed = 216,000 + 19,200 + 0.25 E, variable = 0.75 E, E = 3 x 6.4 x 8760 x
    # 1.3 x 0.08 = 17,491.968; rent per unit utilisation = 525,600.
    e_full = 3 * 6.4 * 8760 * 1.3 * 0.08
    u_star = (216_000 + 19_200 + 0.25 * e_full) / (525_600 - 0.75 * e_full)
    assert result.break_even_utilisation == pytest.approx(u_star)


def test_fractional_years() -> None:
    result = compare_costs(
        gpu(H100),
        gpus=1,
        years=2.5,
        price_usd=20_000,
        server_usd_per_gpu=0,
        server_watts_per_gpu=0,
        pue=1.0,
        usd_per_kwh=0.1,
        facility_usd_per_kw_year=0,
        rent_usd_per_gpu_hour=2.0,
    )
    assert [r.year for r in result.per_year] == [1, 2, 2.5]
    assert result.totals.rent_usd == pytest.approx(2.5 * 8760 * 2.0)
    assert result.totals.buy_usd == pytest.approx(20_000 + 2.5 * 0.7 * 8760 * 0.1)
    assert result.as_dict()["per_year"][2]["year"] == 2.5


@pytest.mark.parametrize("idle", [0.0, 0.3])
@pytest.mark.parametrize("resale", [0.0, 0.2])
def test_break_even_makes_buy_equal_rent(idle: float, resale: float) -> None:
    kwargs = dict(gpus=8, years=3, price_usd=25_000, resale_fraction=resale)
    kwargs["idle_power_fraction"] = idle
    first = compare_costs(gpu(H100), utilisation=1.0, **kwargs)
    u_star = first.break_even_utilisation
    assert u_star is not None and 0 < u_star < 1
    again = compare_costs(gpu(H100), utilisation=u_star, **kwargs)
    assert again.totals.buy_usd == pytest.approx(again.totals.rent_usd, rel=1e-9)
    assert first.break_even_hours == pytest.approx(u_star * 8760)
    below = compare_costs(gpu(H100), utilisation=u_star * 0.9, **kwargs)
    above = compare_costs(gpu(H100), utilisation=min(1.0, u_star * 1.1), **kwargs)
    assert below.totals.rent_usd < below.totals.buy_usd
    assert above.totals.buy_usd < above.totals.rent_usd


# --- guidance ------------------------------------------------------------------------------------


def test_steady_full_time_load_favours_buying() -> None:
    result = compare_costs(gpu(H100), gpus=8, years=3, utilisation=1.0, price_usd=25_000)
    assert result.totals.buy_usd < result.totals.rent_usd
    assert "at 100% buying saves" in result.verdict


def test_low_utilisation_favours_renting() -> None:
    result = compare_costs(gpu(H100), gpus=8, years=3, utilisation=0.1, price_usd=25_000)
    assert result.totals.rent_usd < result.totals.buy_usd
    assert "at 10% renting saves" in result.verdict
    assert result.break_even_utilisation is not None and result.break_even_utilisation > 0.1


def test_tiny_token_volume_favours_the_api() -> None:
    result = compare_costs(
        gpu(H100),
        gpus=1,
        years=1,
        utilisation=0.05,
        price_usd=25_000,
        api="llama-3.1-8b",
        input_tokens_per_year=5e6,
        output_tokens_per_year=1e6,
    )
    assert result.totals.cheapest == "api"
    assert result.totals.api_usd == pytest.approx(5 * 0.03 + 1 * 0.05)  # DeepInfra, cheapest
    assert "the API is cheapest" in result.verdict


def test_huge_token_volume_makes_the_api_dearest() -> None:
    # A busy 8B model on one H100 serves thousands of tokens/s; 5,000 tok/s all year is
    # 1.58e11 tokens: $34.7k at Bedrock's 0.22 per million, above a year of rent ($21.8k).
    volume = tokens_per_year(5_000, 1.0)
    assert volume == pytest.approx(5_000 * 3600 * 8760)
    result = compare_costs(
        gpu(H100),
        gpus=1,
        years=1,
        price_usd=25_000,
        api="llama-3.1-8b",
        api_provider="amazon bedrock",
        output_tokens_per_year=volume,
    )
    assert result.totals.api_usd == pytest.approx(volume / 1e6 * 0.22)
    assert result.totals.rent_usd < result.totals.api_usd


def test_rent_never_pays_back_when_break_even_is_above_one() -> None:
    result = compare_costs(gpu(H100), gpus=8, years=1, price_usd=60_000, rent_usd_per_gpu_hour=1.0)
    assert result.break_even_utilisation is None and result.break_even_hours is None
    assert result.verdict.startswith("renting is cheaper at any utilisation over 1 year")
    assert "would need" in result.verdict


def test_rent_below_energy_cost_never_pays_back() -> None:
    result = compare_costs(gpu(H100), gpus=1, price_usd=25_000, rent_usd_per_gpu_hour=0.05)
    assert result.break_even_utilisation is None
    assert "energy cost per busy hour" in result.verdict


# --- defaults and their sources ------------------------------------------------------------------


def _assumption(result: CostComparison, name: str) -> Assumption:
    return next(a for a in result.assumptions if a.name == name)


def test_datacentre_defaults_come_from_the_data_with_sources() -> None:
    result = compare_costs(gpu(H100), gpus=8, price_usd=25_000)
    expect = {
        "server_usd_per_gpu": server_entry("8-gpu-hgx").usd_per_gpu,
        "server_watts_per_gpu": server_entry("8-gpu-hgx").watts_per_gpu_overhead,
        "pue": pue_entry("typical-colo").value,
        "usd_per_kwh": electricity_entry("us").usd_per_kwh,
        "facility_usd_per_kw_year": facility_entry("colocation-us").usd_per_kw_year,
        "rent_usd_per_gpu_hour": cheapest_cloud(H100).usd_per_gpu_hour,
        "spot_usd_per_gpu_hour": cheapest_cloud(H100, "spot").usd_per_gpu_hour,
        "watts_per_gpu": 700.0,
    }
    for name, value in expect.items():
        a = _assumption(result, name)
        assert a.value == value, name
        assert a.source and a.source != "given", name
        assert a.date, name
    assert _assumption(result, "price_usd_per_gpu").source == "given"
    assert _assumption(result, "resale_fraction").value == 0.0


def test_consumer_card_uses_catalog_price_and_home_defaults() -> None:
    card = gpu("rtx 4090")
    result = compare_costs(card, gpus=2, utilisation=0.5)
    price = _assumption(result, "price_usd_per_gpu")
    assert price.value == 1599 and "GPU catalog (launch-msrp)" in price.source
    assert price.date == "2022-10"
    assert _assumption(result, "pue").value == 1.0
    assert _assumption(result, "facility_usd_per_kw_year").value == 0
    assert (
        _assumption(result, "server_usd_per_gpu").value == server_entry("workstation").usd_per_gpu
    )
    cheapest = min(r.usd_per_gpu_hour for r in cloud_prices(card.id, "on-demand"))
    assert _assumption(result, "rent_usd_per_gpu_hour").value == cheapest


def test_rent_falls_back_to_the_catalog_price() -> None:
    card = gpu("a100-pcie-40gb")
    assert cheapest_cloud(card.id) is None
    result = compare_costs(card, price_usd=10_000)
    rent = _assumption(result, "rent_usd_per_gpu_hour")
    assert rent.value == card.get("cloud_usd_per_hour")
    assert rent.source.startswith("GPU catalog cloud_usd_per_hour")


def test_named_ids_override_the_form_factor_defaults() -> None:
    result = compare_costs(
        gpu(H100),
        price_usd=25_000,
        pue="hyperscale",
        region="cn",
        server="pcie-4gpu",
        facility="none",
    )
    assert _assumption(result, "pue").value == 1.1
    assert _assumption(result, "usd_per_kwh").value == 0.088
    assert _assumption(result, "server_usd_per_gpu").value == server_entry("pcie-4gpu").usd_per_gpu
    assert result.totals.facility_usd == 0


def test_missing_price_asks_for_price() -> None:
    # h100-sxm-80gb has a dated street price since schema 2; the PCIe card has none.
    with pytest.raises(
        ValueError, match="no purchase price for h100-pcie-80gb; give one with --price"
    ):
        compare_costs(gpu("h100-pcie-80gb"))


def test_missing_rent_asks_for_rent() -> None:
    with pytest.raises(ValueError, match=r"no cloud price is known for h800-sxm-80gb.*--rent"):
        compare_costs(gpu("h800-sxm-80gb"), price_usd=25_000)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"utilisation": 1.2}, "utilisation must be between 0 and 1"),
        ({"utilisation": -0.1}, "utilisation must be between 0 and 1"),
        ({"price_usd": -5}, "price_usd must be positive"),
        ({"gpus": 0}, "gpus must be a whole number of at least 1"),
        ({"gpus": 2.5}, "gpus must be a whole number"),
        ({"years": 0}, "years must be positive"),
        ({"years": -1}, "years must be positive"),
        ({"hours_per_year": 9000}, "hours_per_year must be at most 8784"),
        ({"resale_fraction": 1.5}, "resale_fraction must be between 0 and 1"),
        ({"pue": 0.9}, "pue must be at least 1"),
        ({"pue": "datacentre"}, "unknown PUE id 'datacentre'"),
        ({"region": "mars"}, "unknown electricity region 'mars'"),
        ({"region": "mars", "usd_per_kwh": 0.1}, "unknown electricity region 'mars'"),
        ({"server": "rack"}, "unknown server id 'rack'"),
        ({"facility": "moon"}, "unknown facility id 'moon'"),
        ({"usd_per_kwh": -0.1}, "usd_per_kwh must not be negative"),
        ({"rent_usd_per_gpu_hour": -1}, "rent_usd_per_gpu_hour must not be negative"),
        ({"watts_per_gpu": float("nan")}, "watts_per_gpu must be a number"),
        ({"output_tokens_per_year": 1e9}, "a token volume needs an API price"),
        ({"api": "llama-3.1-8b"}, "an API price needs a token volume"),
        ({"api": "gpt-17", "output_tokens_per_year": 1}, "unknown API model 'gpt-17'"),
        (
            {"api": "llama-3.1-8b", "api_provider": "nobody", "output_tokens_per_year": 1},
            "no price for 'llama-3.1-8b' at 'nobody'",
        ),
        (
            {"api_usd_per_million_input_tokens": 0.1, "output_tokens_per_year": 1},
            "give both API prices",
        ),
    ],
)
def test_bad_inputs_raise_value_error(kwargs: dict, message: str) -> None:
    base = {"price_usd": 25_000}
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        compare_costs(gpu(H100), **base)


def test_tokens_per_year_checks_its_inputs() -> None:
    assert tokens_per_year(100, 0.5) == pytest.approx(100 * 3600 * 0.5 * 8760)
    with pytest.raises(ValueError, match="utilisation"):
        tokens_per_year(100, 2)


# --- report --------------------------------------------------------------------------------------


def test_cost_report_is_json_ready() -> None:
    report = cost_report(
        "h100",
        gpus=8,
        years=3,
        utilisation=0.7,
        price_usd=25_000,
        api="llama-3.3-70b",
        output_tokens_per_year=1e10,
    )
    assert {
        "per_year",
        "totals",
        "break_even_utilisation",
        "break_even_hours",
        "verdict",
        "assumptions",
    } <= set(report)
    assert report["inputs"]["gpu"] == H100
    text = json.dumps(report)
    assert json.loads(text)["verdict"] == report["verdict"]
    assert [r["year"] for r in report["per_year"]] == [1, 2, 3]
    assert report["per_year"][-1]["buy_cumulative_usd"] == report["totals"]["buy_usd"]
    for a in report["assumptions"]:
        assert set(a) == {"name", "value", "unit", "source", "date", "notes"}
        assert a["source"]
    assert math.isclose(report["break_even_hours"], report["break_even_utilisation"] * 8760)
