"""CPU seconds of the first commands, start to exit: this working tree against a baseline commit.

Each command runs as a fresh ``python -m suanli ...`` process; its CPU time (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``) is what a person waits for on a busy 2-core machine,
where wall time mostly measures the neighbours. The baseline commit is checked out with
``git worktree add`` into a temporary folder (removed afterwards) and run with ``PYTHONPATH``
pointing at its ``src``; the runs alternate between the two trees so that both see the same
load. Both trees get their own bytecode cache (``PYTHONPYCACHEPREFIX``) warmed by one run of
each command first, as an installed package has its ``.pyc`` files, and the same empty
configuration and cache folders, with English output.

Target (issue 40, item 8): ``suanli plan`` with no arguments, the README's first command, under
0.5 s of CPU; the estimate paths (``mem``, ``perf``, ``plan --task infer``, ``card``) no slower.

Run: python benchmarks/bench_startup.py                      # against BASELINE_REV, 7 runs each
     python benchmarks/bench_startup.py --baseline HEAD~3 --runs 11
Results: docs/architecture.md (Start-up).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

#: The last commit before issue 40's start-up work (item 8): the default baseline.
BASELINE_REV = "dc43547d2db4bc55200823360afd2f4845b1c56d"

#: The README's first command, the target of issue 40 (CPU seconds, start to exit).
PLAN_TARGET_CPU_S = 0.5

#: Commands timed: planning only (no torch, no network), each with its arguments.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("plan",),
    ("plan", "--help"),
    ("mem", "llama-3.1-8b", "--task", "lora", "--gpu", "4090"),
    ("perf", "llama-3.1-8b", "--task", "lora", "--gpu", "h100"),
    ("plan", "--task", "infer"),
    ("card", "4090"),
)


def _cpu_seconds(src: Path, args: tuple[str, ...], env: dict[str, str]) -> float | None:
    """CPU seconds (user + system) of one ``python -m suanli ARGS`` run on ``src``; None when
    the command fails (an option the other tree does not have)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "suanli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _environment(src: Path, scratch: Path, name: str) -> dict[str, str]:
    """The environment of one tree: its ``src`` first on the path, its own bytecode cache, empty
    user folders (no user catalog or calibration), English."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("SUANLI_CATALOG", None)
    env.update(
        PYTHONPATH=str(src / "src"),
        PYTHONPYCACHEPREFIX=str(scratch / f"pycache-{name}"),
        XDG_CONFIG_HOME=str(scratch / f"config-{name}"),
        XDG_CACHE_HOME=str(scratch / f"cache-{name}"),
        XDG_DATA_HOME=str(scratch / f"data-{name}"),
        XDG_STATE_HOME=str(scratch / f"state-{name}"),
        SUANLI_LANG="en",
    )
    return env


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) else None


def _cell(seconds: float | None) -> str:
    return "failed" if seconds is None else f"{seconds:.3f}"


#: One table row: the command, this tree's and the baseline's median CPU seconds (None: failed).
Row = tuple[str, float | None, float | None]


def measure(baseline: Path, scratch: Path, runs: int) -> list[Row]:
    """``(command, this tree's median CPU s, baseline's median CPU s)`` per command."""
    trees = {
        "this": (HERE, _environment(HERE, scratch, "this")),
        "base": (baseline, _environment(baseline, scratch, "base")),
    }
    rows: list[Row] = []
    for args in COMMANDS:
        for src, env in trees.values():  # warm the bytecode caches, untimed
            _cpu_seconds(src, args, env)
        samples: dict[str, list[float | None]] = {"this": [], "base": []}
        for _ in range(runs):
            for name, (src, env) in trees.items():
                samples[name].append(_cpu_seconds(src, args, env))
        rows.append((" ".join(args), _median(samples["this"]), _median(samples["base"])))
    return rows


def main() -> int:
    """Check out the baseline, time both trees, print the table; 1 when plan misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", default=BASELINE_REV, help="Commit to compare with (default: %(default)s)."
    )
    parser.add_argument("--runs", type=int, default=7, help="Runs per command and tree.")
    args = parser.parse_args()
    if args.runs < 1:
        print("error: --runs must be at least 1", file=sys.stderr)
        return 2
    rev = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--verify", "--quiet", f"{args.baseline}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not rev:
        print(f"error: {args.baseline!r} is not a commit of {HERE}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="suanli-startup-") as tmp:
        scratch = Path(tmp)
        worktree = scratch / "baseline"
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(worktree), rev],
            check=True,
        )
        try:
            rows = measure(worktree, scratch, args.runs)
        finally:
            subprocess.run(
                ["git", "-C", str(HERE), "worktree", "remove", "--force", str(worktree)],
                check=False,
            )
    print(f"CPU seconds (user + system), median of {args.runs}; baseline {rev[:9]}")
    print(f"{'command':<50} {'this':>7} {'base':>7} {'this/base':>10}")
    for command, mine, base in rows:
        ratio = f"{mine / base:10.2f}" if mine and base else f"{'-':>10}"
        print(f"{command[:50]:<50} {_cell(mine):>7} {_cell(base):>7} {ratio}")
    plan = rows[0][1]
    met = plan is not None and plan <= PLAN_TARGET_CPU_S
    verdict = "meets" if met else "misses"
    print(f"'suanli plan' {verdict} its target of {PLAN_TARGET_CPU_S} s of CPU")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
