"""Write the error bands of the speed answers (src/suanli/catalog/data/speed_bands.json) from
the open speed corpus, and print their coverage.

For each corpus row: the ratio of measured to estimated speed (durations inverted, so above 1
means the run was faster than suanli said). For each cell (scale x framework family x GPU
generation x dense/MoE x task) and each coarser cell (scale x dense/MoE x task) with at least 5
rows from 2 sources: the prediction interval of those ratios meant to hold 80% of the rows of
a new source (order statistics with the source as the unit of sampling, each source weighing
the same: ``suanli.answers.bands.prediction_interval``). Nothing in the model is
fitted: the bands only say how far the model's answers were from published runs of the regime.

Coverage, leave one source out: for each row, the band its cell (else its coarser cell) gets
from the OTHER sources' rows alone; the share of rows whose ratio falls inside it. The issue's
target is 70-90% (a 10th-90th band holds about 80% of new rows when the rows of a cell are
alike).

Sealed coverage (``--sealed``, once, with the sealed part's score): the share of the sealed
file's rows (sources the bands never saw) inside the band their answer shows, the shipped data
file's; nothing is written.

Run: python benchmarks/speed_bands.py            (writes the data file, prints the report)
     python benchmarks/speed_bands.py --check    (exit 1 when the data file is out of date)
     python benchmarks/speed_bands.py --sealed   (the sealed rows inside their shipped bands)
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy_speed import Result, evaluate_all
from speed_corpus import CORPUS, SEALED, family, load_corpus

from suanli import load_catalog, load_model
from suanli.answers.bands import (
    BANDS_FILE,
    HIGH_QUANTILE,
    LOW_QUANTILE,
    MIN_ROWS,
    MIN_SOURCES,
    cells,
    prediction_interval,
)

OUT = Path(__file__).resolve().parent.parent / "src" / "suanli" / "catalog" / "data" / BANDS_FILE

Key = tuple[str, ...]


def ratio(result: Result) -> float:
    """Measured over estimated speed (durations inverted)."""
    measured, estimated = result.row.value, result.est.value
    return estimated / measured if result.row.is_time else measured / estimated


def keys(result: Result) -> tuple[Key, Key]:
    """The row's cell and coarser cell, as an answer of the same regime computes them."""
    row = result.row
    return cells(
        gpus=row.gpus,
        stack=family(row.framework),
        architecture=result.architecture,
        vendor=result.vendor,
        moe=load_model(row.model).spec.is_moe,
        task="infer" if row.kind == "infer" else row.task,
    )


def band(members: Sequence[tuple[float, str]]) -> dict[str, float | int] | None:
    """The band of (ratio, source) pairs, or None when they are too few."""
    sources = {s for _, s in members}
    if len(members) < MIN_ROWS or len(sources) < MIN_SOURCES:
        return None
    low, high = prediction_interval(
        [r for r, _ in members], HIGH_QUANTILE - LOW_QUANTILE, [s for _, s in members]
    )
    return {
        "low": round(low, 4),
        "high": round(high, 4),
        "rows": len(members),
        "sources": len(sources),
    }


def bands(
    results: list[Result], by_cell: dict[str, list[int]] | None = None
) -> tuple[dict[str, dict[str, float | int]], float, int]:
    """The cells' bands, the leave-one-source-out coverage and how many rows had a band; with
    ``by_cell``, each judged row is counted there under the cell that judged it as [inside,
    judged]."""
    groups: dict[Key, list[tuple[float, str]]] = {}
    placed = []
    for result in results:
        r = ratio(result)
        fine, coarse = keys(result)
        placed.append((r, result.row.source_id, fine, coarse))
        for key in (fine, coarse):
            groups.setdefault(key, []).append((r, result.row.source_id))
    table = {" | ".join(key): found for key, members in groups.items() if (found := band(members))}
    inside = judged = 0
    for r, source, fine, coarse in placed:
        for key in (fine, coarse):
            loso = band([m for m in groups[key] if m[1] != source])
            if loso is not None:
                judged += 1
                hit = loso["low"] <= r <= loso["high"]
                inside += hit
                if by_cell is not None:
                    counts = by_cell.setdefault(" | ".join(key), [0, 0])
                    counts[0] += hit
                    counts[1] += 1
                break
    return table, inside / judged if judged else float("nan"), judged


def document(results: list[Result]) -> dict[str, object]:
    """The data file's content."""
    table, coverage, judged = bands(results)
    commit = subprocess.run(
        ["git", "log", "-1", "--format=%h %cs", "--", str(CORPUS)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "about": "Error bands of suanli's speed answers: the 80% prediction interval (order "
        "statistics over sources) of measured / estimated speed of the published rows of each cell "
        "(benchmarks/speed_bands.py).",
        "corpus": f"tests/fixtures/speed-corpus.csv at {commit or 'the working tree'}",
        "date": datetime.date.today().isoformat(),
        "rows": len(results),
        "coverage": round(coverage, 4),
        "coverage_rows": judged,
        "cells": dict(sorted(table.items())),
    }


def shipped_coverage(results: list[Result]) -> tuple[int, int, int]:
    """(rows inside the band their answer shows, rows with a band, rows without one), the
    bands read from the shipped data file as an answer reads them."""
    from suanli.answers.bands import speed_band

    inside = judged = bare = 0
    for result in results:
        row = result.row
        found = speed_band(
            gpus=row.gpus,
            framework=row.framework,
            architecture=result.architecture,
            vendor=result.vendor,
            moe=load_model(row.model).spec.is_moe,
            task="infer" if row.kind == "infer" else row.task,
        )
        if found is None:
            bare += 1
            continue
        judged += 1
        inside += found.low <= ratio(result) <= found.high
    return inside, judged, bare


def main(argv: list[str] | None = None) -> int:
    """Write (or check) the bands and print their coverage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    parser.add_argument(
        "--sealed", action="store_true", help="the sealed rows inside their shipped bands (once)"
    )
    args = parser.parse_args(argv)
    load_catalog()
    if args.sealed:
        inside, judged, bare = shipped_coverage(evaluate_all(load_corpus(SEALED))[0])
        share = f"{100 * inside / judged:.1f}%" if judged else "-"
        print(
            f"sealed rows inside the band their answer shows: {inside} of {judged} ({share}); "
            f"{bare} rows in regimes with no band"
        )
        return 0
    # A row suanli refuses (a layout it cannot express) has no ratio to place in a band.
    results, _refused = evaluate_all(load_corpus())
    doc = document(results)
    if args.check:
        current = json.loads(OUT.read_text("utf-8"))
        same = current["cells"] == doc["cells"] and current["coverage"] == doc["coverage"]
        print("speed bands are current" if same else "speed bands are out of date: rerun")
        return 0 if same else 1
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    cells_ = doc["cells"]
    assert isinstance(cells_, dict)
    print(f"{len(cells_)} cells with a band, from {doc['rows']} rows")
    print(
        f"leave-one-source-out coverage: {100 * float(str(doc['coverage'])):.1f}% of "
        f"{doc['coverage_rows']} rows inside the band of their cell (target 70-90%)"
    )
    by_cell: dict[str, list[int]] = {}
    bands(results, by_cell)
    for name, entry in cells_.items():
        inside, judged = by_cell.get(name, [0, 0])
        loso = f"; leave-one-source-out {inside}/{judged} inside" if judged else ""
        print(f"{name}: {entry['low']:.2f}-{entry['high']:.2f} ({entry['rows']} rows, "
              f"{entry['sources']} sources{loso})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
