"""The cost model: buy vs rent (vs spot, reserved, API) cost over a period, and the break-even.

Buying is the purchase of the GPUs and their server share, energy (power x hours x PUE x
electricity price) and facility cost, less resale; renting is paid per busy GPU-hour; the API per
token. The formulas are in docs/cost.md.
"""

from __future__ import annotations

import math

from suanli.catalog.gpu import GPU
from suanli.i18n import N_
from suanli.plan.cost.checks import check_fraction, check_nonneg, check_positive
from suanli.plan.cost.data import (
    CURRENCIES,
    DEFAULT_REGION_CN,
    FORM_FACTOR_DEFAULTS,
    exchange_rate,
    row_source,
    server_entry,
)
from suanli.plan.cost.inputs import (
    api_cost_per_year,
    facility_price,
    kwh_price,
    power_watts,
    pue_ratio,
    purchase_price,
    rent_prices,
    server_share,
)
from suanli.plan.cost.ledger import Ledger, Money
from suanli.plan.cost.result import (
    CostComparison,
    CostTotals,
    YearRow,
    cost_verdict,
    in_currency,
)

#: Hours in a (non-leap) year.
HOURS_PER_YEAR = 8760.0
#: The shortest horizon compared: one day, in years.
MIN_YEARS = 24.0 / HOURS_PER_YEAR


def tokens_per_year(
    tokens_per_s: float, utilisation: float, hours_per_year: float = 8760.0
) -> float:
    """Tokens a year at ``tokens_per_s`` while busy a fraction ``utilisation`` of the hours."""
    check_nonneg("tokens_per_s", tokens_per_s)
    check_fraction("utilisation", utilisation)
    check_positive("hours_per_year", hours_per_year)
    return tokens_per_s * 3600.0 * utilisation * hours_per_year


# ---------------------------------------------------------------------------------------------
# Currency


def check_currency(currency: str) -> str:
    """``currency`` in lower case; ValueError in one sentence unless it is usd or cny."""
    code = currency.strip().lower() if isinstance(currency, str) else currency
    if code not in CURRENCIES:
        raise ValueError(
            N_("unknown currency {currency!r}; use usd or cny").format(currency=currency)
        )
    return str(code)


def usd_cny_rate(usd_cny: float | None = None) -> tuple[float, tuple[str, str, str]]:
    """The exchange rate (CNY per USD) and its (source, date, notes): ``usd_cny`` when given,
    else the bundled ``[[fx]]`` row."""
    if usd_cny is not None:
        rate = check_positive("usd_cny", usd_cny)
        if not 1.0 <= rate <= 20.0:
            raise ValueError(
                N_("usd_cny must be CNY per USD, between 1 and 20, got {rate:g}").format(rate=rate)
            )
        return rate, ("given", "", "")
    row = exchange_rate()
    return row.cny_per_usd, row_source(row)


# ---------------------------------------------------------------------------------------------
# The comparison


