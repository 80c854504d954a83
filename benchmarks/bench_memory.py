"""Speed of the memory estimator: one estimate (median over many) and a cold CLI start.

Targets (issue 3): under 1 ms per estimate, ``suanli mem ... --json`` under 0.5 s from a cold
interpreter, and no torch import on that path. Run: python benchmarks/bench_memory.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, Parallelism, TrainWork
from suanli.models.resolve import load_model

CASES = [
    ("llama-3.1-8b", TrainWork(task="lora", batch=4)),
    ("llama-3.1-70b", TrainWork(task="full", parallel=Parallelism(dp=8, tp=8, zero=1))),
    ("qwen3-30b-a3b", TrainWork(task="qlora", batch=2, recompute="full")),
    ("deepseek-v3", TrainWork(task="pretrain", parallel=Parallelism(dp=16, tp=8, pp=8, ep=8))),
    ("llama-3.1-8b", InferWork(batch=32, context=8192, weight_format="awq-4bit-g128")),
]


def _median_ms(fn, repeat: int = 2000) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    print(f"{'model':16} {'task':9} {'median ms':>10}")
    for name, work in CASES:
        spec = load_model(name).spec
        if isinstance(work, InferWork):
            ms = _median_ms(lambda spec=spec, work=work: inference_memory(spec, work))
            task = "infer"
        else:
            ms = _median_ms(lambda spec=spec, work=work: training_memory(spec, work))
            task = work.task
        print(f"{name:16} {task:9} {ms:10.3f}")
    cmd = [sys.executable, "-m", "suanli", "mem", "llama-3.1-8b", "--task", "lora", "--json"]
    cold = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        cold.append(time.perf_counter() - start)
    print(
        f"cold 'suanli mem llama-3.1-8b --task lora --json': median {statistics.median(cold):.3f} s"
    )
    probe = (
        "import sys, runpy; sys.argv = ['suanli', 'mem', 'llama-3.1-8b', '--json'];\n"
        "import suanli.cli.main as m\n"
        "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
        "print('torch imported:', 'torch' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    print(out.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
