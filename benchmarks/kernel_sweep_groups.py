"""The measurement groups of ``kernel_sweep.py``: GEMMs by shape and dtype, element-wise
floors, memory bandwidth, SDPA attention forward and backward per backend, and decode attention
against a KV cache. Each appends its raw rows to the run's ``state``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from kernel_sweep_plan import (
    BACKEND_KERNEL,
    Layer,
    Plan,
    Timer,
    log,
)


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
