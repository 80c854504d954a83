"""Dates of sources and prices: ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, a real calendar date,
not in the future.

A regular expression checks only the shape (``2024-13`` has it); :func:`date_problem` also checks
the month, the day of that month, and that the date is not more than a day ahead of today (a
day's slack for time zones: a figure read "today" in Beijing is "tomorrow" in UTC).
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

from suanli.i18n import N_

#: The shape of a month-precise date (GPU catalog, kernel tables): YYYY-MM or YYYY-MM-DD.
MONTH_DATE_PATTERN = r"^\d{4}-\d{2}(-\d{2})?$"
#: The shape of a date that may be a bare year (price rows): YYYY, YYYY-MM or YYYY-MM-DD.
YEAR_DATE_PATTERN = r"^\d{4}(-\d{2}(-\d{2})?)?$"

_MONTH_DATE_RE = re.compile(MONTH_DATE_PATTERN)
_YEAR_DATE_RE = re.compile(YEAR_DATE_PATTERN)

#: How far ahead of today (UTC) a date may be.
FUTURE_SLACK = dt.timedelta(days=1)


def earliest_day(text: str) -> dt.date | None:
    """The first day a well-shaped date string covers (``2024-05`` -> 2024-05-01), or ``None``
    when the month or the day does not exist (``2024-13``, ``2023-02-29``)."""
    parts = [int(p) for p in text.split("-")]
    year, month, day = [*parts, 1, 1][:3]
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def date_problem(
    value: object, key: str, *, year_only: bool = False, today: dt.date | None = None
) -> str | None:
    """``None`` for a good date string, else one sentence (without the file and row) saying what
    is wrong with ``key`` and what to write. ``year_only`` allows a bare ``YYYY``."""
    pattern = _YEAR_DATE_RE if year_only else _MONTH_DATE_RE
    if isinstance(value, dt.date):  # an unquoted TOML date
        return N_('{key} must be a quoted string such as "{date}"').format(
            key=key, date=value.isoformat()[:10]
        )
    if not isinstance(value, str) or not pattern.match(value):
        if year_only:
            return N_("{key} {date!r} must be YYYY, YYYY-MM or YYYY-MM-DD").format(
                key=key, date=value
            )
        return N_("{key} {date!r} must be YYYY-MM or YYYY-MM-DD").format(key=key, date=value)
    return calendar_problem(value, key, today if today is not None else utc_today())


def utc_today() -> dt.date:
    """Today in UTC (a loader takes it once per file)."""
    return dt.datetime.now(dt.timezone.utc).date()


@lru_cache(maxsize=4096)
def calendar_problem(value: str, key: str, today: dt.date) -> str | None:
    """For a date string of the right shape (the schema checked it): ``None`` when it is a
    calendar date not after ``today`` (and a day), else one sentence. Cached: a catalog repeats a
    few dozen dates over hundreds of sources."""
    first = earliest_day(value)
    if first is None:
        return N_(
            "{key} {date!r} is not a calendar date; use a month 01-12 and a day that month has"
        ).format(key=key, date=value)
    if first > today + FUTURE_SLACK:
        return N_(
            "{key} {date!r} is in the future; give the date the figure was published or read"
        ).format(key=key, date=value)
    return None
