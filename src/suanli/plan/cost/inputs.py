"""The figures a cost comparison stands on, each the user's or the data's: purchase price,
server share, power, PUE, electricity and facility prices, rent (on-demand, spot, reserved) and
API prices. Each function settles one group, writes it to the :class:`Ledger` with its source
and raises ValueError, in one sentence, for a bad or missing figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.catalog.gpu import GPU
from suanli.catalog.prices import (
    CATALOG_PROVIDER,
    PER_GPU,
    PER_GPU_HOUR,
    Price,
    buy_price,
    given_price,
    rent_price,
)
from suanli.i18n import N_, Msg
from suanli.plan.cost.checks import check_nonneg, check_number, check_positive
from suanli.plan.cost.data import (
    DEFAULT_REGION,
    ServerOverhead,
    api_prices,
    cloud_prices,
    electricity_entry,
    facility_entry,
    pue_entry,
    row_source,
)
from suanli.plan.cost.ledger import Ledger

#: The largest power usage effectiveness accepted (the web API's bound too); real sites run 1.1-2.
MAX_PUE = 10.0


def purchase_price(gpu: GPU, price_usd: float | None, market: str, ledger: Ledger) -> Price:
    """The purchase price per GPU: ``price_usd`` (given), else the one price resolver's
    (:func:`buy_price`: the catalog's, or the China price with ``market`` "cn" or where the
    catalog has none)."""
    if price_usd is not None:
        price = check_positive("price_usd", price_usd)
        ledger.cash("price_{cur}_per_gpu", price, "{cur}", True)
        return given_price(price, PER_GPU)
    bought = buy_price(gpu, market=market)
    if bought is None:
        raise ValueError(
            N_(
                "the catalog has no purchase price for {gpu}; give one with --price "
                "({currency} per GPU)"
            ).format(gpu=gpu.id, currency=ledger.money.code)
        )
    if bought.provider == CATALOG_PROVIDER:
        source = N_("GPU catalog ({kind}): {source}").format(kind=bought.kind, source=bought.source)
    else:
        source = N_("costs.toml purchase ({kind}): {source}").format(
            kind=bought.kind, source=bought.source
        )
    ledger.cash(
        "price_{cur}_per_gpu",
        bought.usd,
        "{cur}",
        False,
        (source, bought.date, price_notes(bought)),
        bought.cny,
    )
    return bought


def _server_src(row: ServerOverhead) -> tuple[str, ...]:
    return (
        N_("server {server!r}: {source}").format(server=row.id, source=row.source),
        *row_source(row)[1:],
    )


def server_share(row: ServerOverhead, server_usd_per_gpu: float | None, ledger: Ledger) -> float:
    """USD per GPU of the server around it: ``server_usd_per_gpu``, else the server ``row``'s."""
    if server_usd_per_gpu is not None:
        server_usd = check_nonneg("server_usd_per_gpu", server_usd_per_gpu)
        ledger.cash("server_{cur}_per_gpu", server_usd, "{cur}", True)
        return server_usd
    ledger.cash("server_{cur}_per_gpu", row.usd_per_gpu, "{cur}", False, _server_src(row))
    return row.usd_per_gpu


