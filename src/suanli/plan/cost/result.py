"""The result of a cost comparison: its assumptions, yearly rows, totals and verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, TypeVar

from suanli.catalog.prices import Price
from suanli.i18n import N_

#: Field metadata: left out of the JSON while None (the answers' ``omit_none``).
_OMIT_NONE = {"omit_none": True}

_T = TypeVar("_T")


def _cny() -> Any:
    """A ``..._cny`` sibling of a ``..._usd`` field: the amount in CNY, present with
    ``currency="cny"`` only."""
    return field(default=None, metadata=_OMIT_NONE)


def _drop_none_cny(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if not (k.endswith("_cny") and v is None)}


def in_currency(row: _T, usd_cny: float) -> _T:
    """``row`` (a :class:`YearRow` or :class:`CostTotals`) with every ``..._cny`` field set
    from its ``..._usd`` sibling at ``usd_cny`` CNY per USD."""
    values = {}
    for f in fields(row):  # type: ignore[arg-type]
        if f.name.endswith("_cny"):
            usd = getattr(row, f.name[: -len("_cny")] + "_usd")
            values[f.name] = usd * usd_cny if usd is not None else None
    return replace(row, **values)  # type: ignore[type-var]


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True, kw_only=True)
class Assumption:
    """One input of the comparison: its value, unit, and where it comes from."""

    name: str
    value: float | str
    unit: str
    source: str
    date: str = ""
    notes: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "source": self.source,
            "date": self.date,
            "notes": self.notes,
        }


@dataclass(frozen=True, kw_only=True)
class YearRow:
    """Cumulative cost of each option at the end of a year (the last row may be a part-year)."""

    year: float
    buy_cumulative_usd: float
    rent_cumulative_usd: float
    api_cumulative_usd: float | None = None
    spot_cumulative_usd: float | None = None
    reserved_cumulative_usd: float | None = None
    buy_cumulative_cny: float | None = _cny()
    rent_cumulative_cny: float | None = _cny()
    api_cumulative_cny: float | None = _cny()
    spot_cumulative_cny: float | None = _cny()
    reserved_cumulative_cny: float | None = _cny()

    def as_dict(self) -> dict[str, Any]:
        return _drop_none_cny(
            {
                "year": int(self.year) if float(self.year).is_integer() else self.year,
                "buy_cumulative_usd": self.buy_cumulative_usd,
                "rent_cumulative_usd": self.rent_cumulative_usd,
                "api_cumulative_usd": self.api_cumulative_usd,
                "spot_cumulative_usd": self.spot_cumulative_usd,
                "reserved_cumulative_usd": self.reserved_cumulative_usd,
                "buy_cumulative_cny": self.buy_cumulative_cny,
                "rent_cumulative_cny": self.rent_cumulative_cny,
                "api_cumulative_cny": self.api_cumulative_cny,
                "spot_cumulative_cny": self.spot_cumulative_cny,
                "reserved_cumulative_cny": self.reserved_cumulative_cny,
            }
        )


@dataclass(frozen=True, kw_only=True)
class CostTotals:
    """Totals over the whole period, and the parts of the buy total."""

    buy_usd: float
    rent_usd: float
    api_usd: float | None
    spot_usd: float | None
    reserved_usd: float | None
    capex_usd: float
    resale_usd: float
    electricity_usd: float
    facility_usd: float
    energy_kwh: float
    it_power_kw: float
    busy_gpu_hours: float
    cheapest: str
    buy_cny: float | None = _cny()
    rent_cny: float | None = _cny()
    api_cny: float | None = _cny()
    spot_cny: float | None = _cny()
    reserved_cny: float | None = _cny()
    capex_cny: float | None = _cny()
    resale_cny: float | None = _cny()
    electricity_cny: float | None = _cny()
    facility_cny: float | None = _cny()

    def as_dict(self) -> dict[str, Any]:
        return _drop_none_cny({f.name: getattr(self, f.name) for f in fields(self)})


@dataclass(frozen=True, kw_only=True)
class CostComparison:
    """Buy vs rent (vs spot, reserved, API) for one GPU type over a period."""

    gpu_id: str
    gpus: int
    years: float
    utilisation: float
    hours_per_year: float
    per_year: tuple[YearRow, ...]
    totals: CostTotals
    break_even_utilisation: float | None
    """Utilisation at which buying and renting cost the same over the period; None if none in
    [0, 1] (renting is then cheaper at any utilisation)."""
    break_even_hours: float | None
    """Busy hours per GPU per year at the break-even utilisation."""
    verdict: str
    assumptions: tuple[Assumption, ...]
    currency: str = "USD"
    """The currency of the assumptions and the verdict; with CNY the ``..._cny`` amounts are
    set (the ``..._usd`` ones stay in USD)."""
    usd_cny: float | None = None
    """CNY per USD behind the ``..._cny`` amounts (None in USD)."""
    rent: Price | None = None
    """The on-demand rent per GPU-hour compared, with where it comes from: the one every view
    shows for the card (:func:`suanli.catalog.prices.rent_price`), or the user's."""
    buy: Price | None = None
    """The purchase price per GPU compared, with where it comes from."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready document (see :func:`cost_report`)."""
        doc = {
            "inputs": {
                "gpu": self.gpu_id,
                "gpus": self.gpus,
                "years": self.years,
                "utilisation": self.utilisation,
                "hours_per_year": self.hours_per_year,
            },
            "per_year": [r.as_dict() for r in self.per_year],
            "totals": self.totals.as_dict(),
            "break_even_utilisation": self.break_even_utilisation,
            "break_even_hours": self.break_even_hours,
            "verdict": self.verdict,
            "assumptions": [a.as_dict() for a in self.assumptions],
            "currency": self.currency,
            "rent": asdict(self.rent) if self.rent is not None else None,
            "buy": asdict(self.buy) if self.buy is not None else None,
        }
        if self.usd_cny is not None:
            doc["usd_cny"] = self.usd_cny
        return doc


