"""One price per card in every view (issue 40): ``gpus``, ``gpu``, ``cost``, ``card``, ``plan``,
``capacity``, ``perf``, the CLI's ``--json`` and the resolver all show the same rent and purchase
price, with its provider, kind and date; a price the user gives shows up the same everywhere."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.capacity import CapacityRequest, capacity
from suanli.answers.card import CardRequest, card
from suanli.answers.cost import CostRequest, cost
from suanli.answers.gpus import GpuListRequest, GpuRequest, gpu_detail, gpu_list
from suanli.answers.perf import PerfRequest, perf
from suanli.answers.plan import PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.costs import cost_data
from suanli.catalog.prices import CATALOG_PROVIDER, GIVEN, buy_price, rent_price
from suanli.cli.main import cli

GPUS = bundled_gpus()
#: The small model every speed view runs here (the prices do not depend on it).
MODEL = "qwen2.5-0.5b"
#: The four cards the issue measured, in every view.
FOUR = ("h100-sxm-80gb", "a100-sxm-80gb", "rtx-4090-24gb", "l40s-48gb")


def cheapest_on_demand(gpu_id: str) -> float | None:
    """The cheapest global on-demand row of costs.toml, read from the rows themselves."""
    rows = [
        r.usd_per_gpu_hour
        for r in cost_data().cloud
        if r.gpu_id == gpu_id and r.kind == "on-demand"
    ]
    return min(rows) if rows else None


PRICED = [g for g in GPUS if rent_price(g) is not None]


def rent_of(doc: dict[str, Any]) -> float | None:
    return doc["rent"]["usd"] if doc["rent"] is not None else None


def cost_rent(answer: Any) -> float:
    return next(a.value for a in answer.assumptions if a.name == "rent_usd_per_gpu_hour")


def test_the_data_prices_enough_cards_to_compare() -> None:
    # Every card the issue names has a rent, and most rents come from dated costs.toml rows.
    assert {g.id for g in PRICED} >= set(FOUR)
    assert len(PRICED) >= 15


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.id)
def test_the_resolver_prefers_the_cheapest_costs_row_then_the_catalog(gpu: Any) -> None:
    price = rent_price(gpu)
    row = cheapest_on_demand(gpu.id)
    catalog = gpu.get("cloud_usd_per_hour")
    if row is not None:
        assert price is not None and price.usd == row and price.kind == "on-demand"
        assert price.provider != CATALOG_PROVIDER and price.date
    elif catalog is not None:
        assert price is not None and price.usd == catalog
        assert (price.provider, price.kind) == (CATALOG_PROVIDER, "list")
        assert price.date == gpu.get("cloud_price_date")


def test_the_h100_rent_is_the_cheapest_row_not_the_catalog_snapshot() -> None:
    # The issue: $3.78/h (the catalog's Lambda snapshot) in plan and gpu, $2.49/h in cost.
    h100 = find_gpu("h100", GPUS)
    assert h100.get("cloud_usd_per_hour") == 3.78
    price = rent_price(h100)
    assert price is not None and price.usd == 2.49 and price.date == "2026"


def test_a_users_catalog_entry_is_their_price() -> None:
    h100 = find_gpu("h100", GPUS)
    mine = dataclasses.replace(
        h100, figures={**h100.figures, "cloud_usd_per_hour": 9.5}, origin="my-gpus.toml"
    )
    price = rent_price(mine)
    assert price is not None and price.usd == 9.5 and price.provider == CATALOG_PROVIDER


def test_buy_price_catalog_first_china_row_first_in_cn() -> None:
    gpu = find_gpu("4090", GPUS)
    assert buy_price(gpu) is not None and buy_price(gpu).usd == gpu.get("price_usd")  # type: ignore[union-attr]
    rows = {r.gpu_id: r for r in cost_data().purchase}
    if gpu.id in rows:
        cn = buy_price(gpu, market="cn")
        assert cn is not None and cn.cny == rows[gpu.id].cny_per_gpu


def test_given_prices_are_refused_when_negative() -> None:
    gpu = find_gpu("h100", GPUS)
    with pytest.raises(ValueError, match="rent must not be negative"):
        rent_price(gpu, override_usd_per_hour=-1)
    with pytest.raises(ValueError, match="price must be a number"):
        buy_price(gpu, override_usd_per_gpu=float("nan"))


def test_gpus_gpu_cost_and_plan_show_the_same_rent_for_every_priced_card() -> None:
    listed = {d["id"]: d for d in gpu_list(GpuListRequest()).to_json()["gpus"]}
    trained = {r.gpu: r for r in plan(PlanRequest(MODEL, task="lora", max_gpus=1)).rows}
    served = {r.gpu: r for r in plan(PlanRequest(MODEL, task="infer", max_gpus=1)).rows}
    for gpu in PRICED:
        want = rent_price(gpu)
        assert want is not None
        assert rent_of(listed[gpu.id]) == want.usd, gpu.id
        assert listed[gpu.id]["rent"]["provider"] == want.provider
        assert rent_of(gpu_detail(GpuRequest(gpu.id)).to_json()) == want.usd, gpu.id
        assert cost_rent(cost(CostRequest(gpu.id, gpus=1, price=1000))) == want.usd, gpu.id
        for row in (trained[gpu.id], served[gpu.id]):
            assert row.rent == want, gpu.id
            layout = row.layout
            if layout is not None and layout.usd_per_hour is not None:
                assert layout.usd_per_hour == pytest.approx(want.usd * layout.gpus), gpu.id


@pytest.mark.parametrize("gpu_id", FOUR)
def test_card_capacity_and_perf_show_the_same_rent(gpu_id: str) -> None:
    gpu = find_gpu(gpu_id, GPUS)
    want = rent_price(gpu)
    assert want is not None
    assert card(CardRequest(gpu_id, presets=(MODEL,))).rent == want
    sim = capacity(CapacityRequest(model=MODEL, gpu=gpu_id, rate=2, requests=20))
    assert sim.rent == want
    assert sim.to_json()["usd_per_gpu_hour"] == want.usd
    doc = perf(PerfRequest(MODEL, WorkRequest(task="lora"), gpu=gpu_id, tokens=1e8)).to_json()
    gpu_hours = doc["time_to_train_s"] / 3600 * doc["gpus"]
    assert doc["cost_usd"] == pytest.approx(gpu_hours * want.usd)


def test_buy_price_is_the_same_in_gpus_gpu_cost_card_and_plan() -> None:
    listed = {d["id"]: d for d in gpu_list(GpuListRequest()).to_json()["gpus"]}
    rendering = plan(PlanRequest(scenario="rendering-video", gpus=FOUR)).rows
    for gpu_id in FOUR:
        gpu = find_gpu(gpu_id, GPUS)
        want = buy_price(gpu)
        assert want is not None
        assert listed[gpu_id]["buy"]["usd"] == want.usd
        assert gpu_detail(GpuRequest(gpu_id)).buy == want
        answer = cost(CostRequest(gpu_id, gpus=1))
        shown = next(a.value for a in answer.assumptions if a.name == "price_usd_per_gpu")
        assert shown == want.usd and answer.buy == want
        assert card(CardRequest(gpu_id, presets=(MODEL,))).buy == want
        row = next(r for r in rendering if r.gpu == gpu_id)
        assert row.price_usd == want.usd and row.buy == want


def test_a_given_rent_shows_up_the_same_everywhere() -> None:
    rent = 1.23
    gpu_id = "l40s-48gb"
    seen = [
        gpu_detail(GpuRequest(gpu_id, rent=rent)).rent,
        card(CardRequest(gpu_id, presets=(MODEL,), rent=rent)).rent,
        cost(CostRequest(gpu_id, gpus=1, rent=rent)).rent,
        capacity(CapacityRequest(model=MODEL, gpu=gpu_id, rate=2, requests=20, price=rent)).rent,
        *(r.rent for r in plan(PlanRequest(MODEL, gpus=(gpu_id, "h100"), rent=rent)).rows),
    ]
    for price in seen:
        assert price is not None and price.usd == rent and price.kind == GIVEN
    assert len({json.dumps(dataclasses.asdict(p)) for p in seen if p is not None}) == 1


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("gpu_id", ["h100", "a100"])
def test_cli_json_agrees_with_the_resolver(gpu_id: str) -> None:
    want = rent_price(find_gpu(gpu_id, GPUS))
    assert want is not None
    assert rent_of(cli_json("gpu", gpu_id)) == want.usd
    doc = cli_json("cost", gpu_id, "--gpus", "1")
    assert rent_of(doc) == want.usd
    assert next(a["value"] for a in doc["assumptions"] if a["name"] == "rent_usd_per_gpu_hour") == (
        want.usd
    )
    rows = cli_json("plan", MODEL, "--gpu", gpu_id, "--max-gpus", "1")["rows"]
    assert [r["rent"]["usd"] for r in rows] == [want.usd]
    given = cli_json("plan", MODEL, "--gpu", gpu_id, "--max-gpus", "1", "--rent", "0.5")["rows"]
    assert given[0]["rent"]["kind"] == "given" and given[0]["rent"]["usd"] == 0.5
    assert rent_of(cli_json("card", gpu_id, "--model", MODEL, "--rent", "0.5")) == 0.5


def test_the_web_api_shows_the_same_rents() -> None:
    testclient = pytest.importorskip("fastapi.testclient")
    from suanli.web.app import create_app

    with testclient.TestClient(create_app(allow_hub=False)) as client:
        listed = {g["id"]: g for g in client.get("/api/gpus").json()["gpus"]}
        body = {"model": MODEL, "gpu": list(FOUR), "max_gpus": 1}
        rows = {r["gpu"]: r for r in client.post("/api/plan", json=body).json()["rows"]}
        given = client.post("/api/card", json={"gpu": "h100", "models": [MODEL], "rent": 0.5})
        costed = client.post("/api/cost", json={"gpu": "l40s", "gpus": 1}).json()
    for gpu_id in FOUR:
        want = rent_price(find_gpu(gpu_id, GPUS))
        assert want is not None
        assert rent_of(listed[gpu_id]) == want.usd
        assert rows[gpu_id]["rent"] == dataclasses.asdict(want)
    assert given.status_code == 200 and given.json()["rent"]["kind"] == GIVEN
    assert rent_of(costed) == rent_price(find_gpu("l40s", GPUS)).usd  # type: ignore[union-attr]
