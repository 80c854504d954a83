"""Print the speed model's accuracy on the published speed corpus (tests/fixtures/speed-corpus.csv)
as markdown: one line per row, then the summary figures (share within 20%, median error, bias by
vendor and GPU generation, consumer multi-GPU rows apart, leave-one-source-out range, worst rows).

Nothing is fitted to the corpus: every estimate uses suanli's default efficiencies, so the
leave-one-source-out figure is the median error of the other sources' rows as they are.

Run: python benchmarks/accuracy_speed.py > /tmp/accuracy_speed.md

``--coverage`` prints only the coverage matrix (rows and sources per scale bucket x framework
family x GPU generation x dense/MoE x task) of the open corpus and of the sealed file
(tests/fixtures/speed-corpus-sealed.csv), estimating nothing. ``--sealed`` scores the sealed file
instead of the open corpus: it is meant to be run once, at the end of an issue, and never
iterated against.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed_corpus import (
    CORPUS,
    SCALES,
    SEALED,
    Estimate,
    Row,
    estimate,
    family,
    generation,
    load_corpus,
    scale_bucket,
    signed_error,
    task_bucket,
    within,
)

from suanli import GPU, find_gpu, load_catalog, load_model

TOLERANCE = 0.20


@dataclass(frozen=True)
class Result:
    """A corpus row with its estimate, signed error and the GPU's catalog facts."""

    row: Row
    est: Estimate
    error: float
    vendor: str
    architecture: str
    consumer: bool

    @property
    def abs_error(self) -> float:
        return abs(self.error)


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}%"


def evaluate(rows: Iterable[Row]) -> list[Result]:
    """Estimate every row and attach the GPU's vendor, architecture and consumer flag (a row
    suanli refuses is an error here: the open corpus must be estimable)."""
    results, refused = evaluate_all(rows)
    if refused:
        row, reason = refused[0]
        raise ValueError(f"{row.id}: {reason}")
    return results


def evaluate_all(rows: Iterable[Row]) -> tuple[list[Result], list[tuple[Row, str]]]:
    """:func:`evaluate`, keeping apart the rows suanli refuses (a layout it cannot express,
    e.g. a tensor-parallel degree that does not divide the heads) with its one-sentence
    reason; the report counts them as misses."""
    catalog = load_catalog()
    results: list[Result] = []
    refused: list[tuple[Row, str]] = []
    for row in rows:
        gpu = find_gpu(row.gpu, catalog)
        try:
            est = estimate(row)
        except ValueError as exc:
            refused.append((row, str(exc)))
            continue
        results.append(
            Result(
                row=row,
                est=est,
                error=signed_error(row, est.value),
                vendor=str(gpu.vendor),
                architecture=str(gpu.get("architecture") or "unknown"),
                consumer=gpu.get("form_factor") == "consumer",
            )
        )
    return results, refused


def _summary(results: list[Result]) -> tuple[str, str, str, str, str]:
    """rows, within 20%, median |error|, mean signed error, median signed error."""
    if not results:
        return ("0", "-", "-", "-", "-")
    errors = [r.error for r in results]
    hits = sum(within(e, TOLERANCE) for e in errors)
    return (
        str(len(results)),
        f"{hits} ({100 * hits / len(results):.0f}%)",
        f"{100 * statistics.median(abs(e) for e in errors):.1f}%",
        _pct(statistics.fmean(errors)),
        _pct(statistics.median(errors)),
    )


def _group_table(title: str, results: list[Result], key: Callable[[Result], str]) -> None:
    print(f"\n### By {title}\n")
    print(f"| {title} | rows | within 20% | median abs error | mean signed error | median signed |")
    print("|---|---:|---:|---:|---:|---:|")
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    for name in sorted(groups):
        print(f"| {name} | " + " | ".join(_summary(groups[name])) + " |")


def _rows_table(results: list[Result]) -> None:
    print(
        "| id | source | GPU x n | model | metric | estimate | measured | error | fits |\n"
        "|---|---|---|---|---|---:|---:|---:|---|"
    )
    for r in results:
        row = r.row
        fits = "yes" if r.est.fits and r.est.supported else "no"
        # A row whose card differs from the catalog's names its calibration file (see below).
        gpu = f"{row.gpu}\\*" if row.option("calibration") else row.gpu
        print(
            f"| {row.id} | {row.source_id} | {gpu} x {row.gpus} | {row.model} | {row.metric} | "
            f"{_fmt(r.est.value)} | {_fmt(row.value)} | {_pct(r.error)} | {fits} |"
        )


