"""Start-up time of the planning commands: this checkout against a reference checkout.

Each command runs as a fresh ``python -m suanli ...`` process, alternating between the two
source trees so that both see the same machine load; the medians and their ratio are printed.
The reference is any other checkout of suanli (e.g. ``git worktree add /tmp/ref <commit>``).

Run: python benchmarks/bench_startup.py --ref /tmp/ref            # 15 runs per command
     python benchmarks/bench_startup.py --ref /tmp/ref --runs 31
Results: docs/architecture.md (start-up).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

#: Planning commands (no torch, no network) with their arguments.
COMMANDS = (
    ("--help",),
    ("mem", "llama-3.1-8b", "--task", "qlora", "--gpu", "4090", "--json"),
    ("perf", "llama-3.1-8b", "--task", "full", "--gpu", "h100", "--gpus", "8", "--json"),
    ("model", "qwen2.5-7b", "--json"),
    ("gpus", "--json"),
    ("plan", "qwen2.5-0.5b", "--gpu", "4090", "--json"),
)


def _time(src: Path, args: tuple[str, ...]) -> float:
    env = dict(os.environ, PYTHONPATH=str(src / "src"))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "suanli", *args], env=env, check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, required=True, help="Another suanli checkout.")
    parser.add_argument("--runs", type=int, default=15, help="Runs per command and tree.")
    args = parser.parse_args()
    if not (args.ref / "src" / "suanli").is_dir():
        print(f"error: {args.ref} is not a suanli checkout (no src/suanli)", file=sys.stderr)
        return 2
    print(f"{'command':<44} {'this ms':>8} {'ref ms':>8} {'this/ref':>9}")
    ratios = []
    for cmd in COMMANDS:
        mine, ref = [], []
        for _ in range(args.runs):
            mine.append(_time(HERE, cmd))
            ref.append(_time(args.ref, cmd))
        a, b = statistics.median(mine), statistics.median(ref)
        ratios.append(a / b)
        print(f"{' '.join(cmd)[:44]:<44} {a * 1e3:8.0f} {b * 1e3:8.0f} {a / b:9.2f}")
    print(f"geometric mean this/ref: {statistics.geometric_mean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
