"""The part the aiconfigurator developer tools share: where ai-dynamo/aiconfigurator (Apache-2.0)
keeps its per-card tables, which catalog card each folder is, and the command line of a tool that
takes a checkout, and how one writes its fixture. Read by derive_aic_gemm_profiles.py,
extract_aic_nccl.py, extract_aic_oneshot.py and extract_aic_decode_attention.py; nothing in the
package or the tests imports it."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path("aic-core/src/aiconfigurator_core/systems/data")
#: aiconfigurator card folder -> catalog id.
CATALOG_IDS = {
    "a100_sxm": "a100-sxm-80gb",
    "h100_sxm": "h100-sxm-80gb",
    "h200_sxm": "h200-sxm-141gb",
    "b200_sxm": "b200-sxm-180gb",
    "l40s": "l40s-48gb",
}


def read_table(folder: str | Path, card: str, *parts: str) -> list[dict[str, Any]]:
    """The rows of ``<checkout>/<DATA>/<card>/<parts...>`` (a parquet file; needs pyarrow)."""
    import pyarrow.parquet as pq

    return list(pq.read_table(Path(folder) / DATA / card / Path(*parts)).to_pylist())


def write_fixture(
    name: str, header: list[str], rows: list[tuple[Any, ...]], digits: int = 6
) -> None:
    """``tests/fixtures/<name>``: ``header``, then ``rows`` sorted, their last column (the time)
    to ``digits`` significant figures; says how many rows went where on stderr."""
    out = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / name
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows((*r[:-1], f"{r[-1]:.{digits}g}") for r in sorted(rows))
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)


def run(main: Callable[[str], int], script: str) -> None:
    """Call ``main`` with the checkout named on the command line (exit 2 with the usage if not)."""
    if len(sys.argv) != 2:
        print(f"usage: python scripts/{script} /path/to/aiconfigurator")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
