"""How far to trust a speed answer: the error band of its regime, from the published corpus.

A speed answer's regime is its cell: scale (GPUs) x framework family x GPU generation x dense or
MoE x task. The band of a cell is the prediction interval, meant to hold 80% of new runs (the
order statistics of :func:`prediction_interval`, with the source as the unit of sampling), of
measured / estimated speed over the published rows in that cell
(``tests/fixtures/speed-corpus.csv``, whole sources only; nothing in the model is fitted to
them). It is computed by ``benchmarks/speed_bands.py``
and shipped as ``catalog/data/speed_bands.json`` with its date and the corpus it was read
from. A cell with fewer than :data:`MIN_ROWS` rows or :data:`MIN_SOURCES` sources falls back to
its coarser cell (scale x dense/MoE x task); when that is thin too, the answer has no band and
says that the regime is unvalidated.

The band's coverage (the share of corpus rows inside the band built from the other sources'
rows of their cell, leave one source out) is printed by the benchmark and kept in the data
file: it says how often a band of this kind holds the measured value.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar, cast

from suanli.i18n import N_

if TYPE_CHECKING:
    from suanli.catalog import GPU

#: A perf answer (training or inference).
A = TypeVar("A")
#: Plan rows (training or serving).
Rows = TypeVar("Rows", bound=tuple[Any, ...])

#: The coverage matrix's scale buckets: (upper bound of GPUs, label).
SCALES: tuple[tuple[float, str], ...] = (
    (1, "1"),
    (8, "2-8"),
    (64, "9-64"),
    (1024, "65-1024"),
    (math.inf, ">1024"),
)
#: A cell needs at least this many rows from this many sources to give a band (issue 41).
MIN_ROWS, MIN_SOURCES = 5, 2
#: The band's percentiles of measured / estimated speed: a prediction interval meant to hold
#: HIGH_QUANTILE - LOW_QUANTILE (80%) of new runs (:func:`prediction_interval`).
LOW_QUANTILE, HIGH_QUANTILE = 0.10, 0.90
BANDS_FILE = "speed_bands.json"


def scale_bucket(gpus: int) -> str:
    """The scale bucket of a GPU count."""
    return next(label for bound, label in SCALES if gpus <= bound)


def family(framework: str) -> str:
    """The framework family of a catalog framework id or alias (frameworks.toml's ``family``;
    ``other`` for a name the catalog does not know)."""
    from suanli.catalog.frameworks import get_framework

    try:
        return get_framework(framework.strip().lower()).family
    except ValueError:
        return "other"


def generation(architecture: str, vendor: str) -> str:
    """The GPU generation bucket of a catalog architecture (Volta, Ampere, Ada, Hopper,
    Blackwell, AMD CDNA, Apple, or ``other``)."""
    if architecture.startswith("Apple") or vendor.lower() == "apple":
        return "Apple"
    if architecture.startswith("CDNA"):
        return "AMD CDNA"
    for name in ("Volta", "Ampere", "Ada", "Hopper", "Blackwell"):
        if architecture.startswith(name):
            return name
    return "other"


def task_bucket(task: str) -> str:
    """``pretrain``, ``fine-tune`` (full, LoRA, QLoRA) or ``inference``."""
    if task == "infer":
        return "inference"
    return "pretrain" if task == "pretrain" else "fine-tune"


def cells(
    *, gpus: int, stack: str, architecture: str, vendor: str, moe: bool, task: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The regime's cell and its coarser fallback (scale x dense/MoE x task); ``stack`` is the
    framework family (:func:`family`)."""
    scale, kind, work = scale_bucket(gpus), "MoE" if moe else "dense", task_bucket(task)
    fine = (scale, stack, generation(architecture, vendor), kind, work)
    return fine, (scale, kind, work)


