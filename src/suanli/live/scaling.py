"""Multi-process scaling: the same training step on 1 and N processes, measured and predicted.

Each run spawns ranks with ``torch.multiprocessing`` and a ``torch.distributed`` process group
(gloo on the CPU, NCCL on GPUs) over 127.0.0.1, trains a small MLP with DistributedDataParallel
for a few steps at the same per-rank batch (weak scaling), and times the steps. The N-rank run
also times a bare all-reduce of the gradient buffer, which gives the link's measured bus
bandwidth; the speed model's data-parallel rule (the all-reduce overlapping 90% of the last
backward, docs/speed.md) then predicts the N-rank step from the 1-rank step. Bounded in time.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from suanli.i18n import N_
from suanli.live.allreduce_timing import time_allreduce
from suanli.live.bench.collectives import free_port


@dataclass(frozen=True)
class ScalingResult:
    """One-rank vs N-rank step times and the prediction."""

    processes: int
    backend: str
    params: int
    step_1_s: float
    step_n_s: float
    allreduce_s: float
    """A bare all-reduce of the gradient buffer on N ranks."""
    predicted_step_n_s: float

    @property
    def speedup(self) -> float:
        """Throughput of N ranks over one (same per-rank batch)."""
        return step_speedup(self.processes, self.step_1_s, self.step_n_s)

    @property
    def efficiency(self) -> float:
        """Speed-up per rank."""
        return self.speedup / self.processes

    @property
    def communication_share(self) -> float:
        """The N-rank step's time beyond the one-rank step, as a share of it."""
        return communication_share(self.step_1_s, self.step_n_s)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the cause in one line."""
        cause = share_cause(self.communication_share)
        return {
            "processes": self.processes,
            "backend": self.backend,
            "params": self.params,
            "step_1_s": self.step_1_s,
            "step_n_s": self.step_n_s,
            "allreduce_s": self.allreduce_s,
            "predicted_step_n_s": self.predicted_step_n_s,
            "prediction_error": self.predicted_step_n_s / self.step_n_s - 1,
            "speedup": self.speedup,
            "efficiency": self.efficiency,
            "communication_share": self.communication_share,
            "cause": cause,
        }


def step_speedup(n: int, step_1_s: float, step_n_s: float) -> float:
    """Throughput of ``n`` workers (ranks or nodes) over one, at the same per-worker batch."""
    return n * step_1_s / step_n_s


def communication_share(step_1_s: float, step_n_s: float) -> float:
    """The N-worker step's time beyond the one-worker step, as a share of it."""
    return max(step_n_s - step_1_s, 0.0) / step_n_s


#: Above this communication share the all-reduce is called the cause.
COMMUNICATION_BOUND_SHARE = 0.3


def share_cause(share: float) -> str:
    """The cause in one line from the communication share of the N-rank step."""
    if share > COMMUNICATION_BOUND_SHARE:
        return N_("communication: the gradient all-reduce does not hide behind the backward pass")
    return N_("scales well: communication is mostly hidden")


def build_mlp(hidden: int, layers: int, device: Any) -> Any:
    """The scaling checks' model: ``layers`` square Linear + ReLU blocks on ``device``."""
    import torch

    mods: list[Any] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods).to(device)


def time_ddp_steps(
    model: Any, batch: int, hidden: int, steps: int, device: Any, group: Any = None
) -> float:
    """Median seconds of a DistributedDataParallel SGD step over ``group`` (default: the whole
    world), the first two steps (bucket set-up, allocator warm-up) left out."""
    import torch

    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(batch, hidden, device=device)
    on_gpu = device.type == "cuda"
    times = []
    for _ in range(steps):
        if on_gpu:
            torch.cuda.synchronize()
        start = time.perf_counter()
        loss = ddp(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if on_gpu:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:] or times)


def predicted_step_s(step_alone_s: float, allreduce_s: float) -> float:
    """The speed model's data-parallel rule (docs/speed.md): buckets reduce during the backward
    pass (2/3 of the step) and hide 90% of it; the rest of the gradient all-reduce adds to the
    step measured without the other ranks."""
    from suanli.estimate.data_parallel import DP_OVERLAP

    return step_alone_s + max(0.0, allreduce_s - DP_OVERLAP * step_alone_s * 2 / 3)


def _worker(
    rank: int, world: int, port: int, hidden: int, layers: int, batch: int, steps: int, queue: Any
) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    dist.init_process_group(backend, rank=rank, world_size=world)
    device = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    torch.manual_seed(rank)
    model = build_mlp(hidden, layers, device)
    step_s = time_ddp_steps(model, batch, hidden, steps, device)
    params = sum(p.numel() for p in model.parameters())
    buf = torch.zeros(params, device=device)
    allreduce_s = time_allreduce(buf, warmup=1, target_s=0.2).seconds
    if rank == 0:
        queue.put(
            {
                "step_s": step_s,
                "params": params,
                "allreduce_s": allreduce_s,
                "backend": backend,
            }
        )
    # Leave together, and without C++ teardown: gloo's threads can abort a rank that destroys
    # its process group (or exits the interpreter) while the peer's connection is still closing
    # ("terminate called without an active exception", about one run in ten). The result is
    # already in the queue; the OS reclaims the rest.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _run(world: int, hidden: int, layers: int, batch: int, steps: int) -> dict[str, Any]:
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import start_processes

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    # torch.multiprocessing re-exports it without annotations: typed by its own module.
    start_processes(  # type: ignore[no-untyped-call]
        _worker,
        args=(world, port, hidden, layers, batch, steps, queue),
        nprocs=world,
        join=True,
        start_method="spawn",
    )
    result: dict[str, Any] = queue.get()
    return result


def measure_scaling(
    processes: int = 2, hidden: int = 1024, layers: int = 4, batch: int = 16, steps: int = 12
) -> ScalingResult:
    """Run the step on 1 and ``processes`` ranks; predict the N-rank step from the 1-rank one."""
    if processes < 2:
        raise ValueError(N_("--procs must be at least 2 to measure scaling"))
    one = _run(1, hidden, layers, batch, steps)
    many = _run(processes, hidden, layers, batch, steps)
    return ScalingResult(
        processes,
        many["backend"],
        many["params"],
        one["step_s"],
        many["step_s"],
        many["allreduce_s"],
        predicted_step_s(one["step_s"], many["allreduce_s"]),
    )
