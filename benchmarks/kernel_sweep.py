"""Measure, on one card, every kernel figure the speed model reads, and fit its GEMM model.

One script for a short GPU session (about 7 minutes of an H200 with the default budget). It
measures with PyTorch and writes rows in the formats of the catalog's data files:

1. GEMMs: the four GEMMs of a decoder layer (fused QKV, attention output, fused gate+up, down)
   of four model shapes at tensor parallelism 1, 2, 4 and 8 (N or K sharded, as
   ``scripts/derive_kernel_profiles.py`` shards Vidur's profiles) and M from 1 to 8192 tokens,
   in bf16, fp16 and fp8 (``torch._scaled_mm``, compute capability 8.9 or newer), plus
   LoRA-rank GEMMs (rank 16 and 64). Median of the repeats, L2 flushed before each call.
2. Element-wise floors: RMSNorm-like, SiLU*mul, add and rotary-like ops written as plain torch
   ops (a known number of kernels each), at 1 to 4096 tokens of hidden 4096; on CUDA the calls
   are captured in a CUDA graph, so the time is the GPU's, not Python's launch overhead.
3. Memory bandwidth: a large device-to-device copy (2 x bytes per copy, BabelStream Copy).
4. Attention: ``scaled_dot_product_attention`` forward and backward, causal and not, head dim
   128, 32 heads, batch x seq = 16k tokens, bf16, per SDPA backend, in the FlashAttention FLOP
   convention of ``catalog/data/attention.toml``.
5. Decode attention: one query token per sequence against a KV cache (32 q / 8 kv heads,
   head dim 128), as a fraction of the card's peak HBM bandwidth (``decode_attention.toml``).

Then it fits ``compute_efficiency``, ``memory_efficiency`` and ``launch_s`` of
:class:`suanli.estimate.kernels.GemmModel` the way ``scripts/derive_kernel_profiles.py`` does (a
grid search minimising the median ``|log(predicted / measured)|``; that script's search is not
factored into a function, so it is repeated here, coarse then fine), and writes under ``--out``:

- ``kernels-<gpu>.toml``: a ``[[gemm]]`` row in ``kernels.toml``'s format (other dtypes' fits as
  comments), ``small_op_s`` from the element-wise floors;
- ``attention-<gpu>.toml`` and ``decode-<gpu>.toml``: ``[[attention]]`` / ``[[decode]]`` rows;
- ``sweep.json`` (every raw measurement) and ``sweep.md`` (a short human summary).

The files are rewritten after every group, so a run cut short still leaves what it measured. A
wall-clock budget (``--budget-s``) bounds the run: groups run cheapest first and each has a share
of the budget; the GEMMs take what is left. Nothing here changes GPU settings (clocks, power).

Run: ``python benchmarks/kernel_sweep.py --out DIR [--quick] [--device cuda|cpu] [--budget-s 420]
[--gpu NAME] [--peak-bw BYTES_PER_S] [--peak-flops FLOP_PER_S]``. ``--device cpu --quick`` runs
tiny shapes in seconds (the CI smoke test); its files are marked ``cpu``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
try:  # an installed suanli, else the checkout's
    import suanli  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT / "src"))

from suanli.estimate.kernels import PROFILE_BLEND as BLEND  # noqa: E402
from suanli.estimate.kernels import TILE, GemmModel, gemm_seconds  # noqa: E402

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


# ----------------------------------------------------------------------------- the groups


def torch_dtype(torch: Any, name: str) -> Any:
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]


def fp8_support(torch: Any, device: str) -> str | None:
    """None when fp8 GEMMs run here, else why not."""
    if device != "cuda":
        return "fp8 GEMMs need CUDA"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return "this torch has no torch._scaled_mm / float8_e4m3fn"
    if torch.cuda.get_device_capability(0) < (8, 9):
        return f"compute capability {torch.cuda.get_device_capability(0)} < 8.9"
    try:
        a = torch.zeros(16, 32, device="cuda").to(torch.float8_e4m3fn)
        b = torch.zeros(16, 32, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        torch.cuda.synchronize()
    except Exception as exc:  # any failure: skip the dtype cleanly
        return f"torch._scaled_mm failed: {str(exc)[:120]}"
    return None


def gemm_fn(torch: Any, device: str, dtype: str, m_max: int, n: int, k: int) -> Any:
    """A factory ``make(m)`` of zero-argument GEMM calls ``(m x k) @ (k x n)`` (weights laid out
    as ``nn.Linear``'s ``n x k``, so the call is ``x @ W.t()``)."""
    if dtype == "fp8":
        f8 = torch.float8_e4m3fn
        a = (torch.randn(m_max, k, device=device) * 0.1).to(f8)
        w = (torch.randn(n, k, device=device) * 0.1).to(f8)
        one = torch.tensor(1.0, device=device)

        def make8(m: int) -> Callable[[], Any]:
            x = a[:m]
            return lambda: torch._scaled_mm(
                x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
            )

        return make8
    dt = torch_dtype(torch, dtype)
    a = torch.randn(m_max, k, device=device, dtype=dt)
    w = torch.randn(n, k, device=device, dtype=dt)
    c = torch.empty(m_max, n, device=device, dtype=dt)

    def make(m: int) -> Callable[[], Any]:
        x, out = a[:m], c[:m]
        return lambda: torch.mm(x, w.t(), out=out)

    return make


def run_gemms(torch: Any, timer: Timer, plan: Plan, device: str, state: dict[str, Any]) -> None:
    rows: list[dict[str, Any]] = state["gemm"]
    fp8_why = fp8_support(torch, device)
    dtypes = [d for d in plan.dtypes if not (d == "fp8" and fp8_why)]
    if fp8_why and "fp8" in plan.dtypes:
        state["skipped"].append({"group": "gemm", "what": "fp8", "why": fp8_why})
        log(f"gemm fp8 skipped: {fp8_why}")
    m_max = max(plan.ms)
    jobs: list[tuple[str, Layer, int, str, int, int, bool]] = []
    for dtype in dtypes:
        for layer in plan.models:
            for tp in plan.tps:
                for kind, n, k in layer.gemms(tp):
                    jobs.append((dtype, layer, tp, kind, n, k, False))
        if dtype == dtypes[0]:  # LoRA adapters in the first dtype, TP 1
            for layer in plan.models[: plan.lora_models]:
                q_out = layer.heads * layer.head_dim
                for r in plan.lora_ranks:
                    jobs.append((dtype, layer, 1, f"lora_a_r{r}", r, layer.hidden, True))
                    jobs.append((dtype, layer, 1, f"lora_b_r{r}", q_out, r, True))
    group_t0, group_key = time.monotonic(), None
    for dtype, layer, tp, kind, n, k, lora in jobs:
        key = (dtype, layer.name, lora)
        if key != group_key:
            if group_key is not None:
                log(
                    f"gemm {group_key[0]} {group_key[1]}{' lora' if group_key[2] else ''}: done "
                    f"in {time.monotonic() - group_t0:.1f} s ({len(rows)} GEMMs so far)"
                )
            group_t0, group_key = time.monotonic(), key
        try:
            make = gemm_fn(torch, device, dtype, m_max, n, k)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:
            state["skipped"].append(
                {"group": "gemm", "what": f"{dtype} {n}x{k}", "why": str(exc)[:200]}
            )
            continue
        for m in plan.ms:
            try:
                seconds = timer.median(make(m))
            except (RuntimeError, torch.cuda.OutOfMemoryError) as exc:
                state["skipped"].append(
                    {"group": "gemm", "what": f"{dtype} {m}x{n}x{k}", "why": str(exc)[:200]}
                )
                continue
            rows.append(
                {
                    "dtype": dtype,
                    "model": layer.name,
                    "tp": tp,
                    "kind": kind,
                    "lora": lora,
                    "m": m,
                    "n": n,
                    "k": k,
                    "seconds": seconds,
                    "tflops": 2.0 * m * n * k / seconds / 1e12,
                }
            )
        del make
    if group_key is not None:
        log(
            f"gemm {group_key[0]} {group_key[1]}{' lora' if group_key[2] else ''}: done in "
            f"{time.monotonic() - group_t0:.1f} s ({len(rows)} GEMMs)"
        )


def small_ops(torch: Any, tokens: int, hidden: int, device: str) -> list[Any]:
    """(name, kernels, bytes moved, fn) of element-wise ops of a layer written as plain torch
    ops, each a known number of kernels in eager mode and in a CUDA graph."""
    dt = torch.bfloat16
    x = torch.randn(tokens, hidden, device=device, dtype=dt)
    y = torch.randn(tokens, hidden, device=device, dtype=dt)
    w = torch.randn(hidden, device=device, dtype=dt)
    half = hidden // 2
    cos = torch.randn(tokens, half, device=device, dtype=dt)
    sin = torch.randn(tokens, half, device=device, dtype=dt)
    e = x.numel() * x.element_size()

    def rmsnorm() -> Any:  # pow, mean, add, rsqrt, mul, mul
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def silu_mul() -> Any:  # silu, mul
        return torch.nn.functional.silu(x) * y

    def add() -> Any:  # add
        return x + y

    def rotary() -> Any:  # 4 mul, sub, add, cat
        x1, x2 = x[:, :half], x[:, half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    return [
        ("rmsnorm", 6, 2 * e, rmsnorm),
        ("silu_mul", 2, 3 * e, silu_mul),
        ("add", 1, 3 * e, add),
        ("rotary", 7, 3 * e, rotary),
    ]


def run_small_ops(torch: Any, timer: Timer, plan: Plan, device: str, state: dict[str, Any]) -> None:
    for tokens in plan.small_tokens:
        for name, kernels, moved, fn in small_ops(torch, tokens, plan.small_hidden, device):
            seconds, how = timer.graph_median(fn)
            state["small_ops"].append(
                {
                    "op": name,
                    "tokens": tokens,
                    "hidden": plan.small_hidden,
                    "kernels": kernels,
                    "seconds": seconds,
                    "seconds_per_kernel": seconds / kernels,
                    "bytes": moved,
                    "bytes_per_s": moved / seconds,
                    "timing": how,
                }
            )
        log(f"small ops at {tokens} tokens: done")


def run_bandwidth(torch: Any, timer: Timer, plan: Plan, device: str, state: dict[str, Any]) -> None:
    n = plan.copy_bytes // 4
    src = torch.ones(n, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    seconds = timer.median(lambda: dst.copy_(src), flush=False, warmup=3)
    state["bandwidth"] = {
        "bytes": 2 * plan.copy_bytes,
        "seconds": seconds,
        "bytes_per_s": 2 * plan.copy_bytes / seconds,
        "method": "dst.copy_(src), fp32, 2 x bytes per copy (BabelStream Copy)",
    }
    log(f"copy bandwidth: {2 * plan.copy_bytes / seconds / 1e9:.1f} GB/s")


def sdpa_context(torch: Any, backend: str) -> Any:
    if backend == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    which = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
    }[backend]
    return sdpa_kernel([which])


def _attention_times(
    torch: Any, timer: Timer, tensors: tuple[Any, Any, Any, Any], causal: bool
) -> tuple[float, float]:
    """Median seconds of the forward pass and of the backward pass alone."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v, dout = tensors

    def fwd() -> Any:
        with torch.no_grad():
            return sdpa(q, k, v, is_causal=causal)

    def forward_graph() -> Any:
        q.grad = k.grad = v.grad = None
        return sdpa(q, k, v, is_causal=causal)

    t_fwd = timer.median(fwd, flush=False)
    t_bwd = timer.median(lambda out: out.backward(dout), pre=forward_graph, flush=False)
    return t_fwd, t_bwd


def run_attention(torch: Any, timer: Timer, plan: Plan, device: str, state: dict[str, Any]) -> None:
    heads, d = plan.attn_heads, plan.attn_head_dim
    for backend in plan.attn_backends:
        failed = None
        for seq in plan.attn_seqs:
            batch = max(1, plan.attn_tokens // seq)
            shape = (batch, heads, seq, d)
            tensors = (
                *(
                    torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
                    for _ in range(3)
                ),
                torch.randn(shape, device=device, dtype=torch.bfloat16),
            )
            for causal in (False, True):
                flops = 4.0 * seq * seq * d * heads * batch / (2 if causal else 1)
                try:
                    with sdpa_context(torch, backend):
                        t_fwd, t_bwd = _attention_times(torch, timer, tensors, causal)
                except RuntimeError as exc:  # backend unavailable for this shape or card
                    why = str(exc).strip().splitlines()[0][:200] if str(exc) else "error"
                    what = f"{backend} seq {seq}{' causal' if causal else ''}"
                    state["skipped"].append({"group": "attention", "what": what, "why": why})
                    if not failed:
                        log(f"attention {backend}: {what} skipped ({why[:80]})")
                    failed = why
                    continue
                for phase, seconds, f in (
                    ("forward", t_fwd, flops),
                    ("backward", t_bwd, 2.5 * flops),
                ):
                    state["attention"].append(
                        {
                            "backend": backend,
                            "kernel": BACKEND_KERNEL[backend],
                            "pass": phase,
                            "causal": causal,
                            "head_dim": d,
                            "heads": heads,
                            "seq_len": seq,
                            "batch": batch,
                            "seconds": seconds,
                            "tflops": f / seconds / 1e12,
                        }
                    )
            del tensors
        log(f"attention {backend}: done{' (some shapes skipped)' if failed else ''}")


def run_decode(torch: Any, timer: Timer, plan: Plan, device: str, state: dict[str, Any]) -> None:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    hq, hkv, d = plan.dec_q_heads, plan.dec_kv_heads, plan.dec_head_dim
    for batch in plan.dec_batches:
        for context in plan.dec_contexts:
            q = torch.randn(batch, hq, 1, d, device=device, dtype=torch.bfloat16)
            k = torch.randn(batch, hkv, context, d, device=device, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            try:
                seconds = timer.median(lambda q=q, k=k, v=v: sdpa(q, k, v, enable_gqa=True))
            except TypeError:  # an older torch without enable_gqa: repeat the KV heads
                kr = k.repeat_interleave(hq // hkv, dim=1)
                vr = v.repeat_interleave(hq // hkv, dim=1)
                seconds = timer.median(lambda q=q, kr=kr, vr=vr: sdpa(q, kr, vr))
            kv_bytes = 2 * batch * context * hkv * d * 2
            state["decode"].append(
                {
                    "batch": batch,
                    "context": context,
                    "num_q_heads": hq,
                    "num_kv_heads": hkv,
                    "head_dim": d,
                    "seconds": seconds,
                    "kv_bytes": kv_bytes,
                    "bytes_per_s": kv_bytes / seconds,
                }
            )
            del q, k, v
        log(f"decode attention batch {batch}: done")


# ----------------------------------------------------------------------------- the fit


def fit_gemm(
    rows: list[dict[str, Any]], dtype_bytes: float, peak: float, bandwidth: float
) -> dict[str, Any] | None:
    """``scripts/derive_kernel_profiles.py``'s fit: the (e_c, e_m, launch) minimising the
    median ``|log(predicted / measured)|``; coarse grid, then a fine one around its best."""
    import numpy as np

    if not rows:
        return None
    m = np.array([r["m"] for r in rows], dtype=float)
    n = np.array([r["n"] for r in rows], dtype=float)
    k = np.array([r["k"] for r in rows], dtype=float)
    s = np.array([r["seconds"] for r in rows], dtype=float)
    half = len(rows) // 2

    def predict(ce: float, me: float, launch: float) -> Any:
        model = GemmModel(ce, me, launch, TILE, "fit", blend=BLEND)
        return gemm_seconds(
            m, n, k, dtype_bytes, peak, bandwidth, model, maximum=np.maximum, ceil=np.ceil
        )

    def score(ce: float, me: float, launch: float) -> float:
        return float(np.sort(np.abs(np.log(predict(ce, me, launch) / s)))[half])

    def search(ces: Any, mes: Any, launches: Any) -> tuple[float, float, float, float]:
        best = (math.inf, 1.0, 1.0, 0.0)
        for ce in ces:
            for me in mes:
                for launch in launches:
                    sc = score(float(ce), float(me), float(launch))
                    if sc < best[0]:
                        best = (sc, float(ce), float(me), float(launch))
        return best

    coarse_l = np.geomspace(0.5e-6, 500e-6, 25)
    _, ce0, me0, l0 = search(np.arange(0.05, 1.001, 0.05), np.arange(0.05, 1.001, 0.05), coarse_l)
    fine = np.arange(-0.05, 0.051, 0.01)
    ces = sorted({round(x, 2) for x in ce0 + fine if 0 < round(x, 2) <= 1})
    mes = sorted({round(x, 2) for x in me0 + fine if 0 < round(x, 2) <= 1})
    launches = sorted({float(f"{x:.2g}") for x in l0 * np.geomspace(0.6, 1.6, 11)})
    score_, ce, me, launch = search(ces, mes, launches)
    rel = np.sort(np.abs(predict(ce, me, launch) / s - 1))
    return {
        "compute_efficiency": ce,
        "memory_efficiency": me,
        "launch_s": float(f"{launch:.2g}"),
        "gemms": len(rows),
        "median_log_error": score_,
        "median_error": float(rel[half]),
        "p90_error": float(rel[int(len(rel) * 0.9)]),
        "peak_flops": peak,
        "bandwidth_bytes_per_s": bandwidth,
    }


def errors_of(rows: list[dict[str, Any]], fit: dict[str, Any], dtype_bytes: float) -> Any:
    model = GemmModel(
        fit["compute_efficiency"], fit["memory_efficiency"], fit["launch_s"], TILE, blend=BLEND
    )
    return sorted(
        abs(
            gemm_seconds(
                r["m"],
                r["n"],
                r["k"],
                dtype_bytes,
                fit["peak_flops"],
                fit["bandwidth_bytes_per_s"],
                model,
            )
            / r["seconds"]
            - 1
        )
        for r in rows
    )


def fit_all(state: dict[str, Any], card: dict[str, Any]) -> None:
    """Fit each measured dtype against the card's peaks (catalog or arguments; else the
    measured best GEMM rate and the copy bandwidth, and say so)."""
    fits: dict[str, Any] = {}
    for dtype in ("bf16", "fp16", "fp8"):
        rows = [r for r in state["gemm"] if r["dtype"] == dtype and not r["lora"]]
        if not rows:
            continue
        peak, peak_from = card["peak_flops"].get(dtype), card["peak_from"]
        if not peak:
            peak = max(r["tflops"] for r in rows) * 1e12
            peak_from = "the best measured GEMM rate (no catalog peak)"
        bw, bw_from = card["bandwidth"], card["bandwidth_from"]
        if not bw:
            copy = state.get("bandwidth") or {}
            bw = copy.get("bytes_per_s") or max(
                DTYPE_BYTES[dtype]
                * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
                / r["seconds"]
                for r in rows
            )
            bw_from = "the measured copy bandwidth (no catalog bandwidth)"
        fit = fit_gemm(rows, DTYPE_BYTES[dtype], peak, bw)
        if fit is None:
            continue
        fit.update(dtype=dtype, peak_from=peak_from, bandwidth_from=bw_from)
        lora = [r for r in state["gemm"] if r["dtype"] == dtype and r["lora"]]
        if lora:
            err = errors_of(lora, fit, DTYPE_BYTES[dtype])
            fit["lora_gemms"] = len(err)
            fit["lora_median_error"] = err[len(err) // 2]
        by_kind = {}
        for kind in sorted({r["kind"] for r in rows}):
            err = errors_of([r for r in rows if r["kind"] == kind], fit, DTYPE_BYTES[dtype])
            by_kind[kind] = err[len(err) // 2]
        fit["median_error_by_kind"] = by_kind
        fits[dtype] = fit
    state["fits"] = fits
    floors = [r["seconds_per_kernel"] for r in state["small_ops"]]
    if floors:
        fewest = min(r["tokens"] for r in state["small_ops"])
        at = [r["seconds_per_kernel"] for r in state["small_ops"] if r["tokens"] == fewest]
        state["small_op_s"] = statistics.median(at)
        state["small_op_tokens"] = fewest


# ----------------------------------------------------------------------------- the card


def resolve_card(args: argparse.Namespace, torch: Any, device: str) -> dict[str, Any]:
    """The catalog entry of the measured card (``--gpu``, else the CUDA device name), its
    peaks, and a file label."""
    from suanli.catalog import CatalogError, find_gpu, load_catalog

    catalog = load_catalog()
    gpu, device_name = None, "cpu"
    if device == "cuda":
        device_name = torch.cuda.get_device_name(0)
        with contextlib.suppress(Exception):  # NVML's name, when pynvml is installed
            import pynvml

            pynvml.nvmlInit()
            raw = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
            device_name = raw.decode() if isinstance(raw, bytes) else str(raw)
    if args.gpu and device == "cpu":
        log("--gpu is ignored with --device cpu: the rows describe this CPU")
    elif args.gpu:
        gpu = find_gpu(args.gpu, catalog)
    elif device == "cuda":
        gpu = _lookup_device(device_name, torch, catalog, find_gpu, CatalogError)
    peaks: dict[str, float] = {}
    peak_from = bw_from = ""
    bandwidth = None
    if gpu is not None:
        for dtype, order in (
            ("bf16", ("bf16", "fp16")),
            ("fp16", ("fp16", "bf16")),
            ("fp8", ("fp8",)),
        ):
            value = next((gpu.peak_flops(p) for p in order if gpu.peak_flops(p)), None)
            if value:
                peaks[dtype] = value
        peak_from = f"catalog dense peak of {gpu.id}"
        bandwidth, bw_from = gpu.memory_bandwidth_bytes_per_s, f"catalog bandwidth of {gpu.id}"
    if args.peak_flops:
        peaks = {"bf16": args.peak_flops, "fp16": args.peak_flops}
        peak_from = "--peak-flops"
    if args.peak_bw:
        bandwidth, bw_from = args.peak_bw, "--peak-bw"
    label = "cpu" if device == "cpu" else (gpu.id if gpu is not None else _slug(device_name))
    return {
        "label": label,
        "gpu_id": gpu.id if gpu is not None else label,
        "in_catalog": gpu is not None and device == "cuda",
        "device_name": device_name,
        "peak_flops": peaks,
        "peak_from": peak_from,
        "bandwidth": bandwidth,
        "bandwidth_from": bw_from,
    }


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split()) or "gpu"


def _lookup_device(name: str, torch: Any, catalog: Any, find_gpu: Any, error: Any) -> Any:
    """The catalog entry of a CUDA device name; an ambiguous or unknown name is narrowed by
    the device's memory size; None when nothing fits."""
    for query in (name, name.replace("NVIDIA", "").replace("GeForce", "").strip()):
        with contextlib.suppress(error):
            return find_gpu(query, catalog)
    total = torch.cuda.get_device_properties(0).total_memory
    words = [w for w in _slug(name).split("-") if w not in ("nvidia", "geforce")]
    near = [
        g
        for g in catalog
        if words
        and words[0] in _slug(g.id + " " + g.name)
        and abs(g.memory_bytes - total) < 0.12 * g.memory_bytes
    ]
    if len(near) == 1:
        return near[0]
    log(f"device {name!r} is not in the catalog: no fractions of its peaks")
    return None


# ----------------------------------------------------------------------------- the files


def q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def num(x: float, digits: int = 4) -> str:
    return repr(float(f"{x:.{digits}g}"))


def kernels_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card, fits = meta["card"], state.get("fits", {})
    lines = [
        f"# GEMM kernel model of {card['device_name']} ({meta['device']}), {SOURCE}",
        f"# on {meta['date']} (torch {meta['torch']}, CUDA {meta['cuda']}); see docs/bench.md.",
        f"# Peak: {card['peak_from'] or 'not in the catalog'}; "
        f"bandwidth: {card['bandwidth_from'] or 'not in the catalog'}.",
        f"# GEMM times: median of the repeats, {meta['gemm_timing']}.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    if meta.get("truncated"):
        lines.append(f"# The run was cut short by its budget: {', '.join(meta['truncated'])}.")
    primary = next((d for d in ("bf16", "fp16") if d in fits), None)
    if primary is None:
        lines.append("# No GEMM was measured: no fit.")
        return "\n".join(lines) + "\n"
    fit = fits[primary]
    models = sorted({r["model"] for r in state["gemm"] if r["dtype"] == primary and not r["lora"]})
    source = f"{SOURCE} on {card['device_name']}, {primary}, torch {meta['torch']}"
    lines += [
        f"# Fitted on {fit['gemms']} {primary} GEMMs (4 per layer, TP {meta['tps']}, M "
        f"{meta['ms'][0]}-{meta['ms'][-1]}) against peak {fit['peak_flops']:.4g} FLOP/s "
        f"({fit['peak_from']}) and bandwidth {fit['bandwidth_bytes_per_s']:.4g} B/s "
        f"({fit['bandwidth_from']}).",
        "",
        "[[gemm]]",
        f"gpu_id = {q(card['gpu_id'])}",
        f"precision = {q(primary)}",
    ]
    if "small_op_s" in state:
        lines.append(
            f"small_op_s = {state['small_op_s']:.2g}  # median per-kernel time of the element-wise "
            f"ops at {state['small_op_tokens']} token(s) ({meta['small_op_timing']})"
        )
    lines += [
        f"compute_efficiency = {fit['compute_efficiency']}",
        f"memory_efficiency = {fit['memory_efficiency']}",
        f"launch_s = {fit['launch_s']:.2g}",
        f"tile = {TILE}",
        f"blend = {BLEND}",
        f"gemms = {fit['gemms']}",
        f"median_error = {fit['median_error']:.3f}",
        f"p90_error = {fit['p90_error']:.3f}",
        f"models = {q(', '.join(models))}",
        f"date = {q(meta['date'])}",
        f"source = {q(source)}",
        "",
    ]
    for dtype, other in fits.items():
        lora = (
            f", LoRA {other['lora_gemms']} GEMMs median |error| {other['lora_median_error']:.1%}"
            if "lora_gemms" in other
            else ""
        )
        lines.append(
            f"# {dtype}: compute_efficiency {other['compute_efficiency']}, memory_efficiency "
            f"{other['memory_efficiency']}, launch_s {other['launch_s']:.2g}; {other['gemms']} "
            f"GEMMs, median |error| {other['median_error']:.1%}, p90 {other['p90_error']:.1%}{lora}"
        )
    return "\n".join(lines) + "\n"


def attention_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    lines = [
        f"# Attention kernels of {card['device_name']}, {SOURCE} on {meta['date']} (torch "
        f"{meta['torch']}): torch SDPA per backend, bf16, FlashAttention FLOP convention.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    for r in state["attention"]:
        vendored = " (the FlashAttention-2 kernels vendored in torch)"
        note = (
            f"torch {meta['torch']} scaled_dot_product_attention, {r['backend']} backend"
            f"{vendored if r['backend'] == 'flash' else ''}, "
            f"batch {r['batch']} x seq {r['seq_len']}, {r['heads']} heads; median of the repeats "
            f"({meta['clock']}; backward timed alone after an untimed forward)"
        )
        lines += [
            "",
            "[[attention]]",
            f"kernel = {q(r['kernel'])}",
            f"gpu_id = {q(card['gpu_id'])}",
            'dtype = "bf16"',
            f"pass = {q(r['pass'])}",
            f"causal = {'true' if r['causal'] else 'false'}",
            f"head_dim = {r['head_dim']}",
            f"seq_len = {r['seq_len']}",
            f"tflops = {num(r['tflops'])}",
            f"source = {q(f'{SOURCE} on ' + card['device_name'])}",
            f"date = {q(meta['date'])}",
            f"note = {q(note)}",
        ]
    return "\n".join(lines) + "\n"


def decode_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    bw = card["bandwidth"]
    lines = [
        f"# Decode attention of {card['device_name']}, {SOURCE} on {meta['date']} (torch "
        f"{meta['torch']}): one query token per sequence, contiguous KV, {meta['clock']}"
        f"{', L2 flushed before each call' if meta['device'] == 'cuda' else ''}; "
        "bytes = the KV cache read, 2 * batch * context * kv_heads * head_dim * 2.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    if not bw:
        lines.append(
            "# No peak bandwidth (not in the catalog, no --peak-bw): no utilization, no rows."
        )
        for r in state["decode"]:
            lines.append(
                f"# batch {r['batch']} context {r['context']}: {r['bytes_per_s'] / 1e9:.3g} GB/s"
            )
        return "\n".join(lines) + "\n"
    lines.append(f"# Peak bandwidth {bw:.4g} B/s ({card['bandwidth_from']}).")
    for r in state["decode"]:
        util = r["bytes_per_s"] / bw
        if not 0 < util <= 1:
            lines.append(
                f"# batch {r['batch']} context {r['context']}: utilization {util:.3f} is outside "
                "(0, 1] (cache effects?); left out"
            )
            continue
        note = (
            f"torch {meta['torch']} scaled_dot_product_attention (default backend, enable_gqa), "
            f"q of shape (batch, heads, 1, head_dim), median of the repeats, "
            f"{r['seconds'] * 1e6:.1f} us"
        )
        lines += [
            "",
            "[[decode]]",
            'kernel = "torch-sdpa"',
            f"gpu_id = {q(card['gpu_id'])}",
            'dtype = "bf16"',
            f"batch = {r['batch']}",
            f"context = {r['context']}",
            f"num_q_heads = {r['num_q_heads']}",
            f"num_kv_heads = {r['num_kv_heads']}",
            f"head_dim = {r['head_dim']}",
            f"bandwidth_utilization = {num(util, 3)}",
            f"source = {q(f'{SOURCE} on ' + card['device_name'])}",
            f"date = {q(meta['date'])}",
            f"note = {q(note)}",
        ]
    return "\n".join(lines) + "\n"


def sweep_md(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    out = [
        f"# Kernel sweep: {card['device_name']} ({card['gpu_id']})",
        "",
        f"{meta['date']}, torch {meta['torch']}, CUDA {meta['cuda']}, device {meta['device']}, "
        f"{'quick' if meta['quick'] else 'full'}, {meta['elapsed_s']:.0f} s of a "
        f"{meta['budget_s']:.0f} s budget"
        + (f"; cut short: {', '.join(meta['truncated'])}" if meta.get("truncated") else ""),
        "",
        "## GEMM fit",
        "",
        "| dtype | GEMMs | e_c | e_m | launch | median err | p90 err | by kind | LoRA err |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dtype, f in state.get("fits", {}).items():
        kinds = ", ".join(f"{k} {v:.0%}" for k, v in f["median_error_by_kind"].items())
        lora = f"{f['lora_median_error']:.1%}" if "lora_median_error" in f else "-"
        out.append(
            f"| {dtype} | {f['gemms']} | {f['compute_efficiency']} | {f['memory_efficiency']} | "
            f"{f['launch_s'] * 1e6:.1f} us | {f['median_error']:.1%} | {f['p90_error']:.1%} | "
            f"{kinds} | {lora} |"
        )
    best: dict[str, float] = {}
    for r in state["gemm"]:
        best[r["dtype"]] = max(best.get(r["dtype"], 0.0), r["tflops"])
    if best:
        out += ["", "Best GEMM rate: " + ", ".join(f"{d} {t:.4g} TFLOP/s" for d, t in best.items())]
    if state["small_ops"]:
        out += ["", "## Element-wise ops (us per kernel)", ""]
        tokens = sorted({r["tokens"] for r in state["small_ops"]})
        out += ["| op | " + " | ".join(f"{t} tok" for t in tokens) + " |"]
        out += ["|---" * (len(tokens) + 1) + "|"]
        for op in dict.fromkeys(r["op"] for r in state["small_ops"]):
            cells = {
                r["tokens"]: f"{r['seconds_per_kernel'] * 1e6:.2f}"
                for r in state["small_ops"]
                if r["op"] == op
            }
            out.append(f"| {op} | " + " | ".join(cells.get(t, "-") for t in tokens) + " |")
        if "small_op_s" in state:
            out += ["", f"small_op_s = {state['small_op_s'] * 1e6:.2f} us"]
    if state.get("bandwidth"):
        bw = state["bandwidth"]["bytes_per_s"]
        frac = f" ({bw / card['bandwidth']:.0%} of peak)" if card["bandwidth"] else ""
        out += ["", f"## Copy bandwidth: {bw / 1e9:.1f} GB/s{frac}"]
    if state["attention"]:
        out += ["", "## Attention (TFLOP/s)", "", "| kernel | pass | causal | seq | TFLOP/s |"]
        out += ["|---|---|---|---|---|"]
        for r in state["attention"]:
            out.append(
                f"| {r['kernel']} | {r['pass']} | {r['causal']} | {r['seq_len']} | "
                f"{r['tflops']:.4g} |"
            )
    if state["decode"]:
        out += ["", "## Decode attention", "", "| batch | context | us | GB/s | of peak |"]
        out += ["|---|---|---|---|---|"]
        for r in state["decode"]:
            frac = f"{r['bytes_per_s'] / card['bandwidth']:.0%}" if card["bandwidth"] else "-"
            out.append(
                f"| {r['batch']} | {r['context']} | {r['seconds'] * 1e6:.1f} | "
                f"{r['bytes_per_s'] / 1e9:.3g} | {frac} |"
            )
    if state["skipped"]:
        out += ["", "## Skipped", ""] + [
            f"- {s['group']} {s['what']}: {s['why']}" for s in state["skipped"][:40]
        ]
    return "\n".join(out) + "\n"


def write_all(out: Path, state: dict[str, Any], meta: dict[str, Any]) -> None:
    fitted = (len(state["gemm"]), len(state["small_ops"]), bool(state["bandwidth"]))
    if fitted != meta.get("fitted"):  # the fit takes a second or two on a full sweep
        fit_all(state, meta["card"])
        meta["fitted"] = fitted
    meta["elapsed_s"] = time.monotonic() - meta["t0"]
    label = meta["card"]["label"]
    public = {k: v for k, v in meta.items() if k != "t0"}
    files = {
        f"kernels-{label}.toml": kernels_toml(state, meta),
        f"attention-{label}.toml": attention_toml(state, meta),
        f"decode-{label}.toml": decode_toml(state, meta),
        "sweep.json": json.dumps({"meta": public, **state}, indent=1, default=str) + "\n",
        "sweep.md": sweep_md(state, meta),
    }
    for name, text in files.items():
        tmp = out / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / name)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for the result files")
    ap.add_argument("--quick", action="store_true", help="fewer and (on the CPU) tiny shapes")
    ap.add_argument("--device", choices=["cuda", "cpu"], default=None)
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-clock budget, seconds")
    ap.add_argument("--gpu", help="catalog name of the card (default: the CUDA device name)")
    ap.add_argument("--peak-bw", type=float, help="peak memory bandwidth, bytes/s")
    ap.add_argument("--peak-flops", type=float, help="dense 16-bit peak, FLOP/s")
    ap.add_argument("--warmup-s", type=float, default=None, help="GPU warm-up (default 3, 1 quick)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        import torch
    except ImportError:
        log("needs PyTorch (pip install torch)")
        return 1
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        log("--device cuda but torch sees no CUDA device")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(device, args.quick)
    card = resolve_card(args, torch, device)
    meta: dict[str, Any] = {
        "t0": t0,
        "date": datetime.date.today().isoformat(),
        "device": device,
        "quick": args.quick,
        "budget_s": args.budget_s,
        "torch": torch.__version__.split("+")[0],
        "cuda": torch.version.cuda if device == "cuda" else "none",
        "card": card,
        "tps": plan.tps,
        "ms": plan.ms,
        "models": [m.__dict__ for m in plan.models],
        "small_op_timing": "CUDA graph replay" if device == "cuda" else "back-to-back CPU calls",
        "clock": "CUDA events" if device == "cuda" else "time.perf_counter",
        "gemm_timing": "CUDA events, L2 flushed before each call"
        if device == "cuda"
        else "time.perf_counter",
        "truncated": [],
        "settings": "GPU clocks and power limits untouched",
    }
    state: dict[str, Any] = {
        "gemm": [],
        "small_ops": [],
        "bandwidth": None,
        "attention": [],
        "decode": [],
        "skipped": [],
    }
    log(f"{card['device_name']} -> {card['gpu_id']}; budget {args.budget_s:.0f} s; out {args.out}")
    timer = Timer(torch, device, plan, t0 + args.budget_s)
    if device == "cuda":  # a cold GPU clocks differently: run matmuls for a few seconds
        warm = args.warmup_s if args.warmup_s is not None else (1.0 if args.quick else 3.0)
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        end = time.monotonic() + min(warm, 0.05 * args.budget_s)
        while time.monotonic() < end:
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
        del a
    groups: list[tuple[str, Callable[..., None]]] = [
        ("bandwidth", run_bandwidth),
        ("small_ops", run_small_ops),
        ("decode", run_decode),
        ("attention", run_attention),
        ("gemm", run_gemms),
    ]
    for name, run in groups:
        g0 = time.monotonic()
        log(f"{name}: start ({g0 - t0:.0f} s elapsed)")
        try:
            with timer.group(GROUP_SHARE.get(name), args.budget_s):
                run(torch, timer, plan, device, state)
        except OutOfTime:
            meta["truncated"].append(name)
            log(f"{name}: out of time, keeping what was measured")
        except Exception as exc:  # a failing group must not lose the others
            meta["truncated"].append(name)
            state["skipped"].append({"group": name, "what": "group", "why": repr(exc)[:300]})
            log(f"{name}: failed ({exc!r:.200}); keeping what was measured")
        if device == "cuda":
            torch.cuda.empty_cache()
        write_all(args.out, state, meta)
        log(f"{name}: {time.monotonic() - g0:.1f} s; files written to {args.out}")
    fits = state.get("fits", {})
    for dtype, f in fits.items():
        log(
            f"fit {dtype}: e_c {f['compute_efficiency']} e_m {f['memory_efficiency']} launch "
            f"{f['launch_s'] * 1e6:.1f} us, median |error| {f['median_error']:.1%}, "
            f"p90 {f['p90_error']:.1%}"
        )
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