#: A cell of the coverage matrix: (scale, framework family, generation, dense/MoE, task).
Cell = tuple[str, str, str, str, str]
#: A cell needs at least this many rows from this many sources (issue 41).
MIN_ROWS, MIN_SOURCES = 5, 2
DIMENSIONS = ("scale", "framework family", "generation", "dense/MoE", "task")


def cell(row: Row, catalog: list[GPU] | None = None) -> Cell:
    """The row's coverage cell (reads the GPU's architecture and whether the model is MoE)."""
    gpu = find_gpu(row.gpu, catalog if catalog is not None else load_catalog())
    moe = load_model(row.model).spec.is_moe
    return (
        scale_bucket(row.gpus),
        family(row.framework),
        generation(str(gpu.get("architecture") or ""), str(gpu.vendor)),
        "MoE" if moe else "dense",
        task_bucket(row),
    )


def coverage(rows: Iterable[Row]) -> dict[Cell, tuple[int, frozenset[str]]]:
    """Rows and sources per non-empty coverage cell (no estimates)."""
    catalog = load_catalog()
    found: dict[Cell, list[Row]] = {}
    for row in rows:
        found.setdefault(cell(row, catalog), []).append(row)
    return {k: (len(v), frozenset(r.source_id for r in v)) for k, v in found.items()}


def _coverage_table(title: str, cells: dict[Cell, tuple[int, frozenset[str]]]) -> None:
    rows = sum(n for n, _ in cells.values())
    sources = frozenset().union(*(s for _, s in cells.values())) if cells else frozenset()
    print(f"\n### {title}: {rows} rows, {len(sources)} sources\n")
    for i, name in enumerate(DIMENSIONS):
        merged: dict[str, tuple[int, set[str]]] = {}
        for key, (n, srcs) in cells.items():
            count, seen = merged.get(key[i], (0, set()))
            merged[key[i]] = (count + n, seen | srcs)
        order = [label for _, label in SCALES] if i == 0 else sorted(merged)
        print(f"| {name} | rows | sources |\n|---|---:|---:|")
        for label in order:
            if label in merged:
                print(f"| {label} | {merged[label][0]} | {len(merged[label][1])} |")
        print()
    scale_order = {label: i for i, (_, label) in enumerate(SCALES)}
    print(
        f"Every non-empty cell; **thin** marks a cell under {MIN_ROWS} rows or "
        f"{MIN_SOURCES} sources (empty cells are not listed).\n"
    )
    print("| scale | framework family | generation | dense/MoE | task | rows | sources | |")
    print("|---|---|---|---|---|---:|---:|---|")
    for key in sorted(cells, key=lambda k: (scale_order[k[0]], *k[1:])):
        n, srcs = cells[key]
        thin = "**thin**" if n < MIN_ROWS or len(srcs) < MIN_SOURCES else ""
        print("| " + " | ".join(key) + f" | {n} | {len(srcs)} | {thin} |")


def print_coverage() -> None:
    """The coverage matrix of the open corpus and of the sealed file, counting only."""
    print("## Coverage of the speed corpus\n")
    print(
        f"Counted on {datetime.date.today().isoformat()} by `python benchmarks/accuracy_speed.py "
        "--coverage`. Rows and sources per cell: scale (GPUs) x framework family x GPU generation "
        "x dense/MoE x task (fine-tune = full, LoRA and QLoRA). The sealed file holds whole "
        "sources the open corpus does not; it is counted here, never estimated, and scored once "
        "at the end of an issue (`--sealed`).\n"
    )
    _coverage_table("Open corpus (`tests/fixtures/speed-corpus.csv`)", coverage(load_corpus()))
    if SEALED.exists():
        _coverage_table(
            "Sealed corpus (`tests/fixtures/speed-corpus-sealed.csv`)",
            coverage(load_corpus(SEALED)),
        )


