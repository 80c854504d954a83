"""``suanli cost GPU``: buy vs rent vs API over the years, with the break-even."""

from __future__ import annotations

import re

import click

from suanli.catalog.prices import Price
from suanli.cli.prices import price_note, priced
from suanli.cli.render import print_json, print_table
from suanli.cli.types import FloatRange, IntRange
from suanli.i18n import N_, _, sentence


@click.command(
    "cost",
    help=N_(
        "Buy vs rent vs API for GPU over --years: cumulative cost per year, break-even "
        "utilisation and hours, and the verdict. Every default is dated data with a source.\n\n"
        "Example: suanli cost h100 --gpus 8 --price 25000 --utilisation 0.6 --years 3; "
        "in CNY with Chinese cloud prices: suanli cost 4090d --gpus 2 --currency cny"
    ),
)
@click.argument("gpu_name", metavar="GPU")
@click.option("--gpus", type=IntRange(min=1), default=8, show_default=True)
@click.option("--years", type=FloatRange(min=0, min_open=True), default=3.0, show_default=True)
@click.option(
    "--utilisation",
    "--utilization",
    "utilisation",
    type=FloatRange(0, 1),
    default=1.0,
    show_default=True,
    help=N_("Share of the hours the GPUs are busy."),
)
@click.option(
    "--price",
    type=FloatRange(min=0),
    default=None,
    help=N_(
        "Purchase price per GPU in --currency (default: the catalog's, or the China price "
        "with cny)."
    ),
)
@click.option(
    "--resale",
    type=FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help=N_("Resale value at the end, as a share of the purchase price."),
)
@click.option(
    "--pue",
    default=None,
    help=N_(
        "Power usage effectiveness: a number or an id (hyperscale, typical-colo, enterprise, home)."
    ),
)
@click.option(
    "--region",
    default=None,
    help=N_(
        "Electricity region (us, eu, cn, cn-guangdong, ...); a cn region prefers Chinese clouds."
    ),
)
@click.option("--usd-per-kwh", type=FloatRange(min=0), default=None)
@click.option(
    "--rent",
    type=FloatRange(min=0),
    default=None,
    help=N_("On-demand rent per GPU-hour in --currency (default: the cheapest snapshot)."),
)
@click.option(
    "--spot", type=FloatRange(min=0), default=None, help=N_("Spot rent per GPU-hour in --currency.")
)
@click.option(
    "--reserved",
    type=FloatRange(min=0),
    default=None,
    help=N_("Reserved rent per GPU-hour in --currency."),
)
@click.option(
    "--currency",
    default="usd",
    show_default=True,
    help=N_(
        "usd or cny: the currency of --price/--rent/--spot/--reserved and of the answer; cny "
        "prefers Chinese clouds, China prices and electricity region cn."
    ),
)
@click.option(
    "--usd-cny",
    type=FloatRange(min=0, min_open=True),
    default=None,
    help=N_("Exchange rate, CNY per USD (default: the dated rate in costs.toml)."),
)
@click.option(
    "--cloud",
    default=None,
    help=N_("Only rent prices from providers whose name contains this (e.g. autodl, runpod)."),
)
@click.option(
    "--tokens-per-year",
    type=FloatRange(min=0),
    default=0.0,
    help=N_("Output tokens per year the work needs, for the API column."),
)
@click.option("--input-tokens-per-year", type=FloatRange(min=0), default=0.0)
@click.option(
    "--api",
    default=None,
    help=N_(
        "API model for the price (e.g. llama-3.1-8b); with a token volume, also the model "
        "the GPUs serve (its estimated speed turns tokens into GPU-hours)."
    ),
)
@click.option(
    "--gpu-tokens-per-s",
    type=FloatRange(min=0, min_open=True),
    default=None,
    help=N_("Output tokens/s one GPU serves (measured); default: estimated for --api."),
)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def cost_cmd(
    gpu_name: str,
    gpus: int,
    years: float,
    utilisation: float,
    price: float | None,
    resale: float,
    pue: str | None,
    region: str | None,
    usd_per_kwh: float | None,
    rent: float | None,
    spot: float | None,
    reserved: float | None,
    currency: str,
    usd_cny: float | None,
    cloud: str | None,
    tokens_per_year: float,
    input_tokens_per_year: float,
    api: str | None,
    gpu_tokens_per_s: float | None,
    catalog_file: str | None,
    as_json: bool,
) -> None:
    from suanli.answers.cost import CostRequest, cost

    answer = cost(
        CostRequest(
            gpu=gpu_name,
            gpus=gpus,
            years=years,
            utilisation=utilisation,
            price=price,
            resale=resale,
            pue=pue,
            region=region,
            usd_per_kwh=usd_per_kwh,
            rent=rent,
            spot=spot,
            reserved=reserved,
            tokens_per_year=tokens_per_year,
            input_tokens_per_year=input_tokens_per_year,
            api=api,
            gpu_tokens_per_s=gpu_tokens_per_s,
            catalog_file=catalog_file,
            currency=currency,
            usd_cny=usd_cny,
            cloud=cloud,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return

    rate = answer.usd_cny

    def money(value: float | None) -> str:
        if value is None:
            return "-"
        return f"¥{value * rate:,.0f}" if rate is not None else f"${value:,.0f}"

    rows = [
        [
            f"{r.year:g}",
            money(r.buy_cumulative_usd),
            money(r.rent_cumulative_usd),
            money(r.spot_cumulative_usd),
            money(r.api_cumulative_usd) if tokens_per_year or input_tokens_per_year else "-",
        ]
        for r in answer.per_year
    ]
    busy = f"{utilisation:.0%}"
    if rate is None:
        title = _("{gpus} x {gpu}, {busy} utilised: cumulative cost").format(
            gpus=gpus, gpu=answer.inputs.gpu, busy=busy
        )
    else:
        title = _(
            "{gpus} x {gpu}, {busy} utilised: cumulative cost (CNY, {rate} CNY per USD)"
        ).format(gpus=gpus, gpu=answer.inputs.gpu, busy=busy, rate=f"{rate:g}")
    amounts = [_("buy"), _("rent"), _("spot"), _("API")]
    print_table(title, [_("year"), *amounts], rows, right_align=amounts)
    click.echo(sentence(answer.verdict))
    click.echo(
        _("rent {rent}; buy {buy}").format(
            rent=_shown(answer.rent, rate, "/h"), buy=_shown(answer.buy, rate, "")
        )
    )
    notes = [
        [
            sentence(a.name),
            f"{a.value:,}" if isinstance(a.value, (int, float)) else sentence(a.value),
            sentence(a.unit),
            re.split("[;；]", sentence(a.source))[0][:60],  # the first source, translated
            str(a.date),
        ]
        for a in answer.assumptions
    ]
    print_table(
        _("assumptions"), [_("input"), _("value"), _("unit"), _("source"), _("date")], notes
    )


def _shown(price: Price | None, rate: float | None, per: str) -> str:
    """A price of the comparison with where it comes from, in the answer's currency."""
    if price is None:
        return "-"
    if rate is None:
        return priced(price)
    cny = price.cny if price.cny is not None else price.usd * rate
    digits = 2 if per else 0
    return f"¥{cny:,.{digits}f}{per} ({price_note(price)})"
