"""One price per GPU, wherever it is shown: the rent per GPU-hour and the purchase price that
``plan``, ``gpu``, ``gpus``, ``cost``, ``card``, ``capacity``, ``perf``, the web page and the
Python API all show for a card come from :func:`rent_price` and :func:`buy_price`, and nowhere
else (docs/cost.md, "Where a price comes from").

Rent, in order (the first that exists):

1. a price the user gave (``--rent``; ``--price`` where a command has no purchase price), kind
   ``given``;
2. the ``cloud_usd_per_hour`` of the user's own catalog entry for the card (a ``--catalog``
   file or ``gpus.toml`` replacing the bundled entry): the user's figure, kind ``list``;
3. the cheapest row of the asked ``kind`` (on-demand by default) in ``costs.toml``, in the
   asked ``market``, of the providers matching ``provider`` when one is named;
4. for on-demand rent with no provider named: the bundled catalog's ``cloud_usd_per_hour``, a
   dated list price of one cloud (provider ``catalog``, kind ``list``), counted in the global
   market;
5. the cheapest on-demand row of the other market (a card priced on Chinese clouds only).

Purchase: the user's price (``--price``), else the user's catalog entry's ``price_usd``, else in
the global market the catalog's ``price_usd`` (its ``price_kind``: street, list, launch-msrp)
before a ``[[purchase]]`` row of ``costs.toml``, and in the China market the other way round.

Only data is read here (both files are in the catalog), so every layer may ask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from suanli.catalog.costs import MARKETS, CloudPrice, Purchase, cloud_prices, purchase_entry
from suanli.catalog.costs_schema import CLOUD_KINDS
from suanli.catalog.gpu import GPU
from suanli.i18n import N_

#: The provider of a figure of the GPU catalog (not a ``costs.toml`` row).
CATALOG_PROVIDER = "catalog"
#: The kind of a price the user gave.
GIVEN = "given"
#: The kind of the GPU catalog's rent figure: one cloud's dated list price.
CATALOG_RENT_KIND = "list"
#: Per GPU-hour (a rent) and per GPU (a purchase).
PER_GPU_HOUR = "gpu-hour"
PER_GPU = "gpu"


@dataclass(frozen=True)
class Price:
    """A rent or purchase price of one GPU, with where it comes from."""

    usd: float
    """USD per GPU-hour for a rent, per GPU for a purchase (``per`` says which)."""
    per: str
    """``gpu-hour`` (a rent) or ``gpu`` (a purchase)."""
    provider: str
    """The cloud or seller of a ``costs.toml`` row, ``catalog`` for a figure of the GPU
    catalog, '' for a price the user gave or a purchase row without a seller."""
    kind: str
    """on-demand, spot or reserved (a rent row); list (the catalog's rent figure); street,
    list, launch-msrp, launch or msrp (a purchase); given (the user's)."""
    date: str
    """When the price was read (YYYY, YYYY-MM or YYYY-MM-DD); '' for a given price."""
    source: str
    """The reference the figure comes from."""
    uncertain: bool
    """The data marks the figure as not confirmed by a primary source."""
    notes: str
    """What the data says about the figure ('' when nothing)."""
    market: str
    """``global`` (USD prices) or ``cn`` (Chinese clouds and China street prices, in CNY)."""
    cny: float | None
    """The price in CNY when the data gives it in CNY (``usd`` is then at the bundled rate)."""

    @property
    def given(self) -> bool:
        """Whether the user gave this price."""
        return self.kind == GIVEN


def given_price(usd: float, per: str, name: str = "price") -> Price:
    """A price the user gave, in USD per ``per``; ``ValueError`` naming the option ``name``
    when it is negative or not a number (infinity is a price no deployment pays: kept, and
    written as null where an answer writes non-finite numbers so)."""
    if math.isnan(usd):
        raise ValueError(N_("{name} must be a number, got {value!r}").format(name=name, value=usd))
    if usd < 0:
        raise ValueError(
            N_("{name} must not be negative, got {value:g}").format(name=name, value=usd)
        )
    return Price(float(usd), per, "", GIVEN, "", GIVEN, False, "", "global", None)


def is_users_entry(gpu: GPU) -> bool:
    """Whether ``gpu`` is not the bundled catalog's entry for its id: the user's own file
    replaced it (or added it), so its prices are the user's."""
    bundled = _bundled_by_id().get(gpu.id)
    return bundled is None or (bundled is not gpu and bundled != gpu)


@lru_cache(maxsize=1)
def _bundled_by_id() -> dict[str, GPU]:
    from suanli.catalog.loader import bundled_gpus

    return {g.id: g for g in bundled_gpus()}


def _catalog_figure(gpu: GPU, key: str, date_key: str, kind: str, per: str) -> Price | None:
    """A price figure of the GPU catalog entry, or None."""
    value = gpu.get(key)
    if value is None:
        return None
    src = gpu.source_of(key)
    return Price(
        usd=float(value),
        per=per,
        provider=CATALOG_PROVIDER,
        kind=kind,
        date=str(gpu.get(date_key) or (src.date if src is not None else "")),
        source=src.ref if src is not None else gpu.origin,
        uncertain=key in gpu.uncertain,
        notes="",
        market="global",
        cny=None,
    )


def _cloud_price(row: CloudPrice) -> Price:
    return Price(
        usd=row.usd_per_gpu_hour,
        per=PER_GPU_HOUR,
        provider=row.provider,
        kind=row.kind,
        date=row.date,
        source=row.source,
        uncertain=row.uncertain,
        notes=row.notes,
        market=row.market,
        cny=row.cny_per_gpu_hour,
    )


def _purchase_price(row: Purchase) -> Price:
    return Price(
        usd=row.usd_per_gpu,
        per=PER_GPU,
        provider="",
        kind=row.kind,
        date=row.date,
        source=row.source,
        uncertain=row.uncertain,
        notes=row.notes,
        market="cn" if row.currency == "cny" else "global",
        cny=row.cny_per_gpu,
    )


def _check_market(market: str) -> None:
    if market not in MARKETS:
        raise ValueError(
            N_("unknown cloud market {market!r}; use one of {markets}").format(
                market=market, markets=", ".join(MARKETS)
            )
        )


def rent_price(
    gpu: GPU,
    *,
    market: str = "global",
    provider: str | None = None,
    kind: str = "on-demand",
    override_usd_per_hour: float | None = None,
) -> Price | None:
    """The rent of one ``gpu`` per GPU-hour that every view shows, or None when none is known.

    The order is the module's: the user's price, the user's catalog entry, the cheapest
    ``kind`` row of ``costs.toml`` in ``market`` (only providers whose name contains
    ``provider``), then for on-demand the bundled catalog's list price (no provider named) and
    the other market's cheapest row. Spot and reserved rents come from ``market`` alone: the
    data keeps spot below on-demand within a market, not across markets.
    """
    if override_usd_per_hour is not None:
        return given_price(override_usd_per_hour, PER_GPU_HOUR, "rent")
    _check_market(market)
    if kind not in CLOUD_KINDS:
        raise ValueError(
            N_("unknown cloud price kind {kind!r}; use one of {kinds}").format(
                kind=kind, kinds=", ".join(CLOUD_KINDS)
            )
        )
    catalog = (
        _catalog_figure(
            gpu, "cloud_usd_per_hour", "cloud_price_date", CATALOG_RENT_KIND, PER_GPU_HOUR
        )
        if kind == "on-demand" and provider is None
        else None
    )
    if catalog is not None and is_users_entry(gpu):
        return catalog
    rows = cloud_prices(gpu.id, kind, market, provider)
    if rows:
        return _cloud_price(rows[0])
    if kind != "on-demand":
        return None
    other = "global" if market == "cn" else "cn"
    other_rows = cloud_prices(gpu.id, kind, other, provider)
    if market == "cn" and other_rows:
        return _cloud_price(other_rows[0])
    if catalog is not None:
        return catalog
    return _cloud_price(other_rows[0]) if other_rows else None


def buy_price(
    gpu: GPU, *, market: str = "global", override_usd_per_gpu: float | None = None
) -> Price | None:
    """The purchase price of one ``gpu`` that every view shows, or None when none is known.

    The user's price, else the user's catalog entry's ``price_usd``; then in the ``global``
    market the catalog's dated ``price_usd`` before a ``[[purchase]]`` row of ``costs.toml``,
    in the ``cn`` market the row (a China street price) before the catalog's.
    """
    if override_usd_per_gpu is not None:
        return given_price(override_usd_per_gpu, PER_GPU)
    _check_market(market)
    kind = str(gpu.get("price_kind") or "list")
    catalog = _catalog_figure(gpu, "price_usd", "price_date", kind, PER_GPU)
    if catalog is not None and is_users_entry(gpu):
        return catalog
    row = purchase_entry(gpu.id)
    bought = _purchase_price(row) if row is not None else None
    first, second = (catalog, bought) if market == "global" else (bought, catalog)
    return first if first is not None else second


def rent_usd_per_hour(gpu: GPU) -> float:
    """USD per GPU-hour of :func:`rent_price`'s default rent of ``gpu``, 0 when none is known
    (the speed model's :class:`~suanli.estimate.perf.Device` convention)."""
    price = rent_price(gpu)
    return price.usd if price is not None else 0.0


def usd_of(price: Price | None) -> float | None:
    """The USD figure of a price, None when no price is known."""
    return price.usd if price is not None else None


def rents_by_id(
    gpus: Sequence[GPU], given_usd_per_hour: float | None = None
) -> dict[str, Price | None]:
    """Each GPU's rent per GPU-hour by id: ``given_usd_per_hour`` for all (the user's), else
    :func:`rent_price`'s for each card."""
    return {g.id: rent_price(g, override_usd_per_hour=given_usd_per_hour) for g in gpus}
