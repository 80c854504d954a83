"""The error band of a speed answer, as the CLI shows it: perf's "likely (published runs)" row,
and the same text under plan's and compare's tables (the answers carry the band,
:mod:`suanli.answers.bands`; nothing here computes a figure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from suanli.i18n import _, sentence

#: The figures perf's table shows the band of (its other figures are in --json).
PERF_FIGURES = ("tokens_per_s", "step_time_s", "ttft_s", "tpot_s")


def fmt_s(seconds: float) -> str:
    """A duration with its unit: days, h, s or ms."""
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    return f"{seconds * 1e3:,.2f} ms"


def band_text(band: dict[str, list[float]], figures: Sequence[str] = PERF_FIGURES) -> str:
    """The likely range of each of ``figures`` that ``band`` holds, in that order:
    ``7,400-9,300 tokens/s; step 1.10 s-1.32 s``."""
    parts = []
    for key in figures:
        if key not in band:
            continue
        low, high = band[key]
        if key == "tokens_per_s":
            parts.append(_("{low}-{high} tokens/s").format(low=f"{low:,.0f}", high=f"{high:,.0f}"))
        elif key == "cost_usd":
            parts.append(f"{_('cost')} ${low:,.0f}-${high:,.0f}")
        elif key == "usd_per_million_tokens":
            parts.append(f"{_('$/M tokens')} ${low:,.3f}-${high:,.3f}")
        else:
            label = {
                "step_time_s": _("step"),
                "time_to_train_s": _("time"),
                "ttft_s": "TTFT",
                "tpot_s": "TPOT",
            }[key]
            parts.append(f"{label} {fmt_s(low)}-{fmt_s(high)}")
    return _("; ").join(parts)


def band_rows(band: dict[str, list[float]] | None) -> list[list[str]]:
    """perf's table row 'likely (published runs)', when the regime has a band."""
    if not band:
        return []
    return [[_("likely (published runs)"), band_text(band)]]


def basis_text(basis: dict[str, Any]) -> str:
    """Where a band comes from: the rows, sources and cell, and how often such bands held."""
    coverage = basis.get("coverage")
    return _(
        "likely: where 80% of runs should land, from measured / estimated speed of {rows} "
        "published runs from {sources} sources in this regime ({cell}); such bands held "
        "{coverage} of the runs they had not seen"
    ).format(
        rows=basis["rows"],
        sources=basis["sources"],
        cell=", ".join([_("{n} GPUs").format(n=basis["cell"][0]), *basis["cell"][1:]]),
        coverage=f"{coverage:.0%}" if isinstance(coverage, float) else "?",
    )


def row_band_lines(rows: Sequence[Any], figures: Sequence[str]) -> list[str]:
    """Lines under a table of answer rows that carry a band (plan's, compare's): each row's
    likely range, or the sentence that says its regime is unvalidated; then where each band
    comes from (once per cell)."""
    lines: list[str] = []
    bases: list[dict[str, Any]] = []
    unvalidated: dict[str, list[str]] = {}  # one sentence for the rows of the same regime
    for row in rows:
        name = str(getattr(row, "gpu", None) or getattr(row, "device", ""))
        if row.band:
            lines.append(
                _("likely for {gpu} (published runs): {band}").format(
                    gpu=name, band=band_text(row.band, figures)
                )
            )
            if row.band_basis not in bases:
                bases.append(row.band_basis)
        elif row.unvalidated:
            unvalidated.setdefault(sentence(row.unvalidated), []).append(name)
    lines += [basis_text(b) for b in bases]
    return lines + [f"{', '.join(names)}: {note}" for note, names in unvalidated.items()]
