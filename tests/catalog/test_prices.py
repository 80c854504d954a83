"""Purchase prices for the common data-centre cards; spot is never above on-demand."""

from __future__ import annotations

import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu
from suanli.plan.cost.data import cost_data, parse_costs_text

GPUS = bundled_gpus()


@pytest.mark.parametrize("query", ["h100", "h200", "a100", "l40s"])
def test_common_datacenter_cards_have_a_dated_purchase_price(query: str) -> None:
    gpu = find_gpu(query, GPUS)
    assert gpu.get("price_usd") and gpu.get("price_date") and gpu.get("price_kind") == "street"
    assert gpu.source_of("price_usd") is not None


def test_bundled_spot_prices_are_below_on_demand() -> None:
    cloud = cost_data().cloud
    for spot in (r for r in cloud if r.kind == "spot"):
        on_demand = [
            r.usd_per_gpu_hour for r in cloud if r.gpu_id == spot.gpu_id and r.kind == "on-demand"
        ]
        assert not on_demand or spot.usd_per_gpu_hour <= min(on_demand), spot


def _row(provider: str, kind: str, price: float) -> str:
    return f"""
[[cloud]]
gpu_id = "h100-sxm-80gb"
provider = "{provider}"
kind = "{kind}"
usd_per_gpu_hour = {price}
source = "test"
date = "2026-01"
"""


def test_spot_above_same_provider_on_demand_is_rejected() -> None:
    text = _row("P", "on-demand", 2.0) + _row("P", "spot", 2.5)
    with pytest.raises(CatalogError, match=r"h100-sxm-80gb/P/spot.*above the same provider"):
        parse_costs_text(text, "c.toml")


def test_spot_above_cheapest_on_demand_anywhere_is_rejected() -> None:
    text = _row("P", "on-demand", 4.0) + _row("P", "spot", 2.5) + _row("Q", "on-demand", 2.0)
    with pytest.raises(CatalogError, match="above the cheapest on-demand"):
        parse_costs_text(text, "c.toml")


def test_spot_below_on_demand_loads() -> None:
    data = parse_costs_text(_row("P", "on-demand", 2.0) + _row("P", "spot", 1.0), "c.toml")
    assert len(data.cloud) == 2
