"""Overhead of the training-loop doctor's instrumentation on a CPU training loop.

Runs the same loop (a 4-layer MLP, batch 64, in-memory data) with and without
``suanli.live.profiler.profile`` several times, interleaved, and prints the median and the
fastest step times and the overhead, as a share of the step and in microseconds per step (the
narrow model shows the hooks' own cost; the wide one, a realistic step). Target (issue 7): under
3% of step time. On the CPU the profiler reads ``time.perf_counter``; on CUDA it records events
(issue 22), whose cost a GPU host shows with the same script.
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


def _bookkeeping_us(steps: int = 20_000) -> float:
    """The profiler's own work per step, in microseconds: its hooks called directly around
    empty steps (no model), so the machine's load hardly moves the figure."""
    module, x = torch.nn.Identity(), torch.zeros(1)
    with profile() as rec:
        batches = rec.wrap_iterator(iter([(x, x)] * steps))
        start = time.perf_counter()
        for _batch in batches:
            rec.forward_pre(module, (x,))
            rec.forward_post(module, (x,), x)
            rec.optimizer_pre(None, (), {})
            rec.optimizer_post(None, (), {})
        elapsed = time.perf_counter() - start
    return elapsed / steps * 1e6


def main() -> None:
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, CUDA {'yes' if torch.cuda.is_available() else 'no'}")
    costs = sorted(_bookkeeping_us() for _ in range(5))
    print(f"bookkeeping per step: {costs[0]:.1f} us fastest, {costs[2]:.1f} us median of 5")
    for width, repeats in ((32, 15), (256, 9), (1024, 5)):
        plain, inst = [], []
        for _ in range(repeats):
            plain.append(_loop(False, width))
            inst.append(_loop(True, width))
        for name, pick in (("median", statistics.median), ("fastest", min)):
            p, i = pick(plain), pick(inst)
            print(
                f"width {width} ({name} of {repeats}): step {p * 1e3:.3f} ms plain, "
                f"{i * 1e3:.3f} ms instrumented, overhead {100 * (i - p) / p:+.1f}% "
                f"({(i - p) * 1e6:+.0f} us per step)"
            )


if __name__ == "__main__":
    main()
