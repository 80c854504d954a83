"""The cost model: buy vs rent (vs spot, reserved, API) cost over a period, and the break-even.

Buying is the purchase of the GPUs and their server share, energy (power x hours x PUE x
electricity price) and facility cost, less resale; renting is paid per busy GPU-hour; the API per
token. The formulas are in docs/cost.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from suanli.catalog.gpu import GPU
from suanli.i18n import N_
from suanli.plan.cost.checks import check_fraction, check_nonneg, check_number, check_positive
from suanli.plan.cost.data import (
    CURRENCIES,
    DEFAULT_REGION,
    DEFAULT_REGION_CN,
    FORM_FACTOR_DEFAULTS,
    CloudPrice,
    api_prices,
    cheapest_cloud,
    cloud_prices,
    electricity_entry,
    exchange_rate,
    facility_entry,
    pue_entry,
    purchase_entry,
    row_source,
    server_entry,
)
from suanli.plan.cost.result import (
    Assumption,
    CostComparison,
    CostTotals,
    YearRow,
    cost_verdict,
    in_currency,
)

#: Hours in a (non-leap) year.
HOURS_PER_YEAR = 8760.0


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


def _sig(value: float) -> float:
    """``value`` to 10 significant digits: a CNY figure taken to USD and back reads as given."""
    return float(f"{value:.10g}")


@dataclass(frozen=True)
class _Money:
    """How the comparison shows money: its currency and the rate from USD."""

    currency: str
    rate: float

    @property
    def code(self) -> str:
        return self.currency.upper()

    def show(self, usd: float, cny: float | None = None) -> float:
        """An amount in the shown currency: a CNY figure as it is when shown in CNY, a USD one
        converted (to 10 significant digits)."""
        if self.currency == "cny":
            return cny if cny is not None else _sig(usd * self.rate)
        return usd if cny is None else cny / self.rate

    def origin(self, usd: float, cny: float | None) -> str:
        """A note saying the amount was converted, or "" when it is shown in its own currency."""
        if usd == 0:
            return ""
        if self.currency == "cny" and cny is None:
            return N_("converted from {amount:,.4g} USD at {rate:g} CNY/USD").format(
                amount=usd, rate=self.rate
            )
        if self.currency == "usd" and cny is not None:
            return N_("converted from {amount:,.4g} CNY at {rate:g} CNY/USD").format(
                amount=cny, rate=self.rate
            )
        return ""


def _with(notes: str, extra: str) -> str:
    return "; ".join(part for part in (notes, extra) if part)


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
    money = _Money(currency, rate)
    if market is None:
        market = "cn" if currency == "cny" or (region or "").lower().startswith("cn") else "global"
    elif market not in ("global", "cn"):
        raise ValueError(N_("unknown market {market!r}; use global or cn").format(market=market))
    if region is None and market == "cn":
        region = DEFAULT_REGION_CN

    form = FORM_FACTOR_DEFAULTS.get(gpu.form_factor, FORM_FACTOR_DEFAULTS["pcie"])
    assumptions: list[Assumption] = [
        Assumption("gpu", gpu.id, N_("catalog id"), "given"),
        Assumption("gpus", gpus, "GPUs", "given"),
        Assumption("years", years, "years", "given"),
        Assumption("utilisation", utilisation, N_("fraction of hours busy"), "given"),
    ]

    def note(name: str, value: float | str, unit: str, given: bool, src: tuple[str, ...]) -> None:
        if given:
            assumptions.append(Assumption(name, value, unit, "given"))
        else:
            assumptions.append(Assumption(name, value, unit, *src))

    def cash(
        name: str,
        usd: float,
        unit: str,
        given: bool,
        src: tuple[str, ...] = (),
        cny: float | None = None,
    ) -> None:
        """A money assumption, shown in the answer's currency: ``name`` and ``unit`` have
        "{cur}" where the currency goes."""
        shown = money.show(usd, cny)
        label = name.format(cur=money.currency)
        where = unit.format(cur=money.code)
        if given:
            assumptions.append(Assumption(label, shown, where, "given"))
            return
        source, date, notes = (*src, "", "", "")[:3]
        notes = _with(notes, money.origin(usd, cny))
        assumptions.append(Assumption(label, shown, where, source, date, notes))

    if currency == "cny" or usd_cny is not None:
        note("usd_cny", rate, N_("CNY per USD"), usd_cny is not None, rate_src)

    note(
        "hours_per_year",
        hours_per_year,
        "h",
        hours_per_year != HOURS_PER_YEAR,
        (N_("365 days x 24 h"), "", ""),
    )

    # Purchase price per GPU.
    if price_usd is None:
        catalog_price = gpu.get("price_usd")
        bought = purchase_entry(gpu.id)
        if bought is not None and (catalog_price is None or market == "cn"):
            price = bought.usd_per_gpu
            cash(
                "price_{cur}_per_gpu",
                price,
                "{cur}",
                False,
                (
                    N_("costs.toml purchase ({kind}): {source}").format(
                        kind=bought.kind, source=bought.source
                    ),
                    *row_source(bought)[1:],
                ),
                bought.cny_per_gpu,
            )
        elif catalog_price is None:
            raise ValueError(
                N_(
                    "the catalog has no purchase price for {gpu}; give one with --price "
                    "({currency} per GPU)"
                ).format(gpu=gpu.id, currency=money.code)
            )
        else:
            price = float(catalog_price)
            src = gpu.source_of("price_usd")
            kind = gpu.get("price_kind") or "price"
            cash(
                "price_{cur}_per_gpu",
                price,
                "{cur}",
                False,
                (
                    N_("GPU catalog ({kind}): {source}").format(
                        kind=kind, source=src.ref if src else gpu.origin
                    ),
                    str(gpu.get("price_date") or ""),
                    "uncertain" if "price_usd" in gpu.uncertain else "",
                ),
            )
    else:
        price = check_positive("price_usd", price_usd)
        cash("price_{cur}_per_gpu", price, "{cur}", True)

    # Server share (price and power).
    server_row = server_entry(server if server is not None else form[0])
    if server_usd_per_gpu is None:
        server_usd = server_row.usd_per_gpu
        cash(
            "server_{cur}_per_gpu",
            server_usd,
            "{cur}",
            False,
            (
                N_("server {server!r}: {source}").format(
                    server=server_row.id, source=server_row.source
                ),
                *row_source(server_row)[1:],
            ),
        )
    else:
        server_usd = check_nonneg("server_usd_per_gpu", server_usd_per_gpu)
        cash("server_{cur}_per_gpu", server_usd, "{cur}", True)
    note(
        "resale_fraction",
        resale_fraction,
        N_("fraction of purchase"),
        resale_fraction != 0.0,
        (N_("default: no resale value assumed"), "", ""),
    )

    if watts_per_gpu is None:
        tdp = gpu.get("tdp_watts")
        if tdp is None:
            raise ValueError(
                N_("the catalog has no TDP for {gpu}; give the power per GPU with --watts").format(
                    gpu=gpu.id
                )
            )
        gpu_watts = float(tdp)
        src = gpu.source_of("tdp_watts")
        note(
            "watts_per_gpu",
            gpu_watts,
            "W",
            False,
            (
                N_("GPU catalog tdp_watts: {source}").format(source=src.ref if src else gpu.origin),
                src.date if src else "",
                "",
            ),
        )
    else:
        gpu_watts = check_positive("watts_per_gpu", watts_per_gpu)
        note("watts_per_gpu", gpu_watts, "W", True, ())
    if server_watts_per_gpu is None:
        host_watts = server_row.watts_per_gpu_overhead
        note(
            "server_watts_per_gpu",
            host_watts,
            "W",
            False,
            (
                N_("server {server!r}: {source}").format(
                    server=server_row.id, source=server_row.source
                ),
                *row_source(server_row)[1:],
            ),
        )
    else:
        host_watts = check_nonneg("server_watts_per_gpu", server_watts_per_gpu)
        note("server_watts_per_gpu", host_watts, "W", True, ())
    note(
        "idle_power_fraction",
        idle_power_fraction,
        N_("fraction of full power drawn while idle"),
        idle_power_fraction != 0.0,
        (N_("default: no power drawn while idle (a simplification; see docs/cost.md)"), "", ""),
    )

    # Energy price and PUE.
    if pue is None or isinstance(pue, str):
        pue_row = pue_entry(pue if pue is not None else form[1])
        pue_value = pue_row.value
        note("pue", pue_value, f"ratio ({pue_row.id})", False, row_source(pue_row))
    else:
        pue_value = check_number("pue", pue)
        if pue_value < 1.0:
            raise ValueError(
                N_("pue must be at least 1 (facility power / IT power), got {pue:g}").format(
                    pue=pue_value
                )
            )
        note("pue", pue_value, "ratio", True, ())
    if usd_per_kwh is None:
        elec = electricity_entry(region if region is not None else DEFAULT_REGION)
        kwh_price = elec.usd_per_kwh
        cash(
            "{cur}_per_kwh",
            kwh_price,
            f"{{cur}}/kWh ({elec.region})",
            False,
            row_source(elec),
            elec.cny_per_kwh,
        )
    else:
        kwh_price = check_nonneg("usd_per_kwh", usd_per_kwh)
        if region is not None:
            electricity_entry(region)  # still reject an unknown region name
        cash("{cur}_per_kwh", kwh_price, "{cur}/kWh", True)
    if facility_usd_per_kw_year is None:
        fac = facility_entry(facility if facility is not None else form[2])
        fac_price = fac.usd_per_kw_year
        cash(
            "facility_{cur}_per_kw_year",
            fac_price,
            f"{{cur}}/kW/year ({fac.id})",
            False,
            row_source(fac),
        )
    else:
        fac_price = check_nonneg("facility_usd_per_kw_year", facility_usd_per_kw_year)
        cash("facility_{cur}_per_kw_year", fac_price, "{cur}/kW/year", True)

    # Rent: the preferred market first, the other one when it has no price for this GPU.
    other = "global" if market == "cn" else "cn"

    def pick(kind: str, markets: tuple[str, ...]) -> CloudPrice | None:
        for where in markets:
            row = cheapest_cloud(gpu.id, kind, where, cloud)
            if row is not None:
                return row
        return None

    def row_usd(row: CloudPrice) -> float:
        """A cloud row in USD at the comparison's rate (a CNY row keeps its CNY figure)."""
        if row.cny_per_gpu_hour is not None:
            return row.cny_per_gpu_hour / rate
        return row.usd_per_gpu_hour

    def rent_note(name: str, unit: str, row: CloudPrice) -> None:
        cash(
            name,
            row_usd(row),
            unit,
            False,
            (f"{row.provider} {row.kind}: {row.source}", *row_source(row)[1:]),
            row.cny_per_gpu_hour,
        )

    if cloud is not None and not cloud_prices(gpu.id, None, "all", cloud):
        known = sorted({r.provider for r in cloud_prices(gpu.id, None, "all")})
        raise ValueError(
            N_(
                "no cloud provider matching {cloud!r} has a price for {gpu}; "
                "known providers: {providers}"
            ).format(cloud=cloud, gpu=gpu.id, providers=", ".join(known))
            if known
            else N_(
                "no cloud provider matching {cloud!r} has a price for {gpu}; give one with --rent"
            ).format(cloud=cloud, gpu=gpu.id)
        )
    rent_market = market
    if rent_usd_per_gpu_hour is None:
        rent_row = pick("on-demand", (market, other))
        if rent_row is not None:
            rent = row_usd(rent_row)
            rent_market = rent_row.market
            rent_note("rent_{cur}_per_gpu_hour", "{cur}/GPU-hour", rent_row)
        else:
            catalog_rent = gpu.get("cloud_usd_per_hour") if cloud is None else None
            if catalog_rent is None:
                raise ValueError(
                    N_(
                        "no cloud price is known for {gpu}; give one with --rent "
                        "({currency} per GPU-hour)"
                    ).format(gpu=gpu.id, currency=money.code)
                )
            rent = float(catalog_rent)
            src = gpu.source_of("cloud_usd_per_hour")
            cash(
                "rent_{cur}_per_gpu_hour",
                rent,
                "{cur}/GPU-hour",
                False,
                (
                    N_("GPU catalog cloud_usd_per_hour: {source}").format(
                        source=src.ref if src else N_("GPU catalog")
                    ),
                    str(gpu.get("cloud_price_date")),
                    "uncertain" if "cloud_usd_per_hour" in gpu.uncertain else "",
                ),
            )
            rent_market = "global"
    else:
        rent = check_nonneg("rent_usd_per_gpu_hour", rent_usd_per_gpu_hour)
        cash("rent_{cur}_per_gpu_hour", rent, "{cur}/GPU-hour", True)
    # Spot and reserved come from the rent's market: the data keeps spot below on-demand
    # within a market, not across them.
    spot: float | None
    if spot_usd_per_gpu_hour is None:
        spot_row = pick("spot", (rent_market,))
        spot = row_usd(spot_row) if spot_row is not None else None
        if spot_row is not None:
            rent_note("spot_{cur}_per_gpu_hour", "{cur}/GPU-hour", spot_row)
    else:
        spot = check_nonneg("spot_usd_per_gpu_hour", spot_usd_per_gpu_hour)
        cash("spot_{cur}_per_gpu_hour", spot, "{cur}/GPU-hour", True)
    reserved: float | None = None
    if reserved_usd_per_gpu_hour is None:
        reserved_row = pick("reserved", (rent_market,))
        if reserved_row is not None:
            reserved = row_usd(reserved_row)
            rent_note("reserved_{cur}_per_gpu_hour", N_("{cur}/GPU-hour, every hour"), reserved_row)
    else:
        reserved = check_nonneg("reserved_usd_per_gpu_hour", reserved_usd_per_gpu_hour)
        cash("reserved_{cur}_per_gpu_hour", reserved, N_("{cur}/GPU-hour, every hour"), True)

    # API.
    api_year: float | None = None
    tokens = input_tokens_per_year + output_tokens_per_year
    given_in = api_usd_per_million_input_tokens
    given_out = api_usd_per_million_output_tokens
    if api is not None or given_in is not None or given_out is not None:
        if tokens <= 0:
            raise ValueError(
                N_(
                    "an API price needs a token volume; give input_tokens_per_year and/or "
                    "output_tokens_per_year"
                )
            )
        p_in: float
        p_out: float
        if given_in is not None or given_out is not None:
            if given_in is None or given_out is None:
                raise ValueError(
                    N_("give both API prices, per million input and per million output tokens")
                )
            p_in = check_nonneg("api_usd_per_million_input_tokens", given_in)
            p_out = check_nonneg("api_usd_per_million_output_tokens", given_out)
            api_src: tuple[str, str, str] = ("given", "", "")
            api_label = "given"
            cny_in: float | None = None
            cny_out: float | None = None
        else:
            assert api is not None
            rows = api_prices(api)
            if api_provider is not None:
                rows = tuple(r for r in rows if r.provider.lower() == api_provider.lower())
                if not rows:
                    providers = ", ".join(r.provider for r in api_prices(api))
                    raise ValueError(
                        N_(
                            "no price for {api!r} at {provider!r}; known providers: {providers}"
                        ).format(api=api, provider=api_provider, providers=providers)
                    )
            row = min(
                rows,
                key=lambda r: (
                    input_tokens_per_year * r.usd_per_million_input_tokens
                    + output_tokens_per_year * r.usd_per_million_output_tokens
                ),
            )
            cny_in = row.cny_per_million_input_tokens
            cny_out = row.cny_per_million_output_tokens
            p_in, p_out = row.usd_per_million_input_tokens, row.usd_per_million_output_tokens
            if cny_in is not None and cny_out is not None:
                p_in, p_out = cny_in / rate, cny_out / rate
            api_src = (f"{row.provider} {row.id}: {row.source}", *row_source(row)[1:])
            api_label = f"{row.id} at {row.provider}"
        given_api = api_src[0] == "given"
        cash(
            "api_{cur}_per_million_input_tokens",
            p_in,
            f"{{cur}} ({api_label})",
            given_api,
            api_src,
            cny_in,
        )
        cash(
            "api_{cur}_per_million_output_tokens",
            p_out,
            f"{{cur}} ({api_label})",
            given_api,
            api_src,
            cny_out,
        )
        api_year = (input_tokens_per_year * p_in + output_tokens_per_year * p_out) / 1e6
    elif tokens > 0:
        raise ValueError(
            N_("a token volume needs an API price; give --api MODEL or both API prices")
        )
    if tokens > 0:
        assumptions.append(
            Assumption("input_tokens_per_year", input_tokens_per_year, "tokens", "given")
        )
        assumptions.append(
            Assumption("output_tokens_per_year", output_tokens_per_year, "tokens", "given")
        )

    # Arithmetic (docs/cost.md).
    it_kw = gpus * (gpu_watts + host_watts) / 1000.0
    duty = utilisation + idle_power_fraction * (1.0 - utilisation)
    energy_kwh_year = it_kw * hours_per_year * duty * pue_value
    electricity_year = energy_kwh_year * kwh_price
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
    energy_cost_full = years * it_kw * hours_per_year * pue_value * kwh_price
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
        assumptions=tuple(assumptions),
        currency=currency.upper(),
        usd_cny=cny_rate,
    )
