"""Cost of one speed estimate: this checkout against a reference checkout, in one run.

Both trees are loaded once, each in its own process, on the same estimates: a training step
(Llama-3.1-8B full, 8 GPUs, ZeRO 3) and an inference answer (Llama-3.1-8B, batch 8) on an H100,
through the estimators the planner and ``perf`` call. The parent then asks the two processes in
turn for a short timed batch (about 20 ms each), many times, and reports the ratio of the two
fastest batches (timeit's rule: slower ones were disturbed) beside the median of the paired,
back-to-back ratios with their middle half: this machine's timings drift by a third over
seconds to minutes.

Run: python benchmarks/bench_estimate_cost.py --ref /tmp/ref
Results: docs/speed.md ("Speed of the estimator").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
#: Paired batches of the two trees.
ROUNDS = 41
#: Estimates per timed batch.
BATCH = 200
CODE = """
import sys, time
from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.perf import training_perf
try:
    from suanli.estimate.inference import inference_perf
except ImportError:  # a checkout from before 2026-12-02 keeps it in estimate/perf.py
    from suanli.estimate.perf import inference_perf
from suanli.estimate.workload import InferWork, Parallelism, TrainWork
from suanli.estimate.device import device_for
from suanli.models.resolve import load_model
spec = load_model("llama-3.1-8b").spec
dev = device_for(find_gpu("h100", bundled_gpus()), "bf16")
train = TrainWork(task="full", parallel=Parallelism(dp=8, zero=3))
infer = InferWork(batch=8, context=1280)
for _ in range(50):
    training_perf(spec, train, dev); inference_perf(spec, infer, dev, 1024, 256)
print("ready", flush=True)
n = int(sys.argv[1])
for _ in sys.stdin:
    start = time.perf_counter()
    for _ in range(n):
        training_perf(spec, train, dev)
    middle = time.perf_counter()
    for _ in range(n):
        inference_perf(spec, infer, dev, 1024, 256)
    end = time.perf_counter()
    print((middle - start) / n, (end - middle) / n, flush=True)
"""


def _start(tree: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE, str(BATCH)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        err = proc.stderr.read() if proc.stderr else ""
        raise SystemExit(f"error: the estimate failed in {tree}: {err.strip()[-300:]}")
    return proc


def _batch(proc: subprocess.Popen[str]) -> tuple[float, float]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    train, infer = (float(x) for x in proc.stdout.readline().split())
    return train, infer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, required=True, help="Another suanli checkout.")
    args = parser.parse_args()
    if not (args.ref / "src" / "suanli").is_dir():
        print(f"error: {args.ref} is not a suanli checkout (no src/suanli)", file=sys.stderr)
        return 2
    mine, ref = _start(HERE), _start(args.ref)
    try:
        # Alternate which tree goes first, so neither always follows the other.
        runs = []
        for r in range(ROUNDS):
            if r % 2:
                theirs, ours = _batch(ref), _batch(mine)
            else:
                ours, theirs = _batch(mine), _batch(ref)
            runs.append((ours, theirs))
    finally:
        for proc in (mine, ref):
            proc.kill()
    print(
        f"{'estimate':<26} {'this us':>8} {'ref us':>8} {'this/ref':>9} {'paired':>8} "
        f"{'middle half':>12}"
    )
    for i, name in enumerate(("training step", "inference (TTFT, TPOT)")):
        # Fastest batch of each (timeit's rule: the others were disturbed), and the median of
        # the back-to-back ratios with its middle half.
        ours_s = min(ours[i] for ours, _ in runs)
        theirs_s = min(theirs[i] for _, theirs in runs)
        q1, median, q3 = statistics.quantiles([o[i] / t[i] for o, t in runs], n=4)
        print(
            f"{name:<26} {ours_s * 1e6:8.1f} {theirs_s * 1e6:8.1f} {ours_s / theirs_s:9.2f} "
            f"{median:8.2f} {q1:5.2f}-{q3:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