def power_watts(
    gpu: GPU,
    watts_per_gpu: float | None,
    row: ServerOverhead,
    server_watts_per_gpu: float | None,
    ledger: Ledger,
) -> tuple[float, float]:
    """(W per GPU, W of server overhead per GPU): the given figures, else the catalog's TDP and
    the server ``row``'s overhead."""
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
        ledger.note(
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
        ledger.note("watts_per_gpu", gpu_watts, "W", True, ())
    if server_watts_per_gpu is None:
        host_watts = row.watts_per_gpu_overhead
        ledger.note("server_watts_per_gpu", host_watts, "W", False, _server_src(row))
    else:
        host_watts = check_nonneg("server_watts_per_gpu", server_watts_per_gpu)
        ledger.note("server_watts_per_gpu", host_watts, "W", True, ())
    return gpu_watts, host_watts


def pue_ratio(pue: float | str | None, default_id: str, ledger: Ledger) -> float:
    """Facility power over IT power: a number, a PUE row's id, or the form factor's default."""
    if pue is None or isinstance(pue, str):
        row = pue_entry(pue if pue is not None else default_id)
        ledger.note("pue", row.value, f"ratio ({row.id})", False, row_source(row))
        return row.value
    value = check_number("pue", pue)
    if value > MAX_PUE:
        raise ValueError(
            N_("pue must be at most {most:g} (facility power / IT power), got {pue:g}").format(
                most=MAX_PUE, pue=value
            )
        )
    if value < 1.0:
        raise ValueError(
            N_("pue must be at least 1 (facility power / IT power), got {pue:g}").format(pue=value)
        )
    ledger.note("pue", value, "ratio", True, ())
    return value


def kwh_price(usd_per_kwh: float | None, region: str | None, ledger: Ledger) -> float:
    """USD per kWh: ``usd_per_kwh``, else the ``region``'s electricity price."""
    if usd_per_kwh is None:
        elec = electricity_entry(region if region is not None else DEFAULT_REGION)
        ledger.cash(
            "{cur}_per_kwh",
            elec.usd_per_kwh,
            f"{{cur}}/kWh ({elec.region})",
            False,
            row_source(elec),
            elec.cny_per_kwh,
        )
        return elec.usd_per_kwh
    price = check_nonneg("usd_per_kwh", usd_per_kwh)
    if region is not None:
        electricity_entry(region)  # still reject an unknown region name
    ledger.cash("{cur}_per_kwh", price, "{cur}/kWh", True)
    return price


def facility_price(facility_usd_per_kw_year: float | None, facility: str, ledger: Ledger) -> float:
    """USD per kW of IT power a year: the given figure, else the ``facility`` row's."""
    if facility_usd_per_kw_year is None:
        fac = facility_entry(facility)
        ledger.cash(
            "facility_{cur}_per_kw_year",
            fac.usd_per_kw_year,
            f"{{cur}}/kW/year ({fac.id})",
            False,
            row_source(fac),
        )
        return fac.usd_per_kw_year
    price = check_nonneg("facility_usd_per_kw_year", facility_usd_per_kw_year)
    ledger.cash("facility_{cur}_per_kw_year", price, "{cur}/kW/year", True)
    return price


@dataclass(frozen=True, kw_only=True)
class RentPrices:
    """USD per GPU-hour: on-demand, and spot and reserved where known."""

    rent: float
    spot: float | None
    reserved: float | None
    on_demand: Price
    """The on-demand rent with where it comes from (``given`` for the user's)."""


def rent_prices(
    gpu: GPU,
    market: str,
    cloud: str | None,
    rent_usd_per_gpu_hour: float | None,
    spot_usd_per_gpu_hour: float | None,
    reserved_usd_per_gpu_hour: float | None,
    ledger: Ledger,
) -> RentPrices:
    """The rents: the given ones, else the one price resolver's (:func:`rent_price`, the rent
    every view shows): the cheapest rows of ``market`` of providers matching ``cloud``, the
    catalog's figure, the other market. Spot and reserved come from the on-demand price's
    market: the data keeps spot below on-demand within a market, not across them."""
    rate = ledger.money.rate

    def in_usd(price: Price) -> float:
        """A price in USD at the comparison's rate (a CNY row keeps its CNY figure)."""
        return price.cny / rate if price.cny is not None else price.usd

    def rent_note(name: str, unit: str, price: Price) -> None:
        source: str
        if price.provider == CATALOG_PROVIDER:
            source = N_("GPU catalog cloud_usd_per_hour: {source}").format(source=price.source)
        else:
            source = N_("{provider} {kind}: {source}").format(
                provider=price.provider, kind=Msg(price.kind), source=price.source
            )
        ledger.cash(
            name, in_usd(price), unit, False, (source, price.date, price_notes(price)), price.cny
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
        on_demand = rent_price(gpu, market=market, provider=cloud)
        if on_demand is None:
            raise ValueError(
                N_(
                    "no cloud price is known for {gpu}; give one with --rent ({currency} per "
                    "GPU-hour)"
                ).format(gpu=gpu.id, currency=ledger.money.code)
            )
        rent = in_usd(on_demand)
        rent_market = on_demand.market
        rent_note("rent_{cur}_per_gpu_hour", "{cur}/GPU-hour", on_demand)
    else:
        rent = check_nonneg("rent_usd_per_gpu_hour", rent_usd_per_gpu_hour)
        ledger.cash("rent_{cur}_per_gpu_hour", rent, "{cur}/GPU-hour", True)
        on_demand = given_price(rent, PER_GPU_HOUR)
    spot: float | None
    if spot_usd_per_gpu_hour is None:
        spot_price = rent_price(gpu, market=rent_market, provider=cloud, kind="spot")
        spot = in_usd(spot_price) if spot_price is not None else None
        if spot_price is not None:
            rent_note("spot_{cur}_per_gpu_hour", "{cur}/GPU-hour", spot_price)
    else:
        spot = check_nonneg("spot_usd_per_gpu_hour", spot_usd_per_gpu_hour)
        ledger.cash("spot_{cur}_per_gpu_hour", spot, "{cur}/GPU-hour", True)
    reserved: float | None = None
    every_hour = N_("{cur}/GPU-hour, every hour")
    if reserved_usd_per_gpu_hour is None:
        reserved_price = rent_price(gpu, market=rent_market, provider=cloud, kind="reserved")
        if reserved_price is not None:
            reserved = in_usd(reserved_price)
            rent_note("reserved_{cur}_per_gpu_hour", every_hour, reserved_price)
    else:
        reserved = check_nonneg("reserved_usd_per_gpu_hour", reserved_usd_per_gpu_hour)
        ledger.cash("reserved_{cur}_per_gpu_hour", reserved, every_hour, True)
    return RentPrices(rent=rent, spot=spot, reserved=reserved, on_demand=on_demand)


def price_notes(price: Price) -> str:
    """The notes of a price in the assumptions: a row's notes, " (uncertain)" added to an
    uncertain row; "uncertain" alone for an uncertain catalog figure."""
    if price.provider == CATALOG_PROVIDER:
        return "uncertain" if price.uncertain else ""
    return (price.notes + (" (uncertain)" if price.uncertain else "")).strip()


def api_cost_per_year(
    api: str | None,
    api_provider: str | None,
    given_in: float | None,
    given_out: float | None,
    input_tokens_per_year: float,
    output_tokens_per_year: float,
    ledger: Ledger,
) -> float | None:
    """USD a year of the token volume through an API, or None without one: both prices per
    million tokens given, or the cheapest provider of ``api`` for this mix of tokens (only
    ``api_provider`` where given). A price needs a volume and a volume a price."""
    tokens = input_tokens_per_year + output_tokens_per_year
    if api is None and given_in is None and given_out is None:
        if tokens > 0:
            raise ValueError(
                N_("a token volume needs an API price; give --api MODEL or both API prices")
            )
        return None
    if tokens <= 0:
        raise ValueError(
            N_(
                "an API price needs a token volume; give input_tokens_per_year and/or "
                "output_tokens_per_year"
            )
        )
    cny_in: float | None = None
    cny_out: float | None = None
    if given_in is not None or given_out is not None:
        if given_in is None or given_out is None:
            raise ValueError(
                N_("give both API prices, per million input and per million output tokens")
            )
        p_in = check_nonneg("api_usd_per_million_input_tokens", given_in)
        p_out = check_nonneg("api_usd_per_million_output_tokens", given_out)
        api_src: tuple[str, ...] = ("given", "", "")
        api_label = "given"
    else:
        assert api is not None
        rows = api_prices(api)
        if api_provider is not None:
            rows = tuple(r for r in rows if r.provider.lower() == api_provider.lower())
            if not rows:
                providers = ", ".join(r.provider for r in api_prices(api))
                raise ValueError(
                    N_("no price for {api!r} at {provider!r}; known providers: {providers}").format(
                        api=api, provider=api_provider, providers=providers
                    )
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
            p_in, p_out = cny_in / ledger.money.rate, cny_out / ledger.money.rate
        api_src = (f"{row.provider} {row.id}: {row.source}", *row_source(row)[1:])
        api_label = f"{row.id} at {row.provider}"
    given_api = api_src[0] == "given"
    unit = f"{{cur}} ({api_label})"
    ledger.cash("api_{cur}_per_million_input_tokens", p_in, unit, given_api, api_src, cny_in)
    ledger.cash("api_{cur}_per_million_output_tokens", p_out, unit, given_api, api_src, cny_out)
    return (input_tokens_per_year * p_in + output_tokens_per_year * p_out) / 1e6
