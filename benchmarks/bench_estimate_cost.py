"""Cost of one speed estimate: this checkout against a reference checkout, in one run.

Each tree is measured in a fresh process (timeit, best of 5 repeats) on the same estimates:
a training step (Llama-3.1-8B full, 8 GPUs, ZeRO 3) and an inference answer (Llama-3.1-8B,
batch 8) on an H100, through the estimators the planner and ``perf`` call.

Run: python benchmarks/bench_estimate_cost.py --ref /tmp/ref
Results: docs/speed.md ("Speed of the estimator").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CODE = """
import timeit
from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.perf import training_perf
try:
    from suanli.estimate.inference import inference_perf
except ImportError:  # a checkout from before 2026-12-02 keeps it in estimate/perf.py
    from suanli.estimate.perf import inference_perf
from suanli.estimate.workload import InferWork, Parallelism, TrainWork
from suanli.hardware import device_for
from suanli.models.resolve import load_model
spec = load_model("llama-3.1-8b").spec
dev = device_for(find_gpu("h100", bundled_gpus()), "bf16")
train = TrainWork(task="full", parallel=Parallelism(dp=8, zero=3))
infer = InferWork(batch=8, context=1280)
training_perf(spec, train, dev); inference_perf(spec, infer, dev, 1024, 256)
n = 300
t = min(timeit.repeat(lambda: training_perf(spec, train, dev), number=n, repeat=5)) / n
i = min(timeit.repeat(lambda: inference_perf(spec, infer, dev, 1024, 256), number=n, repeat=5)) / n
print(t, i)
"""


def _measure(tree: Path) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"error: the estimate failed in {tree}: {out.stderr.strip()[-300:]}")
    train, infer = (float(x) for x in out.stdout.split())
    return train, infer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, required=True, help="Another suanli checkout.")
    args = parser.parse_args()
    if not (args.ref / "src" / "suanli").is_dir():
        print(f"error: {args.ref} is not a suanli checkout (no src/suanli)", file=sys.stderr)
        return 2
    mine, ref = _measure(HERE), _measure(args.ref)
    print(f"{'estimate':<34} {'this us':>9} {'ref us':>9} {'this/ref':>9}")
    for name, a, b in (
        ("training step", mine[0], ref[0]),
        ("inference (TTFT, TPOT)", mine[1], ref[1]),
    ):
        print(f"{name:<34} {a * 1e6:9.1f} {b * 1e6:9.1f} {a / b:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
