"""What ``kernel_sweep.py`` measures and how it times it: the layer shapes and token counts of
the GEMM sweep (:func:`make_plan`), each group's share of the budget, and the :class:`Timer`
(CUDA events with the L2 flushed, or ``time.perf_counter`` on the CPU) that stops a group when
its time is spent."""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: The ``source`` every row written says.
SOURCE = "measured by benchmarks/kernel_sweep.py"
MiB = 1 << 20


@dataclass(frozen=True)
class Layer:
    """The linear-layer shape of one decoder layer."""

    name: str
    hidden: int
    inter: int
    heads: int
    kv_heads: int
    head_dim: int

    def gemms(self, tp: int) -> list[tuple[str, int, int]]:
        """(kind, N, K) of the four GEMMs at tensor parallelism ``tp`` (N or K sharded)."""
        h, d = self.hidden, self.head_dim
        return [
            ("qkv", (self.heads + 2 * self.kv_heads) * d // tp, h),
            ("o", h, self.heads * d // tp),
            ("gate_up", 2 * self.inter // tp, h),
            ("down", h, self.inter // tp),
        ]


GPU_MODELS = [
    Layer("llama-3.2-1b", 2048, 8192, 32, 8, 64),
    Layer("llama-3-8b", 4096, 14336, 32, 8, 128),
    Layer("qwen2.5-32b", 5120, 27648, 40, 8, 128),
    Layer("llama-2-70b", 8192, 28672, 64, 8, 128),
]


GPU_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]


@dataclass(frozen=True)
class Plan:
    """What one run measures."""

    models: list[Layer]
    tps: list[int]
    ms: list[int]
    dtypes: list[str]
    lora_ranks: list[int]
    lora_models: int
    small_tokens: list[int]
    small_hidden: int
    copy_bytes: int
    attn_heads: int
    attn_head_dim: int
    attn_tokens: int
    attn_seqs: list[int]
    attn_backends: list[str]
    dec_q_heads: int
    dec_kv_heads: int
    dec_head_dim: int
    dec_contexts: list[int]
    dec_batches: list[int]
    reps: tuple[int, int]
    target_s: float
    graph_calls: int


def make_plan(device: str, quick: bool) -> Plan:
    if device == "cpu":
        tiny = Layer("cpu-tiny", 256, 512, 4, 2, 64)
        small = Layer("cpu-small", 1024, 2816, 16, 4, 64)
        return Plan(
            models=[tiny] if quick else [tiny, small],
            tps=[1, 2] if quick else [1, 2, 4],
            ms=[1, 8, 64, 256] if quick else [1, 4, 16, 64, 256, 1024],
            dtypes=["bf16", "fp16", "fp8"],  # fp8 is skipped, and says why
            lora_ranks=[16, 64],
            lora_models=1,
            small_tokens=[1, 16, 256],
            small_hidden=512 if quick else 4096,
            copy_bytes=(32 if quick else 256) * MiB,
            attn_heads=2,
            attn_head_dim=64,
            attn_tokens=256 if quick else 2048,
            attn_seqs=[64, 128] if quick else [128, 256, 512],
            attn_backends=["default"],
            dec_q_heads=4,
            dec_kv_heads=2,
            dec_head_dim=64,
            dec_contexts=[64, 256] if quick else [256, 1024, 4096],
            dec_batches=[1, 4] if quick else [1, 16],
            reps=(2, 5) if quick else (3, 10),
            target_s=0.01 if quick else 0.05,
            graph_calls=10,
        )
    return Plan(
        models=[GPU_MODELS[1], GPU_MODELS[3]] if quick else GPU_MODELS,
        tps=[1, 2, 4, 8],
        ms=[1, 16, 128, 1024, 4096] if quick else GPU_M,
        dtypes=["bf16", "fp16", "fp8"],
        lora_ranks=[16, 64],
        lora_models=1 if quick else 2,
        small_tokens=[1, 16, 256, 4096],
        small_hidden=4096,
        copy_bytes=(512 if quick else 2048) * MiB,
        attn_heads=32,
        attn_head_dim=128,
        attn_tokens=16384,
        attn_seqs=[512, 2048, 8192] if quick else [512, 1024, 2048, 4096, 8192],
        attn_backends=["flash", "cudnn"] if quick else ["flash", "cudnn", "efficient"],
        dec_q_heads=32,
        dec_kv_heads=8,
        dec_head_dim=128,
        dec_contexts=[256, 1024, 4096, 16384],
        dec_batches=[1, 16, 64],
        reps=(5, 20) if quick else (5, 40),
        target_s=0.02 if quick else 0.05,
        graph_calls=20,
    )


#: Kernel id of each SDPA backend in the attention rows. SDPA's flash backend runs the
#: FlashAttention-2 kernels vendored in PyTorch, and "cudnn" is attention.toml's id of SDPA's
#: cuDNN backend, so a merged card gets rows of the kernel the model picks by default (flash2).
BACKEND_KERNEL = {
    "default": "torch-sdpa",
    "flash": "flash2",
    "cudnn": "cudnn",
    "efficient": "torch-mem-efficient",
}


#: Share of the budget each group may use at most (the GEMMs take what is left).
GROUP_SHARE = {"bandwidth": 0.05, "small_ops": 0.08, "decode": 0.10, "attention": 0.17}


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


class OutOfTime(Exception):
    """The group's or the run's time is spent."""


def log(msg: str) -> None:
    print(f"[kernel_sweep] {msg}", file=sys.stderr, flush=True)


class Timer:
    """Median seconds of a call: CUDA events (L2 flushed before each timed call) on CUDA,
    ``time.perf_counter`` on the CPU. Every measurement checks the deadline first."""

    def __init__(self, torch: Any, device: str, plan: Plan, deadline: float) -> None:
        self.torch = torch
        self.cuda = device == "cuda"
        self.plan = plan
        self.run_deadline = deadline
        self.deadline = deadline
        self.flush_buf: Any = None
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            l2 = int(getattr(props, "L2_cache_size", 0) or 50 * MiB)
            self.flush_buf = torch.empty(max(2 * l2, 256 * MiB), dtype=torch.int8, device="cuda")

    @contextlib.contextmanager
    def group(self, share: float | None, budget_s: float) -> Iterator[None]:
        """Bound a group to ``share`` of the budget (None: what is left of the run)."""
        self.deadline = self.run_deadline
        if share is not None:
            self.deadline = min(self.run_deadline, time.monotonic() + share * budget_s)
        try:
            yield
        finally:
            self.deadline = self.run_deadline

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _one(self, fn: Callable[..., Any], pre: Callable[[], Any] | None, flush: bool) -> Any:
        arg = pre() if pre is not None else None
        if self.cuda:
            if flush and self.flush_buf is not None:
                self.flush_buf.zero_()
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            fn(arg) if pre is not None else fn()
            end.record()
            return (start, end)
        t0 = time.perf_counter()
        fn(arg) if pre is not None else fn()
        return time.perf_counter() - t0

    def _seconds(self, marks: list[Any]) -> list[float]:
        if self.cuda:
            self.sync()
            return [s.elapsed_time(e) / 1e3 for s, e in marks]
        return list(marks)

    def median(
        self,
        fn: Callable[..., Any],
        *,
        pre: Callable[[], Any] | None = None,
        flush: bool = True,
        warmup: int = 2,
    ) -> float:
        """Median seconds per call of ``fn`` (``fn(pre())`` when ``pre`` is given, ``pre``
        untimed); the number of calls is sized to the plan's target time per shape."""
        if self.left() <= 0:
            raise OutOfTime
        for _ in range(warmup):
            fn(pre()) if pre is not None else fn()
        probe = self._seconds([self._one(fn, pre, flush)])[0]
        lo, hi = self.plan.reps
        reps = max(lo, min(hi, int(self.plan.target_s / max(probe, 1e-7))))
        if probe * reps > self.left():
            raise OutOfTime
        marks = [self._one(fn, pre, flush) for _ in range(reps)]
        return statistics.median(self._seconds(marks))

    def _replays(self, replay: Callable[[], Any], batch: int = 10, rounds: int = 5) -> float:
        """Median over ``rounds`` of the seconds per call of ``batch`` back-to-back calls
        between one pair of events (so the gap before the first launch is amortised)."""
        torch = self.torch
        for _ in range(3):
            replay()
        self.sync()
        marks = []
        for _ in range(rounds):
            if self.left() <= 0:
                raise OutOfTime
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(batch):
                replay()
            end.record()
            marks.append((start, end))
        return statistics.median(self._seconds(marks)) / batch

    def graph_median(self, fn: Callable[[], Any]) -> tuple[float, str]:
        """Seconds per call of a short ``fn`` with the launch overhead of Python removed: on
        CUDA ``graph_calls`` calls are captured in one CUDA graph and replayed (eager
        back-to-back calls if capture fails); on the CPU back-to-back calls."""
        torch, n = self.torch, self.plan.graph_calls
        if self.left() <= 0:
            raise OutOfTime

        def many() -> None:
            for _ in range(n):
                fn()

        if self.cuda:
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        fn()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    many()
                return self._replays(graph.replay) / n, "cuda-graph"
            except Exception as exc:  # capture not possible (an op that cannot be captured)
                log(f"CUDA graph capture failed ({str(exc)[:80]}); timing eager calls")
                self.sync()
                return self.median(many, flush=False) / n, "eager"
        return self.median(many, flush=False) / n, "cpu"
