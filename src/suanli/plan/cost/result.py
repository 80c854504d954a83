"""The result of a cost comparison: its assumptions, yearly rows, totals and verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class YearRow:
    """Cumulative cost of each option at the end of a year (the last row may be a part-year)."""

    year: float
    buy_cumulative_usd: float
    rent_cumulative_usd: float
    api_cumulative_usd: float | None = None
    spot_cumulative_usd: float | None = None
    reserved_cumulative_usd: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "year": int(self.year) if float(self.year).is_integer() else self.year,
            "buy_cumulative_usd": self.buy_cumulative_usd,
            "rent_cumulative_usd": self.rent_cumulative_usd,
            "api_cumulative_usd": self.api_cumulative_usd,
            "spot_cumulative_usd": self.spot_cumulative_usd,
            "reserved_cumulative_usd": self.reserved_cumulative_usd,
        }


@dataclass(frozen=True)
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "buy_usd": self.buy_usd,
            "rent_usd": self.rent_usd,
            "api_usd": self.api_usd,
            "spot_usd": self.spot_usd,
            "reserved_usd": self.reserved_usd,
            "capex_usd": self.capex_usd,
            "resale_usd": self.resale_usd,
            "electricity_usd": self.electricity_usd,
            "facility_usd": self.facility_usd,
            "energy_kwh": self.energy_kwh,
            "it_power_kw": self.it_power_kw,
            "busy_gpu_hours": self.busy_gpu_hours,
            "cheapest": self.cheapest,
        }


@dataclass(frozen=True)
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

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready document (see :func:`cost_report`)."""
        return {
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
        }


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
) -> str:
    """The one-line verdict of a comparison (the ``verdict`` of :class:`CostComparison`).

    It gives the break-even utilisation (or why renting always wins), what the cheaper of buying
    and renting saves at ``utilisation``, and whether the API is cheapest of all.
    """
    period = f"over {years:g} year{'s' if years != 1 else ''}"
    if break_even is not None and break_even_hours is not None:
        head = (
            f"buying is cheaper above {break_even:.0%} utilisation "
            f"({break_even_hours:,.0f} h per GPU per year) {period}"
        )
    elif rent_per_u <= variable:
        head = (
            f"renting is cheaper at any utilisation {period}: the rent is below the owned "
            "GPUs' energy cost per busy hour"
        )
    else:
        head = (
            f"renting is cheaper at any utilisation {period}: buying would need "
            f"{u_star:.0%} utilisation to pay back"
        )
    buy, rent = totals.buy_usd, totals.rent_usd
    if buy < rent:
        head += f"; at {utilisation:.0%} buying saves ${rent - buy:,.0f}"
    elif rent < buy:
        head += f"; at {utilisation:.0%} renting saves ${buy - rent:,.0f}"
    else:
        head += f"; at {utilisation:.0%} they cost the same"
    if totals.api_usd is not None and totals.api_usd < min(buy, rent):
        head += f"; the API is cheapest for this token volume (${totals.api_usd:,.0f})"
    return head
