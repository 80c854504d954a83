"""Overhead of the training-loop doctor's instrumentation on a CPU training loop.

Runs the same loop (a 4-layer MLP, batch 64, in-memory data) with and without
``suanli.live.profiler.profile`` several times, interleaved, and prints the median step times
and the overhead. Target (issue 7): under 3% of step time.
Run: python benchmarks/bench_doctor_overhead.py
"""

from __future__ import annotations

import statistics
import time

import torch

from suanli.live.profiler import profile

STEPS = 60


def _loop(instrumented: bool, width: int) -> float:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters())
    data = torch.utils.data.TensorDataset(
        torch.randn(64 * STEPS, width), torch.randn(64 * STEPS, width)
    )
    loader = torch.utils.data.DataLoader(data, batch_size=64)

    def run() -> None:
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    start = time.perf_counter()
    if instrumented:
        with profile():
            run()
    else:
        run()
    return (time.perf_counter() - start) / STEPS


def main() -> None:
    torch.set_num_threads(1)
    for width in (256, 1024):
        plain, inst = [], []
        for _ in range(5):
            plain.append(_loop(False, width))
            inst.append(_loop(True, width))
        p, i = statistics.median(plain), statistics.median(inst)
        print(
            f"width {width}: step {p * 1e3:.2f} ms plain, {i * 1e3:.2f} ms instrumented, "
            f"overhead {100 * (i - p) / p:+.1f}%"
        )


if __name__ == "__main__":
    main()
