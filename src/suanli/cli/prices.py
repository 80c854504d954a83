"""How every command writes a price and where it comes from: ``$2.49/h`` and
``neoclouds (CoreWeave, ...), on-demand, 2026`` (the answer's :class:`~suanli.catalog.prices.Price`;
docs/cost.md, "Where a price comes from")."""

from __future__ import annotations

import click

from suanli.catalog.prices import CATALOG_PROVIDER, Price
from suanli.cli.types import FloatRange
from suanli.i18n import N_, _

#: ``--rent``: the user's rent, shown as "given" instead of the data's (``suanli cost`` has its
#: own, in ``--currency``).
rent_option = click.option(
    "--rent",
    type=FloatRange(min=0),
    default=None,
    metavar="USD",
    help=N_(
        "Rent per GPU-hour in USD (default: the cheapest on-demand price in costs.toml, else "
        "the catalog's)."
    ),
)

#: ``--price``: the user's purchase price per GPU, shown as "given".
price_option = click.option(
    "--price",
    type=FloatRange(min=0),
    default=None,
    metavar="USD",
    help=N_("Purchase price per GPU in USD (default: the catalog's, else costs.toml's)."),
)

#: The kinds of price, in the current language (the JSON keeps the English word).
KIND_WORDS = {
    "on-demand": N_("on-demand"),
    "spot": N_("spot"),
    "reserved": N_("reserved"),
    "list": N_("list"),
    "street": N_("street"),
    "launch-msrp": N_("launch-msrp"),
    "launch": N_("launch"),
    "msrp": N_("msrp"),
    "given": N_("given"),
}


def price_note(price: Price) -> str:
    """``provider, kind, date`` of ``price`` ("given" for the user's own), ", uncertain" added
    when the data says so."""
    kind = _(KIND_WORDS[price.kind]) if price.kind in KIND_WORDS else price.kind
    if price.given:
        return kind
    provider = _("catalog") if price.provider == CATALOG_PROVIDER else price.provider
    uncertain = _("uncertain") if price.uncertain else ""
    return ", ".join(part for part in (provider, kind, price.date, uncertain) if part)


def rent_text(price: Price | None) -> str:
    """``$2.49/h`` (USD per GPU-hour), ``-`` when no rent is known."""
    return f"${price.usd:,.2f}/h" if price is not None else "-"


def buy_text(price: Price | None) -> str:
    """``$25,000`` (USD per GPU), ``-`` when no purchase price is known."""
    return f"${price.usd:,.0f}" if price is not None else "-"


def priced(price: Price | None) -> str:
    """A price with where it comes from: ``$2.49/h (RunPod pods, on-demand, 2026-03)``."""
    if price is None:
        return "-"
    amount = rent_text(price) if price.per == "gpu-hour" else buy_text(price)
    return f"{amount} ({price_note(price)})"
