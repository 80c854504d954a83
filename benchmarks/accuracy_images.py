"""Print the validation table of docs/image-generation.md: every published text-to-image run of
tests/fixtures/image-generation-runs.csv against suanli's estimate (nothing fitted to them), with
the median error by metric and by source.

Run: python benchmarks/accuracy_images.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from tests.diffusion.test_image_answer import estimate_row, published_rows  # noqa: E402

UNITS = {"seconds_per_batch": "s", "denoise_step_s": "s", "allocated_gib": "GiB"}


def main() -> None:
    """Print the table and the summaries."""
    rows = published_rows()
    print("| row | model | GPU | size | steps | batch | metric | published | suanli | error |")
    print("|---|---|---|---|---:|---:|---|---:|---:|---:|")
    errors: dict[str, list[float]] = {}
    by_source: dict[str, list[float]] = {}
    for row in rows:
        est = estimate_row(row)
        meas = float(row["measured"])
        err = est / meas - 1
        kind = "memory" if row["metric"] == "allocated_gib" else "speed"
        errors.setdefault(kind, []).append(err)
        if kind == "speed":
            by_source.setdefault(row["source"].split(" ")[0].split("/")[0], []).append(err)
        unit = UNITS[row["metric"]]
        print(
            f"| {row['id']} | {row['model']} | {row['gpu']} | {row['width']}x{row['height']} | "
            f"{row['steps']} | {row['batch']} | {row['metric']} | {meas:,.3f} {unit} | "
            f"{est:,.3f} | {100 * err:+.1f}% |"
        )
    print()
    for kind, errs in errors.items():
        within = sum(abs(e) <= 0.2 for e in errs)
        median_abs = 100 * statistics.median(map(abs, errs))
        print(
            f"{kind}: {len(errs)} rows, median |error| {median_abs:.1f}%, "
            f"median signed {100 * statistics.median(errs):+.1f}%, within 20%: {within}"
        )
    print()
    print("speed by source (leave-one-source-out has nothing to leave out: nothing is fitted)")
    for source, errs in sorted(by_source.items()):
        print(f"  {source}: {len(errs)} rows, median {100 * statistics.median(errs):+.1f}%")


if __name__ == "__main__":
    main()