def prediction_interval(
    values: list[float], share: float, groups: Sequence[str] | None = None
) -> tuple[float, float]:
    """The distribution-free prediction interval of ``values``: the j-th smallest and j-th
    largest, which hold one more exchangeable value with probability ``(n + 1 - 2j)/(n + 1)``
    (Wilks 1941); j is the largest that keeps at least ``share``, and at least 1 (the extremes,
    for samples too small to reach ``share``).

    With ``groups`` (each value's source), the unit of sampling is the group, not the value:
    rows of one published source share its stack, hardware and harness, so they are not
    independent draws, and a new answer is a draw from a source not yet seen. Then n is the
    number of groups, each group weighs the same whatever its rows, and the bounds are the
    weighted quantiles at j/(n + 1) and 1 - j/(n + 1); below the groups needed for j = 1 the
    interval is every value's extremes."""
    if groups is None:
        ordered = sorted(values)
        n = len(ordered)
        j = max(1, math.floor((n + 1) * (1 - share) / 2 + 1e-9))
        return ordered[j - 1], ordered[n - j]
    sizes = Counter(groups)
    k = len(sizes)
    j = math.floor((k + 1) * (1 - share) / 2 + 1e-9)
    weighted = sorted(zip(values, (1.0 / (k * sizes[g]) for g in groups), strict=True))
    if j < 1:
        return weighted[0][0], weighted[-1][0]
    tail = j / (k + 1)
    return _weighted_bound(weighted, tail), _weighted_bound(weighted[::-1], tail)


def _weighted_bound(weighted: Sequence[tuple[float, float]], tail: float) -> float:
    """The first value of (value, weight) pairs, in the order given, at which the running
    weight reaches ``tail``."""
    running = 0.0
    for value, weight in weighted:
        running += weight
        if running >= tail - 1e-12:
            return value
    return weighted[-1][0]


@dataclass(frozen=True, kw_only=True)
class Band:
    """Measured / estimated speed of a regime's published rows: where the truth likely is."""

    low: float
    """Lower bound of measured / estimated speed (below 1: measured slower)."""
    high: float
    """Upper bound (:func:`prediction_interval`)."""
    cell: tuple[str, ...]
    rows: int
    sources: int
    coverage: float | None
    """Share of the corpus's rows inside their leave-one-source-out band (all cells)."""
    date: str

    def basis(self) -> dict[str, Any]:
        """The JSON ``band_basis``: the cell, its rows and sources, the band's coverage."""
        return {
            "cell": list(self.cell),
            "rows": self.rows,
            "sources": self.sources,
            "coverage": self.coverage,
            "corpus_date": self.date,
        }


@cache
def _bands() -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / BANDS_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def speed_band(
    *, gpus: int, framework: str, architecture: str, vendor: str, moe: bool, task: str
) -> Band | None:
    """The band of the regime's cell, else of its coarser cell; None when both are thin."""
    data = _bands()
    for key in cells(
        gpus=gpus,
        stack=family(framework),
        architecture=architecture,
        vendor=vendor,
        moe=moe,
        task=task,
    ):
        entry = data["cells"].get(" | ".join(key))
        if entry is not None:
            return Band(
                low=float(entry["low"]),
                high=float(entry["high"]),
                cell=key,
                rows=int(entry["rows"]),
                sources=int(entry["sources"]),
                coverage=data.get("coverage"),
                date=str(data["date"]),
            )
    return None


def unvalidated(gpus: int, task: str, moe: bool) -> str:
    """The sentence an answer without a band gives."""
    return N_(
        "no error band: fewer than {rows} published rows from {sources} sources in this regime "
        "({scale} GPUs, {kind}, {task}); the estimate is unvalidated here"
    ).format(
        rows=MIN_ROWS,
        sources=MIN_SOURCES,
        scale=scale_bucket(gpus),
        kind="MoE" if moe else "dense",
        task=task_bucket(task),
    )


#: Headline figures that grow with speed (scaled by the band) and that shrink (divided).
FASTER = ("tokens_per_s", "mfu")
SLOWER = (
    "step_time_s",
    "ttft_s",
    "tpot_s",
    "time_to_train_s",
    "cost_usd",
    "usd_per_million_tokens",
)


def banded(values: dict[str, float | None], band: Band) -> dict[str, list[float]]:
    """Each headline figure's likely range: a speed times the band's ratios, a duration or a
    cost divided by them (figures that are None are left out)."""
    out: dict[str, list[float]] = {}
    for name, value in values.items():
        if value is None:
            continue
        if name in FASTER:
            out[name] = [value * band.low, value * band.high]
        elif name in SLOWER:
            out[name] = [value / band.high, value / band.low]
    return out


