"""The assumptions of one cost comparison, in the order they were made, and how money is shown.

Every figure the comparison uses, given or taken from the data, goes into a :class:`Ledger` with
its unit and source; money goes in through :meth:`Ledger.cash`, which shows it in the answer's
currency and notes a conversion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.i18n import N_, join
from suanli.plan.cost.result import Assumption


def significant(value: float) -> float:
    """``value`` to 10 significant digits: a CNY figure taken to USD and back reads as given."""
    return float(f"{value:.10g}")


def join_notes(notes: str, extra: str) -> str:
    """Two notes joined with "; ", leaving out an empty one."""
    return join([part for part in (notes, extra) if part], N_("; "))


@dataclass(frozen=True, kw_only=True)
class Money:
    """How the comparison shows money: its currency and the rate from USD (CNY per USD)."""

    currency: str
    rate: float

    @property
    def code(self) -> str:
        """The currency's code in capitals (USD, CNY)."""
        return self.currency.upper()

    def show(self, usd: float, cny: float | None = None) -> float:
        """An amount in the shown currency: a CNY figure as it is when shown in CNY, a USD one
        converted (to 10 significant digits)."""
        if self.currency == "cny":
            return cny if cny is not None else significant(usd * self.rate)
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


@dataclass(kw_only=True)
class Ledger:
    """The assumptions of one comparison, appended as each figure is settled."""

    money: Money
    items: list[Assumption] = field(default_factory=list)

    def add(self, name: str, value: float | str, unit: str) -> None:
        """A figure the user gave, as given."""
        self.items.append(Assumption(name=name, value=value, unit=unit, source="given"))

    def note(
        self, name: str, value: float | str, unit: str, given: bool, src: tuple[str, ...]
    ) -> None:
        """A figure that is not money: given, or from ``src`` (source, date, notes)."""
        if given:
            self.add(name, value, unit)
        else:
            source, date, notes = (*src, "", "", "")[:3]
            self.items.append(
                Assumption(name=name, value=value, unit=unit, source=source, date=date, notes=notes)
            )

    def cash(
        self,
        name: str,
        usd: float,
        unit: str,
        given: bool,
        src: tuple[str, ...] = (),
        cny: float | None = None,
    ) -> None:
        """A money assumption, shown in the answer's currency: ``name`` and ``unit`` have
        "{cur}" where the currency goes; ``cny`` is the figure's own CNY amount, if it has one."""
        shown = self.money.show(usd, cny)
        label = name.format(cur=self.money.currency)
        where = unit.format(cur=self.money.code)
        if given:
            self.add(label, shown, where)
            return
        source, date, notes = (*src, "", "", "")[:3]
        notes = join_notes(notes, self.money.origin(usd, cny))
        self.items.append(
            Assumption(name=label, value=shown, unit=where, source=source, date=date, notes=notes)
        )
