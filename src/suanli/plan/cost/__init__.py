"""Buy, rent or call an API: what GPU work costs over a period, and where the break-even lies.

The data (PUE, electricity prices, cloud snapshots, server overheads, colocation, API prices) is
in ``suanli/catalog/data/costs.toml``, validated on load like the GPU catalog; every row carries
a source and a date. :func:`compare_costs` is pure arithmetic on its arguments, with defaults
drawn from that file and the GPU catalog; :func:`cost_report` returns the same result as a
JSON-ready document for the CLI. Money is in USD (with CNY amounts added for
``currency="cny"``), energy in kWh, power in W. The method and every
formula are in docs/cost.md.
"""

from __future__ import annotations

from suanli.catalog.costs_schema import CLOUD_KINDS
from suanli.plan.cost.data import (
    COSTS_FILE,
    CURRENCIES,
    DEFAULT_REGION,
    FORM_FACTOR_DEFAULTS,
    ApiPrice,
    CloudPrice,
    CostData,
    Electricity,
    ExchangeRate,
    Facility,
    Pue,
    Purchase,
    ServerOverhead,
    api_prices,
    cheapest_cloud,
    cloud_prices,
    cost_data,
    electricity_entry,
    exchange_rate,
    facility_entry,
    parse_costs_text,
    pue_entry,
    purchase_entry,
    server_entry,
)
from suanli.plan.cost.model import HOURS_PER_YEAR, compare_costs, tokens_per_year
from suanli.plan.cost.report import cost_report
from suanli.plan.cost.result import Assumption, CostComparison, CostTotals, YearRow

__all__ = [
    "CLOUD_KINDS",
    "COSTS_FILE",
    "CURRENCIES",
    "DEFAULT_REGION",
    "FORM_FACTOR_DEFAULTS",
    "HOURS_PER_YEAR",
    "ApiPrice",
    "Assumption",
    "CloudPrice",
    "CostComparison",
    "CostData",
    "CostTotals",
    "Electricity",
    "ExchangeRate",
    "Facility",
    "Pue",
    "Purchase",
    "ServerOverhead",
    "YearRow",
    "api_prices",
    "cheapest_cloud",
    "cloud_prices",
    "compare_costs",
    "cost_data",
    "cost_report",
    "electricity_entry",
    "exchange_rate",
    "facility_entry",
    "parse_costs_text",
    "pue_entry",
    "purchase_entry",
    "server_entry",
    "tokens_per_year",
]