def regime_band(gpu: GPU, *, gpus: int, framework: str, moe: bool, task: str) -> Band | None:
    """The band of the regime of a job on ``gpus`` of ``gpu`` (:func:`speed_band`); None on a
    CPU, which no published row of the corpus ran on (the coarse cell's GPU rows say nothing
    of it)."""
    if gpu.form_factor == "cpu" or gpu.software_stack == "cpu":
        return None
    return speed_band(
        gpus=gpus,
        framework=framework,
        architecture=str(gpu.get("architecture") or ""),
        vendor=gpu.vendor,
        moe=moe,
        task=task,
    )


def with_band(answer: A, gpu: GPU, moe: bool, framework: str) -> A:
    """A perf answer with the error band of its regime, or with the sentence that says the
    regime is unvalidated (an inference answer is known by its TTFT, a training one by its
    step time)."""
    inference = hasattr(answer, "ttft_s")
    gpus = int(answer.tp if inference else answer.gpus)  # type: ignore[attr-defined]
    task = str(answer.task)  # type: ignore[attr-defined]
    band = regime_band(gpu, gpus=gpus, framework=framework, moe=moe, task=task)
    if band is None:
        notes = (*answer.assumptions, unvalidated(gpus, task, moe))  # type: ignore[attr-defined]
        return replace(answer, assumptions=notes)  # type: ignore[type-var]
    values: dict[str, float | None] = {
        name: getattr(answer, name) for name in ("tokens_per_s", "ttft_s", "tpot_s") if inference
    }
    if not inference:
        ttt = answer.time_to_train  # type: ignore[attr-defined]
        values = {
            "tokens_per_s": answer.tokens_per_s,  # type: ignore[attr-defined]
            "step_time_s": answer.step_time_s,  # type: ignore[attr-defined]
            "mfu": answer.mfu,  # type: ignore[attr-defined]
            "time_to_train_s": ttt.time_to_train_s if ttt else None,
            "cost_usd": ttt.cost_usd if ttt else None,
        }
    return replace(answer, band=banded(values, band), band_basis=band.basis())  # type: ignore[type-var]


def band_fields(
    gpu: GPU, values: dict[str, float | None], *, gpus: int, framework: str, moe: bool, task: str
) -> dict[str, Any]:
    """An answer row's ``band`` (its ``values`` through :func:`banded`), ``band_basis`` and
    ``unvalidated`` (the sentence of a regime without a band, else None), for
    :func:`dataclasses.replace`: the rows of plan and compare carry them as perf does."""
    band = regime_band(gpu, gpus=gpus, framework=framework, moe=moe, task=task)
    if band is None:
        return {"band": None, "band_basis": None, "unvalidated": unvalidated(gpus, task, moe)}
    return {"band": banded(values, band), "band_basis": band.basis(), "unvalidated": None}


#: A plan row's layout figures, by the band's names (time_s is the time to train).
PLAN_FIGURES = {
    "tokens_per_s": "tokens_per_s",
    "mfu": "mfu",
    "time_to_train_s": "time_s",
    "cost_usd": "cost_usd",
    "ttft_s": "ttft_s",
    "tpot_s": "tpot_s",
    "usd_per_million_tokens": "usd_per_million_tokens",
}


def with_row_bands(
    rows: Rows, gpus: Sequence[GPU], *, framework: str, moe: bool, task: str
) -> Rows:
    """Plan rows with the band of each row that has a layout (its GPU count, or its TP for a
    serving layout, as perf's answer on that layout); rows without one are left as they are.
    One lookup per row (one GPU type), not per searched candidate."""
    by_id = {g.id: g for g in gpus}
    out = []
    for row in rows:
        lay = getattr(row, "layout", None)
        if lay is None or row.gpu not in by_id:
            out.append(row)
            continue
        values = {k: getattr(lay, a, None) for k, a in PLAN_FIGURES.items() if hasattr(lay, a)}
        count = int(lay.tp if task == "infer" else lay.gpus)
        fields = band_fields(
            by_id[row.gpu],
            values,
            gpus=count,
            framework=framework,
            moe=moe,
            task=task,
        )
        out.append(replace(row, **fields))
    return cast("Rows", tuple(out))