def main(argv: list[str] | None = None) -> None:
    """Print the accuracy report (or, with ``--coverage``, the coverage matrix only)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--coverage", action="store_true", help="print the coverage matrix only")
    parser.add_argument(
        "--sealed", action="store_true", help="score the sealed file (once, at an issue's end)"
    )
    args = parser.parse_args(argv)
    if args.coverage:
        print_coverage()
        return
    path = SEALED if args.sealed else CORPUS
    results, refused = evaluate_all(load_corpus(path))
    sources = sorted({r.row.source_id for r in results})
    name = path.relative_to(CORPUS.parent.parent.parent)
    print(f"## Speed against the published corpus (`{name}`)\n")
    print(
        f"{len(results)} published end-to-end measurements from {len(sources)} independent "
        "sources, estimated through `suanli.perf` with each row's published layout and suanli's "
        "default efficiencies (validation only: nothing is fitted to these rows; `ignore_fit` is "
        "on, and `fits` says whether suanli thinks the job fits in memory).\n"
    )
    print(
        "Error = (estimate - measured) / measured for throughput metrics (tokens/s, MFU, "
        "TFLOP/s); for time metrics (step_time_s, ttft_s, tpot_s) the sign is flipped. "
        "**Positive always means the estimate promises more speed than was measured** "
        "(optimistic); negative means pessimistic. An inference row is read the way it was "
        "measured (its `load` option): a static batch started together counts its prefill in the "
        "rate (`batch_tokens_per_s`), closed-loop clients read suanli's closed-loop steady state "
        "(`closed_loop`), other rows read TPOT and batch / TPOT.\n"
    )
    _rows_table(results)
    calibrated = sorted({r.row.option("calibration") for r in results} - {None})
    if calibrated:
        names = ", ".join(f"`tests/fixtures/calibration/{name}`" for name in calibrated)
        print(
            "\n\\* The card differs from the catalog's and the row says how, in the form a user "
            f"of that card would give to `--calibration`: {names} (its comments give each "
            "figure's source; nothing in it comes from the rows)."
        )

    print("\n### Summary\n")
    print("| rows | within 20% | median abs error | mean signed error | median signed |")
    print("|---:|---:|---:|---:|---:|")
    print("| " + " | ".join(_summary(results)) + " |")
    not_fit = [r for r in results if not (r.est.fits and r.est.supported)]
    print(f"\n{len(not_fit)} rows are ones suanli thinks do not fit (or lack precision units).")
    if refused:
        hits = sum(within(r.error, TOLERANCE) for r in results)
        total = len(results) + len(refused)
        print(
            f"\n{len(refused)} more rows suanli refuses to estimate (counted as misses: "
            f"{hits} of {total} within 20%, {100 * hits / total:.0f}%):\n"
        )
        for row, reason in refused:
            print(f"- `{row.id}` ({row.source_id}): {reason}")

    _group_table("kind", results, lambda r: r.row.kind)
    _group_table("metric", results, lambda r: r.row.metric)
    _group_table("vendor", results, lambda r: r.vendor)
    _group_table("GPU generation", results, lambda r: f"{r.vendor} {r.architecture}")
    # The "no regime biased by more than 10% on average": the mean signed error of each
    # regime users plan in (scale x framework family x task).
    _group_table(
        "regime (GPUs, framework family, task)",
        results,
        lambda r: f"{scale_bucket(r.row.gpus)}, {family(r.row.framework)}, {task_bucket(r.row)}",
    )

    multi = [r for r in results if r.consumer and r.row.gpus > 1]
    rest = [r for r in results if not (r.consumer and r.row.gpus > 1)]
    print("\n### Consumer cards on more than one GPU\n")
    print(
        "GeForce cards without NVLink/P2P (FSDP through host memory; llama.cpp splitting layers "
        "across cards, which run in turn): reported apart from the rest.\n"
    )
    _rows_table(multi)
    print("\n| subset | rows | within 20% | median abs error | mean signed error | median signed |")
    print("|---|---:|---:|---:|---:|---:|")
    print("| consumer multi-GPU | " + " | ".join(_summary(multi)) + " |")
    print("| all other rows | " + " | ".join(_summary(rest)) + " |")

    print("\n### Leave one source out\n")
    print(
        "Nothing is fitted, so leaving a source out changes only which rows are counted: for each "
        "source, the median absolute error of the other sources' rows.\n"
    )
    print("| left out | its rows | its median abs error | others' median abs error |")
    print("|---|---:|---:|---:|")
    loso = []
    for source in sources:
        own = [r.abs_error for r in results if r.row.source_id == source]
        others = [r.abs_error for r in results if r.row.source_id != source]
        loso.append(statistics.median(others))
        print(
            f"| {source} | {len(own)} | {100 * statistics.median(own):.1f}% | "
            f"{100 * loso[-1]:.1f}% |"
        )
    print(
        f"\nLeave-one-source-out median absolute error: {100 * min(loso):.1f}% to "
        f"{100 * max(loso):.1f}% (all rows: "
        f"{100 * statistics.median(r.abs_error for r in results):.1f}%)."
    )

    print("\n### Worst rows\n")
    _rows_table(sorted(results, key=lambda r: -r.abs_error)[:12])
    if not args.sealed:
        print()
        print_coverage()


if __name__ == "__main__":
    main()