def compare_costs(
    gpu: GPU,
    gpus: int = 1,
    years: float = 3.0,
    utilisation: float = 1.0,
    *,
    hours_per_year: float = HOURS_PER_YEAR,
    price_usd: float | None = None,
    server: str | None = None,
    server_usd_per_gpu: float | None = None,
    resale_fraction: float = 0.0,
    watts_per_gpu: float | None = None,
    server_watts_per_gpu: float | None = None,
    idle_power_fraction: float = 0.0,
    pue: float | str | None = None,
    region: str | None = None,
    usd_per_kwh: float | None = None,
    facility: str | None = None,
    facility_usd_per_kw_year: float | None = None,
    rent_usd_per_gpu_hour: float | None = None,
    spot_usd_per_gpu_hour: float | None = None,
    reserved_usd_per_gpu_hour: float | None = None,
    input_tokens_per_year: float = 0.0,
    output_tokens_per_year: float = 0.0,
    api: str | None = None,
    api_provider: str | None = None,
    api_usd_per_million_input_tokens: float | None = None,
    api_usd_per_million_output_tokens: float | None = None,
    currency: str = "usd",
    usd_cny: float | None = None,
    cloud: str | None = None,
    market: str | None = None,
) -> CostComparison:
    """Cost of buying ``gpus`` GPUs vs renting them (and vs an API) over ``years``.

    ``utilisation`` is the fraction of the ``hours_per_year`` the GPUs are busy: rent is paid for
    busy hours only, owned GPUs draw power while busy (and ``idle_power_fraction`` of it while
    idle), while purchase, resale and facility costs do not depend on it. Defaults come from the
    catalog (purchase price, TDP, cloud price) and from costs.toml by the GPU's form factor
    (server, PUE, facility); every value used is listed in ``assumptions`` with its source.

    Money arguments are in USD, as their names say. ``currency="cny"`` adds every amount of the
    result in CNY (the ``..._cny`` fields) at ``usd_cny`` CNY per USD (default: the bundled,
    dated rate), lists money assumptions in CNY and prefers the China market: Chinese cloud rows
    (CNY), China purchase prices, and electricity region ``cn``. ``market`` ("global" or "cn")
    sets the market alone (default: ``cn`` with CNY or a ``cn...`` region, else ``global``);
    a market without a price for the GPU falls back to the other one. ``cloud`` keeps only the
    cloud rows whose provider contains it (e.g. "autodl"), in either market.
    Raises ValueError, in one sentence, for a bad input or a missing figure.
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(
            N_("gpus must be a whole number of at least 1, got {gpus!r}").format(gpus=gpus)
        )
    years = check_positive("years", years)
    if years > 50:
        raise ValueError(N_("years must be at most 50, got {years:g}").format(years=years))
    if years < MIN_YEARS:
        # a vanishing horizon leaves every cost at zero and the verdict meaningless
        raise ValueError(
            N_("years must be at least one day ({least:.4f}), got {years:g}").format(
                least=MIN_YEARS, years=years
            )
        )
    utilisation = check_fraction("utilisation", utilisation)
    hours_per_year = check_positive("hours_per_year", hours_per_year)
    if hours_per_year > 8784:
        raise ValueError(
            N_("hours_per_year must be at most 8784 (a leap year), got {hours:g}").format(
                hours=hours_per_year
            )
        )
    resale_fraction = check_fraction("resale_fraction", resale_fraction)
    idle_power_fraction = check_fraction("idle_power_fraction", idle_power_fraction)
    input_tokens_per_year = check_nonneg("input_tokens_per_year", input_tokens_per_year)
    output_tokens_per_year = check_nonneg("output_tokens_per_year", output_tokens_per_year)
    currency = check_currency(currency)
    rate, rate_src = usd_cny_rate(usd_cny)
    if market is None:
        market = "cn" if currency == "cny" or (region or "").lower().startswith("cn") else "global"
    elif market not in ("global", "cn"):
        raise ValueError(N_("unknown market {market!r}; use global or cn").format(market=market))
    if region is None and market == "cn":
        region = DEFAULT_REGION_CN

    form = FORM_FACTOR_DEFAULTS.get(gpu.form_factor, FORM_FACTOR_DEFAULTS["pcie"])
    ledger = Ledger(money=Money(currency=currency, rate=rate))
    ledger.add("gpu", gpu.id, N_("catalog id"))
    ledger.add("gpus", gpus, "GPUs")
    ledger.add("years", years, "years")
    ledger.add("utilisation", utilisation, N_("fraction of hours busy"))
    if currency == "cny" or usd_cny is not None:
        ledger.note("usd_cny", rate, N_("CNY per USD"), usd_cny is not None, rate_src)
    ledger.note(
        "hours_per_year",
        hours_per_year,
        "h",
        hours_per_year != HOURS_PER_YEAR,
        (N_("365 days x 24 h"), "", ""),
    )

    bought = purchase_price(gpu, price_usd, market, ledger)
    price = bought.usd
    server_row = server_entry(server if server is not None else form[0])
    server_usd = server_share(server_row, server_usd_per_gpu, ledger)
    ledger.note(
        "resale_fraction",
        resale_fraction,
        N_("fraction of purchase"),
        resale_fraction != 0.0,
        (N_("default: no resale value assumed"), "", ""),
    )
    gpu_watts, host_watts = power_watts(
        gpu, watts_per_gpu, server_row, server_watts_per_gpu, ledger
    )
    ledger.note(
        "idle_power_fraction",
        idle_power_fraction,
        N_("fraction of full power drawn while idle"),
        idle_power_fraction != 0.0,
        (N_("default: no power drawn while idle (a simplification; see docs/cost.md)"), "", ""),
    )
    pue_value = pue_ratio(pue, form[1], ledger)
    kwh = kwh_price(usd_per_kwh, region, ledger)
    fac_price = facility_price(
        facility_usd_per_kw_year, facility if facility is not None else form[2], ledger
    )
    rents = rent_prices(
        gpu,
        market,
        cloud,
        rent_usd_per_gpu_hour,
        spot_usd_per_gpu_hour,
        reserved_usd_per_gpu_hour,
        ledger,
    )
    rent, spot, reserved = rents.rent, rents.spot, rents.reserved
    api_year = api_cost_per_year(
        api,
        api_provider,
        api_usd_per_million_input_tokens,
        api_usd_per_million_output_tokens,
        input_tokens_per_year,
        output_tokens_per_year,
        ledger,
    )
    if input_tokens_per_year + output_tokens_per_year > 0:
        ledger.add("input_tokens_per_year", input_tokens_per_year, "tokens")
        ledger.add("output_tokens_per_year", output_tokens_per_year, "tokens")

    # Arithmetic (docs/cost.md).
    it_kw = gpus * (gpu_watts + host_watts) / 1000.0
    duty = utilisation + idle_power_fraction * (1.0 - utilisation)
    energy_kwh_year = it_kw * hours_per_year * duty * pue_value
    electricity_year = energy_kwh_year * kwh
    facility_year = it_kw * fac_price
    capex = gpus * (price + server_usd)
    resale = resale_fraction * capex
    busy_hours_year = gpus * utilisation * hours_per_year
    rent_year = busy_hours_year * rent
    spot_year = busy_hours_year * spot if spot is not None else None
    reserved_year = gpus * hours_per_year * reserved if reserved is not None else None

    def buy_at(t: float) -> float:
        credit = resale if t >= years else 0.0
        return capex + t * (electricity_year + facility_year) - credit

    def times(t: float, per_year: float | None) -> float | None:
        return t * per_year if per_year is not None else None

    marks = [min(float(k), years) for k in range(1, math.ceil(years) + 1)]
    per_year = tuple(
        YearRow(
            year=t,
            buy_cumulative_usd=buy_at(t),
            rent_cumulative_usd=t * rent_year,
            api_cumulative_usd=times(t, api_year),
            spot_cumulative_usd=times(t, spot_year),
            reserved_cumulative_usd=times(t, reserved_year),
        )
        for t in marks
    )
    last = per_year[-1]
    options: dict[str, float | None] = {
        "buy": last.buy_cumulative_usd,
        "rent": last.rent_cumulative_usd,
        "spot": last.spot_cumulative_usd,
        "reserved": last.reserved_cumulative_usd,
        "api": last.api_cumulative_usd,
    }
    priced = {k: v for k, v in options.items() if v is not None}
    cheapest = min(priced, key=lambda k: priced[k])
    totals = CostTotals(
        buy_usd=last.buy_cumulative_usd,
        rent_usd=last.rent_cumulative_usd,
        api_usd=last.api_cumulative_usd,
        spot_usd=last.spot_cumulative_usd,
        reserved_usd=last.reserved_cumulative_usd,
        capex_usd=capex,
        resale_usd=resale,
        electricity_usd=years * electricity_year,
        facility_usd=years * facility_year,
        energy_kwh=years * energy_kwh_year,
        it_power_kw=it_kw,
        busy_gpu_hours=years * busy_hours_year,
        cheapest=cheapest,
    )

    # Break-even: buy(u) = fixed + variable * u, rent(u) = rent_per_u * u.
    energy_cost_full = years * it_kw * hours_per_year * pue_value * kwh
    fixed = capex - resale + years * facility_year + energy_cost_full * idle_power_fraction
    variable = energy_cost_full * (1.0 - idle_power_fraction)
    rent_per_u = years * gpus * hours_per_year * rent
    break_even: float | None = None
    if rent_per_u > variable:
        u_star = fixed / (rent_per_u - variable)
        if u_star <= 1.0:
            break_even = u_star
    else:
        u_star = math.inf
    break_even_hours = break_even * hours_per_year if break_even is not None else None

    cny_rate = rate if currency == "cny" else None
    if cny_rate is not None:
        per_year = tuple(in_currency(row, cny_rate) for row in per_year)
        totals = in_currency(totals, cny_rate)
    verdict = cost_verdict(
        years,
        utilisation,
        totals,
        break_even,
        break_even_hours,
        u_star,
        rent_per_u,
        variable,
        usd_cny=cny_rate,
    )
    return CostComparison(
        gpu_id=gpu.id,
        gpus=gpus,
        years=years,
        utilisation=utilisation,
        hours_per_year=hours_per_year,
        per_year=per_year,
        totals=totals,
        break_even_utilisation=break_even,
        break_even_hours=break_even_hours,
        verdict=verdict,
        assumptions=tuple(ledger.items),
        currency=currency.upper(),
        usd_cny=cny_rate,
        rent=rents.on_demand,
        buy=bought,
    )