# ---------------------------------------------------------------------------------------------
# Verdict


def cost_verdict(
    years: float,
    utilisation: float,
    totals: CostTotals,
    break_even: float | None,
    break_even_hours: float | None,
    u_star: float,
    rent_per_u: float,
    variable: float,
    usd_cny: float | None = None,
) -> str:
    """The one-line verdict of a comparison (the ``verdict`` of :class:`CostComparison`).

    It gives the break-even utilisation (or why renting always wins), what the cheaper of buying
    and renting saves at ``utilisation``, and whether the API is cheapest of all. With
    ``usd_cny`` the amounts are in CNY (¥) at that rate, else in USD ($).
    """

    def cash(usd: float) -> str:
        if usd_cny is not None:
            return f"¥{usd * usd_cny:,.0f}"
        return f"${usd:,.0f}"

    period = (N_("over {years:g} year") if years == 1 else N_("over {years:g} years")).format(
        years=years
    )
    buy, rent = totals.buy_usd, totals.rent_usd
    if buy < rent:
        tail = N_("at {share:.0%} buying saves {amount}").format(
            share=utilisation, amount=cash(rent - buy)
        )
    elif rent < buy:
        tail = N_("at {share:.0%} renting saves {amount}").format(
            share=utilisation, amount=cash(buy - rent)
        )
    else:
        tail = N_("at {share:.0%} they cost the same").format(share=utilisation)
    if totals.api_usd is not None and totals.api_usd < min(buy, rent):
        tail = N_("{saving}; the API is cheapest for this token volume ({amount})").format(
            saving=tail, amount=cash(totals.api_usd)
        )
    if break_even is not None and break_even_hours is not None:
        return N_(
            "buying is cheaper above {share:.0%} utilisation "
            "({hours:,.0f} h per GPU per year) {period}; {tail}"
        ).format(share=break_even, hours=break_even_hours, period=period, tail=tail)
    if rent_per_u <= variable:
        return N_(
            "renting is cheaper at any utilisation {period}: the rent is below the owned "
            "GPUs' energy cost per busy hour; {tail}"
        ).format(period=period, tail=tail)
    return N_(
        "renting is cheaper at any utilisation {period}: buying would need "
        "{share:.0%} utilisation to pay back; {tail}"
    ).format(period=period, share=u_star, tail=tail)
