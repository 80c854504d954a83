"""Serving capacity: a discrete-event simulation of LLM serving replicas, and SLO-based sizing.

One replica is a tensor-parallel group of GPUs running an inference engine. The engine works in
iterations (forward passes). An iteration processes the prefill tokens scheduled in it and one
decode token for every running sequence; its time comes from the roofline of the speed model
(:mod:`suanli.estimate.perf`), per op class, classes one after another:

- the linear layers (GEMMs): ``max(tokens x FLOPs per token / matmul FLOP/s, weight bytes /
  bandwidth)``, with the LM head only for tokens that produce logits (decode tokens, the last
  prompt chunk);
- attention: ``max(attention FLOPs / matmul FLOP/s, KV bytes read and written / bandwidth)``;
- the non-matmul ops (fused norms, activation, RoPE; the logits the sampler reads): memory
  traffic / bandwidth (:func:`elementwise_bytes_per_token`);
- the tensor-parallel all-reduces (2 per layer, :func:`suanli.estimate.comm.all_reduce_s`);
- an optional fixed per-iteration overhead (``step_overhead_s``, 0 by default).

A single ``max`` over the whole iteration would let the attention's KV reads hide behind the
GEMMs' compute, which kernels that run one after another do not do.

Per-GPU quantities are used (weights and KV heads split over TP, FLOPs divided by TP), which is
``max(FLOPs / (F x tp), bytes / (B x tp))`` with the replication of KV heads when ``tp > n_kv``.
Everything per token is computed once (:class:`ReplicaCost`), so an iteration costs a few
arithmetic operations; a run of decode-only iterations with nothing to schedule is summed in
closed form (the KV read grows linearly): 100,000 requests take a few seconds in plain Python
(``benchmarks/bench_serving.py``).

KV cache: GPU memory x ``gpu_memory_utilization`` (0.9) minus the non-KV part of
:func:`suanli.estimate.memory.inference_memory` (weights, prefill peak, runtime overhead), in
paged blocks of 16 tokens. Two policies (``kv_policy``):

- ``preempt`` (default, vLLM): a request is admitted when the blocks of its prompt are free
  (above a 1% watermark); blocks are allocated as sequences grow; when a decode step needs more
  blocks than are free, the most recently admitted running sequence is preempted and later
  recomputed (its prompt and the tokens generated so far are prefilled again; vLLM's default
  ``recompute`` mode). Preemptions are counted.
- ``reserve`` (TensorRT-LLM ``GUARANTEED_NO_EVICT``): a request is admitted only when the blocks
  of its prompt plus all its output tokens are free; nothing is ever preempted.

Scheduling policies (``policy``):

- ``static``: wait for ``max_batch`` requests or ``batch_timeout_s`` after the first waiting one;
  prefill the batch (padded to its longest prompt), decode until its longest output is done
  (finished sequences stay in the batch as padding); no request joins a running batch.
  Tokens stream: a request's E2E ends with its own last token.
- ``continuous``: iteration-level scheduling (Orca, vLLM): every iteration, finished sequences
  leave and waiting ones join (FCFS, up to ``max_batch`` sequences and ``max_batched_tokens``
  prompt tokens, the first prompt always allowed); prompts are prefilled whole, in the same
  iteration as the running sequences' decode tokens.
- ``chunked``: continuous with a per-iteration token budget (``max_batched_tokens``, 2048):
  decode tokens first, the rest of the budget to prompt chunks (Sarathi-Serve, vLLM V1).

Several replicas share the arrivals by round-robin or least-loaded dispatch (fewest requests
waiting or running when the request arrives; a replica in the middle of an iteration counts
what that iteration completes as done).
"""

from __future__ import annotations

import csv
import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from suanli.estimate.comm import all_reduce_s
from suanli.estimate.flops import forward_flops_per_token
from suanli.estimate.memory import inference_memory, kv_bytes_per_token
from suanli.estimate.perf import Device, _weight_bytes
from suanli.estimate.workload import KV_DTYPES, InferWork, check_tensor_parallel
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec

POLICIES = ("static", "continuous", "chunked")
KV_POLICIES = ("preempt", "reserve")
ARRIVALS = ("poisson", "bursty", "trace")
LENGTH_DISTS = ("fixed", "uniform", "lognormal")
DISPATCH = ("round-robin", "least-loaded")
TP_CHOICES = (1, 2, 4, 8)
#: vLLM keeps this share of the KV blocks free when admitting (``watermark=0.01``).
WATERMARK = 0.01
#: Simulated requests above which the CLI shows a progress bar and the simulation refuses.
MAX_REQUESTS = 5_000_000


# --- workload -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: ``fixed``, ``uniform`` or ``lognormal`` around ``mean``.

    ``uniform``: integers in ``[mean (1 - spread), mean (1 + spread)]``; ``lognormal``: mean
    ``mean`` and log-space sigma ``spread`` (a heavy right tail, like chat prompts); both at
    least 1 and at most ``maximum`` when given.
    """

    mean: int
    dist: str = "fixed"
    spread: float = 0.5
    maximum: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.mean, bool) or not isinstance(self.mean, int) or self.mean < 1:
            raise ValueError(f"token lengths must be integers >= 1, got {self.mean!r}")
        if self.dist not in LENGTH_DISTS:
            raise ValueError(f"length distribution {self.dist!r} is not one of {LENGTH_DISTS}")
        if not 0 <= self.spread <= 3 or (self.dist == "uniform" and self.spread > 1):
            raise ValueError(
                f"--spread must be in [0, 1] for uniform and [0, 3] for lognormal, "
                f"got {self.spread}"
            )

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` lengths as int64."""
        if self.dist == "fixed" or self.spread == 0:
            out = np.full(n, self.mean, dtype=np.int64)
        elif self.dist == "uniform":
            lo = max(1, round(self.mean * (1 - self.spread)))
            hi = max(lo, round(self.mean * (1 + self.spread)))
            out = rng.integers(lo, hi + 1, size=n, dtype=np.int64)
        else:
            sigma = self.spread
            mu = math.log(self.mean) - sigma * sigma / 2
            out = np.rint(rng.lognormal(mu, sigma, size=n)).astype(np.int64)
        out = np.maximum(out, 1)
        if self.maximum is not None:
            out = np.minimum(out, self.maximum)
        return out


@dataclass(frozen=True)
class Requests:
    """Arrival times (seconds, sorted), prompt and output tokens of each request."""

    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


def _poisson_times(rng: np.random.Generator, rate: float, n: int | None, end: float | None) -> Any:
    if n is not None:
        return np.cumsum(rng.exponential(1 / rate, size=n))
    assert end is not None
    times: list[np.ndarray] = []
    t = 0.0
    while t <= end:
        chunk = t + np.cumsum(rng.exponential(1 / rate, size=max(16, int(rate * end / 4) + 16)))
        times.append(chunk)
        t = float(chunk[-1])
    out = np.concatenate(times)
    return out[out <= end]


def _bursty_times(
    rng: np.random.Generator,
    rate: float,
    n: int | None,
    end: float | None,
    ratio: float,
    period_s: float,
) -> Any:
    """A two-state Markov-modulated Poisson process: equal mean time in a high and a low state
    (exponential sojourns of mean ``period_s``), rates in ratio ``ratio``, overall mean ``rate``."""
    high, low = rate * 2 * ratio / (1 + ratio), rate * 2 / (1 + ratio)
    out: list[float] = []
    t, state = 0.0, 0
    limit = n if n is not None else MAX_REQUESTS
    while len(out) < limit:
        stay = rng.exponential(period_s)
        r = high if state == 0 else low
        count = rng.poisson(r * stay)
        times = np.sort(t + rng.uniform(0, stay, size=count))
        if end is not None:
            times = times[times <= end]
        out.extend(times.tolist())
        t += stay
        state ^= 1
        if end is not None and t > end:
            break
    return np.asarray(out[:limit] if n is not None else out, dtype=np.float64)


def parse_trace(text: str, source: str = "trace") -> Requests:
    """Requests from trace CSV text: a header row with ``arrival_s``, ``prompt_tokens`` and
    ``output_tokens``, then one row per request (sorted by arrival here)."""
    rows = list(csv.DictReader(text.splitlines()))
    need = ("arrival_s", "prompt_tokens", "output_tokens")
    if not rows or any(k not in rows[0] for k in need):
        raise ValueError(
            f"{source}: a trace needs a header row with {', '.join(need)} and data rows"
        )
    try:
        arr = np.asarray([float(r["arrival_s"]) for r in rows])
        prompt = np.asarray([int(r["prompt_tokens"]) for r in rows], dtype=np.int64)
        output = np.asarray([int(r["output_tokens"]) for r in rows], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"{source}: arrival_s must be numbers and token counts integers") from None
    if not np.isfinite(arr).all() or (arr < 0).any() or (prompt < 1).any() or (output < 1).any():
        raise ValueError(f"{source}: arrival times must be >= 0 and token counts >= 1")
    order = np.argsort(arr, kind="stable")
    return Requests(arr[order], prompt[order], output[order])


def make_requests(
    *,
    rate: float,
    prompt: Lengths,
    output: Lengths,
    requests: int | None = None,
    duration_s: float | None = None,
    arrivals: str = "poisson",
    seed: int = 0,
    trace: Requests | None = None,
    burst_ratio: float = 4.0,
    burst_period_s: float = 10.0,
) -> Requests:
    """Requests for a simulation, deterministic for a ``seed``.

    ``rate``: requests per second (``math.inf``: all arrive at time 0, an offline benchmark).
    Give ``requests`` or ``duration_s``; ``arrivals="trace"`` takes ``trace`` as it is
    (:func:`parse_trace`).
    """
    if arrivals not in ARRIVALS:
        raise ValueError(f"--arrivals {arrivals!r} is not one of {', '.join(ARRIVALS)}")
    if arrivals == "trace":
        if trace is None:
            raise ValueError("--arrivals trace needs --trace FILE")
        return trace
    if not rate > 0:
        raise ValueError(f"--rate must be > 0 requests/s, got {rate}")
    if requests is None and duration_s is None:
        raise ValueError("give --requests or --duration")
    if requests is not None and (requests < 1 or requests > MAX_REQUESTS):
        raise ValueError(f"--requests must be in [1, {MAX_REQUESTS:,}], got {requests}")
    if duration_s is not None:
        if not duration_s > 0:
            raise ValueError(f"--duration must be > 0 seconds, got {duration_s}")
        if math.isinf(rate):
            raise ValueError("an infinite --rate needs --requests, not --duration")
        if rate * duration_s > MAX_REQUESTS:
            raise ValueError(
                f"--rate x --duration is {rate * duration_s:,.0f} requests; at most "
                f"{MAX_REQUESTS:,}"
            )
    if burst_ratio < 1 or burst_period_s <= 0:
        raise ValueError("burst ratio must be >= 1 and burst period > 0")
    rng = np.random.default_rng(seed)
    if math.isinf(rate):
        assert requests is not None
        times = np.zeros(requests)
    elif arrivals == "poisson":
        times = _poisson_times(rng, rate, requests, duration_s)
    else:
        times = _bursty_times(rng, rate, requests, duration_s, burst_ratio, burst_period_s)
    n = len(times)
    if n == 0:
        raise ValueError("no request arrives within --duration; raise --rate or --duration")
    return Requests(
        np.asarray(times, dtype=np.float64), prompt.sample(rng, n), output.sample(rng, n)
    )


# --- engine and costs ------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineConfig:
    """How the serving engine schedules (see the module docstring)."""

    policy: str = "continuous"
    max_batch: int = 256
    """Most sequences in flight (vLLM ``max_num_seqs``; the static batch size)."""
    max_batched_tokens: int | None = None
    """Tokens per iteration: prompt tokens for ``continuous`` (default 8192), all tokens for
    ``chunked`` (default 2048); unused by ``static``."""
    batch_timeout_s: float = 0.5
    """``static``: the longest a waiting request holds the batch back."""
    kv_policy: str = "preempt"
    block_size: int = 16
    gpu_memory_utilization: float = 0.9
    step_overhead_s: float = 0.0
    """Fixed time per iteration (scheduling, sampling, launches); 0 in the pure roofline."""

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"--policy {self.policy!r} is not one of {', '.join(POLICIES)}")
        if self.kv_policy not in KV_POLICIES:
            raise ValueError(f"kv policy {self.kv_policy!r} is not one of {KV_POLICIES}")
        if self.max_batch < 1:
            raise ValueError(f"--max-batch must be >= 1, got {self.max_batch}")
        if self.max_batched_tokens is not None and self.max_batched_tokens < 1:
            raise ValueError(f"--max-batched-tokens must be >= 1, got {self.max_batched_tokens}")
        if self.batch_timeout_s < 0 or self.step_overhead_s < 0:
            raise ValueError("batch timeout and step overhead must be >= 0")
        if self.block_size < 1:
            raise ValueError(f"block size must be >= 1, got {self.block_size}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(
                f"--gpu-memory-utilization must be in (0, 1], got {self.gpu_memory_utilization}"
            )

    @property
    def token_budget(self) -> int:
        """Tokens per iteration for the prefill scheduler."""
        if self.max_batched_tokens is not None:
            return self.max_batched_tokens
        return 2048 if self.policy == "chunked" else 8192


def elementwise_bytes_per_token(spec: ModelSpec, tp: int = 1, dtype_bytes: int = 2) -> float:
    """Memory traffic of the non-matmul ops of one token's forward pass on one GPU, with the
    fused kernels serving engines run (vLLM, TensorRT-LLM), summed over the layers.

    Per layer: two fused residual-add + RMSNorm (read the residual stream and the branch
    output, write both: ``4h``, not split by TP), the gated activation (read gate and up, write
    their product: ``3I/tp``; plain MLPs ``2I/tp``; MoE layers ``k`` experts' widths plus the
    shared expert), RoPE applied in place to q and k (``2 (n_q + n_kv) d / tp``; none for GPT-2
    and BERT). Attention and the KV cache are counted by the attention class.
    """
    b = dtype_bytes
    h = spec.hidden_size
    att = spec.attention
    norms = 2 * 4 * h * b
    if spec.architecture in ("gpt2", "bert"):
        rope = 0.0
    elif att.kind == "mla":
        rope = 2 * (att.num_heads + 1) * att.qk_rope_head_dim * b / tp
    else:
        rope = 2 * (att.num_heads + att.num_kv_heads) * att.head_dim * b / tp
    dense = 0.0
    if spec.mlp is not None:
        dense = (3 if spec.mlp.gated else 2) * spec.mlp.intermediate_size * b / tp
    moe = 0.0
    if spec.moe is not None and spec.moe_layers:
        e = spec.moe.expert
        moe = (3 if e.gated else 2) * e.intermediate_size * spec.moe.experts_per_token * b / tp
        if spec.moe.shared_expert is not None:
            moe += 3 * spec.moe.shared_expert.intermediate_size * b / tp
    n_moe = len(spec.moe_layers) if spec.moe is not None else 0
    layers = spec.num_layers
    return layers * (norms + rope) + (layers - n_moe) * dense + n_moe * moe


@dataclass(frozen=True)
class ReplicaCost:
    """Per-GPU costs of one replica, computed once: everything an iteration needs."""

    device: Device
    tp: int
    linear_flops: float
    """FLOPs per token of the linear layers on one GPU, LM head excluded."""
    lm_head_flops: float
    """FLOPs per token that produces logits, on one GPU."""
    attn_a: float
    attn_b: float
    """Attention FLOPs of one query on one GPU: ``attn_a + attn_b x keys``."""
    weight_bytes: float
    """Weights read per iteration on one GPU (all of them for a dense model)."""
    expert_fraction: float
    """Share of the weights in routed experts (MoE); 0 for dense models."""
    expert_pick: float
    """``experts_per_token / num_experts`` (MoE)."""
    kv_bytes: float
    """KV bytes per token position on one GPU."""
    elementwise_bytes: float
    """Non-matmul traffic per token on one GPU (:func:`elementwise_bytes_per_token`)."""
    logits_bytes: float
    """Per token that produces logits: fp32 logits written and read by the sampler (8 V)."""
    allreduce_bytes_per_token: float
    layers: int
    kv_blocks: int
    """Paged KV blocks one replica holds."""
    block_size: int
    memory_bytes: float
    """GPU memory of one GPU."""
    non_kv_bytes: float
    """Weights, prefill peak and runtime overhead on one GPU."""
    weight_format: str = "bf16"
    kv_dtype: str = "bf16"
    max_context: int = 0
    """The model's longest sequence (``max_position_embeddings``); 0: no limit."""

    def weights_read(self, tokens: int) -> float:
        """Weight bytes an iteration of ``tokens`` tokens reads (MoE: the experts it touches)."""
        if not self.expert_fraction:
            return self.weight_bytes
        touched = 1 - (1 - self.expert_pick) ** tokens
        return self.weight_bytes * (1 - self.expert_fraction * (1 - touched))

    def comm_s(self, tokens: int) -> float:
        """Tensor-parallel all-reduces of an iteration: 2 per layer (attention and MLP)."""
        if self.tp <= 1 or tokens <= 0:
            return 0.0
        link = self.device.network.link_for(self.tp)
        return (
            2 * self.layers * all_reduce_s(tokens * self.allreduce_bytes_per_token, self.tp, link)
        )

    def iteration_s(
        self, tokens: int, logits: int, keys: float, kv_positions: float, overhead: float = 0.0
    ) -> float:
        """One iteration: ``tokens`` through the layers, ``logits`` of them through the LM head,
        ``keys`` query-key pairs in attention, ``kv_positions`` KV entries read or written."""
        flops = self.device.matmul_flops
        bw = self.device.bandwidth
        linear = max(
            (tokens * self.linear_flops + logits * self.lm_head_flops) / flops,
            self.weights_read(tokens) / bw,
        )
        attention = max(
            (tokens * self.attn_a + keys * self.attn_b) / flops, kv_positions * self.kv_bytes / bw
        )
        elementwise = (tokens * self.elementwise_bytes + logits * self.logits_bytes) / bw
        return linear + attention + elementwise + self.comm_s(tokens) + overhead


def replica_cost(
    spec: ModelSpec,
    device: Device,
    *,
    tp: int = 1,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    memory_bytes: float,
    config: EngineConfig | None = None,
    reference_context: int = 2048,
) -> ReplicaCost:
    """Precompute the per-token costs and the KV blocks of one replica of ``tp`` GPUs.

    ``reference_context``: the context at which sliding-window attention is linearised (keys
    per query and KV bytes per position); exact for models without sliding windows.
    """
    config = config or EngineConfig()
    if tp not in TP_CHOICES:
        raise ValueError(f"--tp must be one of {TP_CHOICES}, got {tp}")
    check_tensor_parallel(spec.attention.num_heads, tp, spec.name)
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"--kv-dtype {kv_dtype!r} is not one of {', '.join(KV_DTYPES)}")
    if not spec.is_decoder:
        raise ValueError(f"{spec.name} is not a decoder; serving simulates text generation")
    work = InferWork(
        batch=config.max_batch,
        context=1,
        weight_format=weight_format,
        kv_dtype=kv_dtype,
        tp=tp,
        prefill_chunk=config.token_budget,
        gpu_memory_utilization=config.gpu_memory_utilization,
    )
    ref = max(2, int(reference_context))
    parts = forward_flops_per_token(spec, ref, causal=False)
    linear = sum(v for k, v in parts.items() if k not in ("attention_core", "lm_head"))
    core_ref = parts["attention_core"]
    core_2ref = forward_flops_per_token(spec, 2 * ref, causal=False)["attention_core"]
    attn_b = (core_2ref - core_ref) / ref
    attn_a = core_ref - attn_b * ref
    weights = _weight_bytes(spec, work)
    expert_fraction = expert_pick = 0.0
    if spec.is_moe and spec.moe is not None:
        counts = count_params(spec)
        expert_fraction = counts.by_component["experts"] / counts.total
        expert_pick = spec.moe.experts_per_token / spec.moe.num_experts
    kv_tok = kv_bytes_per_token(spec, work.kv_bytes, ref, tp)
    mem = inference_memory(spec, work)
    non_kv = mem.total_bytes - mem.breakdown["kv_cache"]
    usable = memory_bytes * config.gpu_memory_utilization - non_kv
    blocks = int(usable // (kv_tok * config.block_size)) if usable > 0 and kv_tok > 0 else 0
    return ReplicaCost(
        device=device,
        tp=tp,
        linear_flops=linear / tp,
        lm_head_flops=parts["lm_head"] / tp,
        attn_a=attn_a / tp,
        attn_b=attn_b / tp,
        weight_bytes=weights,
        expert_fraction=expert_fraction,
        expert_pick=expert_pick,
        kv_bytes=kv_tok,
        elementwise_bytes=elementwise_bytes_per_token(spec, tp),
        logits_bytes=8.0 * spec.vocab_size,
        allreduce_bytes_per_token=spec.hidden_size * 2,
        layers=spec.num_layers,
        kv_blocks=max(blocks, 0),
        block_size=config.block_size,
        memory_bytes=memory_bytes,
        non_kv_bytes=non_kv,
        weight_format=weight_format,
        kv_dtype=kv_dtype,
        max_context=spec.max_position_embeddings,
    )


# --- closed-form sums --------------------------------------------------------------------------


def _lin_sum(a0: float, a1: float, lo: int, hi: int) -> float:
    """Sum of ``a0 + a1 i`` for ``i`` in ``[lo, hi)``."""
    count = hi - lo
    if count <= 0:
        return 0.0
    return count * a0 + a1 * (lo + hi - 1) * count / 2


def _sum_max(c0: float, c1: float, m0: float, m1: float, m: int) -> float:
    """Sum over ``i < m`` of ``max(c0 + c1 i, m0 + m1 i)`` (one crossover at most)."""
    d0, d1 = c0 - m0, c1 - m1
    half = m * (m - 1) / 2
    if d0 <= 0 and d1 <= 0:  # the second dominates throughout (decode: KV reads)
        return m * m0 + m1 * half
    if d0 >= 0 and d1 >= 0:
        return m * c0 + c1 * half
    x = -d0 / d1
    if d1 > 0:  # the first dominates for i >= x
        s = min(max(math.ceil(x), 0), m)
        return _lin_sum(m0, m1, 0, s) + _lin_sum(c0, c1, s, m)
    s = min(max(math.floor(x) + 1, 0), m)  # the first dominates for i <= x
    return _lin_sum(c0, c1, 0, s) + _lin_sum(m0, m1, s, m)


# --- one replica -------------------------------------------------------------------------------


class _Shared:
    """Per-request state shared by the replicas of one simulation (plain lists: fast writes)."""

    def __init__(self, reqs: Requests) -> None:
        n = len(reqs)
        self.arrival: list[float] = reqs.arrival_s.tolist()
        self.prompt0: list[int] = reqs.prompt.tolist()
        self.output0: list[int] = reqs.output.tolist()
        self.prompt: list[int] = list(self.prompt0)
        """Tokens to prefill (grows when a preempted sequence is recomputed)."""
        self.remaining: list[int] = list(self.output0)
        """Output tokens still to produce when the current prefill starts."""
        nan = math.nan
        self.admit: list[float] = [nan] * n
        self.first: list[float] = [nan] * n
        self.finish: list[float] = [nan] * n
        self.gen: list[int] = [0] * n
        self.k0: list[int] = [0] * n
        self.pd: list[int] = [0] * n
        self.held: list[int] = [0] * n
        self.done: list[int] = [0] * n


class _Replica:
    """One engine: the iteration loop, KV blocks, events and statistics.

    Decoding sequences are tracked in aggregate: ``n`` of them, and ``acc`` = the sum over them
    of ``prompt - k0`` (``k0``: the first decode iteration), so that the KV entries iteration
    ``j`` reads are ``acc + n (j + 1)``; ``phase[r]`` counts those whose context fills a block
    at iterations ``j`` with ``(r + j) % block_size == 0``. Finishes are events keyed by
    iteration; preempted sequences are dropped lazily (a generation counter).
    """

    def __init__(self, cost: ReplicaCost, config: EngineConfig, shared: _Shared, grid: float):
        self.c = cost
        self.cfg = config
        self.s = shared
        self.bs = config.block_size
        self.total_blocks = cost.kv_blocks
        self.free = cost.kv_blocks
        self.watermark = int(WATERMARK * cost.kv_blocks)
        self.reserve = config.kv_policy == "reserve"
        self.static = config.policy == "static"
        self.chunked = config.policy == "chunked"
        self.budget = config.token_budget
        self.max_batch = config.max_batch
        # Seconds per unit, precomputed: an iteration is a handful of multiply-adds.
        flops, bw = cost.device.matmul_flops, cost.device.bandwidth
        self.lin_s = cost.linear_flops / flops
        self.lm_s = cost.lm_head_flops / flops
        self.att_a_s = cost.attn_a / flops
        self.att_b_s = cost.attn_b / flops
        self.kv_s = cost.kv_bytes / bw
        self.w_s = cost.weight_bytes / bw
        self.elt_s = cost.elementwise_bytes / bw
        self.logit_s = cost.logits_bytes / bw
        self.bw = bw
        self.moe = bool(cost.expert_fraction)
        self.tp1 = cost.tp <= 1
        self.overhead = config.step_overhead_s
        self.t_min = cost.weights_read(1) / bw + self.overhead
        self.clock = 0.0
        self.k = 0
        self.waiting: deque[int] = deque()
        self.prefilling: deque[int] = deque()
        self.decoding: dict[int, None] = {}
        self.n = 0
        self.acc = 0
        self.phase = [0] * self.bs
        self.events: dict[int, list[tuple[int, int, int]]] = {}
        self.heap: list[int] = []
        self.batch_blocks = 0
        self.batch_running = False
        self.batch_end = -1
        self.assigned = 0
        self.completed = 0
        self.busy = 0.0
        self.kv_area = 0.0
        self.kv_max = 0
        self.max_running = 0
        self.iterations = 0
        self.preemptions = 0
        self.grid = grid
        self.next_sample = 0.0
        self.samples: list[tuple[float, int]] = []

    # -- costs ---------------------------------------------------------------------------------

    def _iteration_s(self, tokens: int, logits: int, keys: float, positions: float) -> float:
        w = self.c.weights_read(tokens) / self.bw if self.moe else self.w_s
        lin = tokens * self.lin_s + logits * self.lm_s
        att = tokens * self.att_a_s + keys * self.att_b_s
        kv = positions * self.kv_s
        t = (lin if lin > w else w) + (att if att > kv else kv) + self.overhead
        t += tokens * self.elt_s + logits * self.logit_s
        return t if self.tp1 else t + self.c.comm_s(tokens)

    # -- bookkeeping ---------------------------------------------------------------------------

    @property
    def outstanding(self) -> int:
        return self.assigned - self.completed

    def has_work(self) -> bool:
        return bool(self.n or self.waiting or self.prefilling or self.batch_running)

    def safe_until(self) -> float:
        """A time before which no request of this replica completes, if nothing new arrives
        (for least-loaded dispatch): exact while it only decodes, a lower bound otherwise."""
        if not (self.n or self.waiting or self.prefilling or self.batch_running):
            return math.inf
        if self.waiting or self.prefilling:
            return self.clock + self.t_min
        heap, events = self.heap, self.events
        while heap and heap[0] not in events:
            heapq.heappop(heap)
        if not heap:
            return self.clock
        j = self.k
        m = heap[0] - j + 1
        grow = not self.reserve and not self.batch_running
        if grow and self.n * -(-m // self.bs) > self.free and self._blocks_needed(j, m) > self.free:
            return self.clock + m * self.t_min  # preemptions come first: a bound only
        fixed, c0, c1, m0, m1 = self._run_terms(j)
        return self.clock + m * fixed + _sum_max(c0, c1, m0, m1, m)

    def _run_terms(self, j: int) -> tuple[float, float, float, float, float]:
        """Decode iteration ``j + i`` takes ``fixed + max(c0 + c1 i, m0 + m1 i)`` seconds while
        the batch stays the same (attention compute and KV reads grow by ``n`` keys each)."""
        n = self.n
        w = self.c.weights_read(n) / self.bw if self.moe else self.w_s
        lin = n * (self.lin_s + self.lm_s)
        fixed = (lin if lin > w else w) + self.overhead + n * (self.elt_s + self.logit_s)
        if not self.tp1:
            fixed += self.c.comm_s(n)
        s0 = self.acc + n * (j + 1)
        return (
            fixed,
            n * self.att_a_s + s0 * self.att_b_s,
            n * self.att_b_s,
            s0 * self.kv_s,
            n * self.kv_s,
        )

    def add(self, rid: int) -> None:
        t = self.s.arrival[rid]
        if t > self.clock and not self.has_work():
            while self.next_sample <= t:  # idle: nothing waits
                self.samples.append((self.next_sample, 0))
                self.next_sample += self.grid
            self.clock = t
        self.waiting.append(rid)
        self.assigned += 1

    def _event(self, k: int, rid: int, kind: int) -> None:
        """At the end of iteration ``k``: 1 record a finish, 3 record and leave, 0 end the
        static batch."""
        entry = (rid, kind, self.s.gen[rid] if rid >= 0 else 0)
        lst = self.events.get(k)
        if lst is None:
            self.events[k] = [entry]
            heapq.heappush(self.heap, k)
        else:
            lst.append(entry)

    def _account(self, dt: float, used0: int) -> None:
        self.busy += dt
        used1 = self.total_blocks - self.free
        self.kv_area += dt * (used0 + used1) / 2
        if used1 > self.kv_max:
            self.kv_max = used1
        running = self.n + len(self.prefilling)
        if running > self.max_running:
            self.max_running = running
        if self.clock >= self.next_sample:
            q = len(self.waiting)
            while self.next_sample <= self.clock:
                self.samples.append((self.next_sample, q))
                self.next_sample += self.grid

    def _join_decode(self, rid: int, j: int) -> None:
        """``rid`` finished its prefill in iteration ``j`` (its first token is out)."""
        s = self.s
        left = s.remaining[rid]
        if left <= 1:  # its only token came from the prefill
            s.finish[rid] = self.clock
            self.completed += 1
            self.free += s.held[rid]
            s.held[rid] = 0
            return
        p = s.prompt[rid]
        s.k0[rid] = j + 1
        s.pd[rid] = p
        self.n += 1
        self.acc += p - j - 1
        self.phase[(p - j - 1) % self.bs] += 1
        self.decoding[rid] = None
        self._event(j + left - 1, rid, 3)

    def _leave(self, rid: int, j: int) -> None:
        s = self.s
        r = s.pd[rid] - s.k0[rid]
        self.n -= 1
        self.acc -= r
        self.phase[r % self.bs] -= 1
        del self.decoding[rid]
        if self.reserve:
            self.free += s.held[rid]
        else:
            self.free += -(-(r + j + 1) // self.bs)
        s.held[rid] = 0

    def _process_events(self, j: int) -> None:
        lst = self.events.pop(j, None)
        if not lst:
            return
        s = self.s
        gen, finish = s.gen, s.finish
        clock = self.clock
        end_batch = False
        for rid, kind, g in lst:
            if kind == 0:
                end_batch = True
            elif gen[rid] == g:
                finish[rid] = clock
                self.completed += 1
                if kind == 3:
                    self._leave(rid, j)
        if end_batch:
            self.free += self.batch_blocks
            self.batch_blocks = 0
            self.batch_running = False
            self.n = 0
            self.acc = 0

    # -- KV ------------------------------------------------------------------------------------

    def _blocks_needed(self, j: int, m: int) -> int:
        """Blocks the decoding sequences allocate in iterations ``[j, j + m)``: each sequence
        one per ``block_size`` iterations, at the phase its context fills a block."""
        bs = self.bs
        q, rem = divmod(m, bs)
        total = self.n * q
        if rem:
            phase = self.phase
            base = j + q * bs
            for t in range(rem):
                total += phase[(-(base + t)) % bs]
        return total

    def _preempt_for(self, j: int) -> bool:
        """Free blocks for iteration ``j`` by preempting the newest sequences; True if any.

        A preempted sequence loses its KV blocks and waits at the head of the queue; it is
        recomputed later (prompt plus the tokens generated so far prefilled again)."""
        bs = self.bs
        need = self.phase[(-j) % bs]
        if need <= self.free:
            return False
        s = self.s
        while need > self.free and self.decoding:
            rid, _ = self.decoding.popitem()
            r = s.pd[rid] - s.k0[rid]
            produced = 1 + j - s.k0[rid]
            if r % bs == (-j) % bs:
                need -= 1
            self.n -= 1
            self.acc -= r
            self.phase[r % bs] -= 1
            self.free += -(-(r + j) // bs)
            s.held[rid] = 0
            s.gen[rid] += 1
            s.prompt[rid] = s.pd[rid] + produced
            s.remaining[rid] -= produced
            self.waiting.appendleft(rid)
            self.preemptions += 1
        return True

    # -- the loop ------------------------------------------------------------------------------

    def run(self, limit: float) -> None:
        """Iterate until the first iteration boundary at or after ``limit`` (or until idle)."""
        static = self.static
        while self.clock < limit and (
            self.n or self.waiting or self.prefilling or self.batch_running
        ):
            if static:
                if not self.batch_running:
                    if not self._start_batch(limit):
                        return
                    continue
            elif (self.waiting or self.prefilling) and self._scheduled_iteration():
                continue
            if self.n:
                self._decode_run(limit)
            elif not static and not self._scheduled_iteration():
                raise ValueError(
                    "a request cannot be admitted even on an empty replica; "
                    "raise GPU memory or shorten prompts"
                )

    def _scheduled_iteration(self) -> bool:
        """Schedule and run one iteration with prefill work; False when there is none."""
        s = self.s
        j = self.k
        bs = self.bs
        # Running sequences first: their decode blocks, preempting if short (vLLM order);
        # after a preemption nothing new is admitted in this iteration.
        preempted = False
        need = 0
        if not self.reserve and self.n:
            preempted = self._preempt_for(j) and self.n > 0
            need = self.phase[(-j) % bs]
        n = self.n
        chunks: list[tuple[int, int, int]] = []  # (rid, tokens, start position)
        budget = self.budget
        chunked = self.chunked
        prompt, done = s.prompt, s.done
        if chunked:
            budget = max(budget - n, 0)
            for rid in self.prefilling:
                if budget <= 0:
                    break
                c = min(prompt[rid] - done[rid], budget)
                chunks.append((rid, c, done[rid]))
                budget -= c
        waiting = self.waiting
        if not preempted and waiting:
            slots = self.max_batch - n - len(self.prefilling)
            used_tokens = 0
            reserve = self.reserve
            while waiting and slots > 0:
                rid = waiting[0]
                p = prompt[rid]
                if chunked:
                    if budget <= 0:
                        break
                    c = p if p < budget else budget
                else:  # whole prompts within the budget; the first one always
                    if used_tokens and used_tokens + p > budget:
                        break
                    c = p
                blocks = -(-(p + s.remaining[rid]) // bs) if reserve else -(-p // bs)
                floor = need + (self.watermark if (n or self.prefilling) and not reserve else 0)
                if blocks > self.free - floor:
                    break
                waiting.popleft()
                self.free -= blocks
                s.held[rid] = blocks
                if s.admit[rid] != s.admit[rid]:  # NaN: first admission
                    s.admit[rid] = self.clock
                done[rid] = 0
                self.prefilling.append(rid)
                chunks.append((rid, c, 0))
                used_tokens += c
                if chunked:
                    budget -= c
                slots -= 1
        if not chunks:
            return False
        # One iteration: the prefill chunks plus one decode token per running sequence.
        decode_keys = self.acc + n * (j + 1)
        tokens = logits = n
        keys = positions = float(decode_keys)
        completing: list[int] = []
        for rid, c, p in chunks:
            tokens += c
            keys += c * p + c * (c + 1) / 2
            positions += p + c
            done[rid] = p + c
            if p + c >= prompt[rid]:
                logits += 1
                completing.append(rid)
        used0 = self.total_blocks - self.free
        self.free -= need
        dt = self._iteration_s(tokens, logits, keys, positions)
        self.clock += dt
        self.iterations += 1
        first = s.first
        for rid in completing:
            self.prefilling.remove(rid)
            if first[rid] != first[rid]:  # NaN: first token (not a recomputation)
                first[rid] = self.clock
            self._join_decode(rid, j)
        if j in self.events:
            self._process_events(j)
        self.k = j + 1
        self._account(dt, used0)
        return True

    def _decode_run(self, limit: float) -> None:
        """Decode-only iterations until the next event, KV limit or ``limit`` (closed form)."""
        j = self.k
        grow = not self.reserve and not self.batch_running
        if grow and self._preempt_for(j) and not self.n:
            return
        n = self.n
        heap, events = self.heap, self.events
        while heap[0] not in events:
            heapq.heappop(heap)
        m = heap[0] - j + 1
        if grow and n * -(-m // self.bs) > self.free and self._blocks_needed(j, m) > self.free:
            lo, hi = 1, m  # need(lo) <= free < need(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self._blocks_needed(j, mid) <= self.free:
                    lo = mid
                else:
                    hi = mid
            m = lo
        fixed, c0, c1, m0, m1 = self._run_terms(j)
        dt = m * fixed + _sum_max(c0, c1, m0, m1, m)
        gap = limit - self.clock
        if dt > gap:
            # Stop at the first boundary at or after `limit`: T(k) >= k t(0) bounds it above,
            # T(k) <= k t(hi - 1) below; iteration times barely change, so the range is small.
            hi = min(m, math.ceil(gap / (fixed + max(c0, m0))))
            t_hi = fixed + max(c0 + c1 * (hi - 1), m0 + m1 * (hi - 1))
            lo = max(0, min(hi - 1, math.ceil(gap / t_hi) - 1))
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if mid * fixed + _sum_max(c0, c1, m0, m1, mid) >= gap:
                    hi = mid
                else:
                    lo = mid
            m = max(hi, 1)
            dt = m * fixed + _sum_max(c0, c1, m0, m1, m)
        used0 = self.total_blocks - self.free
        if grow:
            self.free -= self._blocks_needed(j, m)
        self.clock += dt
        self.iterations += m
        last = j + m - 1
        self.k = last + 1
        if last in events:
            self._process_events(last)
        self._account(dt, used0)

    # -- static batching -----------------------------------------------------------------------

    def _start_batch(self, limit: float) -> bool:
        """Form and prefill a static batch if one is due before ``limit``; False to wait."""
        s = self.s
        cap = self.max_batch
        if len(self.waiting) >= cap:
            start = max(self.clock, s.arrival[self.waiting[cap - 1]])
        else:
            start = max(self.clock, s.arrival[self.waiting[0]] + self.cfg.batch_timeout_s)
            if start >= limit:
                return False
        self.clock = start
        batch: list[int] = []
        pmax = omax = 0
        for rid in self.waiting:
            if len(batch) >= cap:
                break
            p2, o2 = max(pmax, s.prompt[rid]), max(omax, s.remaining[rid])
            if -(-(p2 + o2) // self.bs) * (len(batch) + 1) > self.total_blocks:
                break
            batch.append(rid)
            pmax, omax = p2, o2
        if not batch:
            raise ValueError(
                "a request cannot be admitted even on an empty replica; "
                "raise GPU memory or shorten prompts"
            )
        for _ in batch:
            self.waiting.popleft()
        b = len(batch)
        self.batch_blocks = b * -(-(pmax + omax) // self.bs)
        used0 = self.total_blocks - self.free
        self.free -= self.batch_blocks
        self.batch_running = True
        j = self.k
        # Prefill padded to the longest prompt; every sequence (finished ones as padding)
        # then decodes until the longest output is done.
        dt = self._iteration_s(b * pmax, b, b * pmax * (pmax + 1) / 2, float(b * pmax))
        for rid in batch:
            s.admit[rid] = start
        self.clock += dt
        self.iterations += 1
        self.batch_end = j + omax - 1
        for rid in batch:
            s.first[rid] = self.clock
            if s.remaining[rid] <= 1:
                s.finish[rid] = self.clock
                self.completed += 1
            else:
                self._event(j + s.remaining[rid] - 1, rid, 1)
        self.k = j + 1
        if omax > 1:
            self.n = b
            self.acc = b * (pmax - (j + 1))
            self._event(self.batch_end, -1, 0)
        else:
            self.free += self.batch_blocks
            self.batch_blocks = 0
            self.batch_running = False
        self._account(dt, used0)
        return True


# --- the simulation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingResult:
    """What a simulation measured; times in seconds, rates per second."""

    requests: int
    completed: int
    replicas: int
    tp: int
    policy: str
    duration_s: float
    requests_per_s: float
    tokens_per_s: float
    """Output tokens per second of all replicas."""
    input_tokens_per_s: float
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    e2e_s: dict[str, float]
    queue_wait_mean_s: float
    gpu_utilization: float
    kv_usage_mean: float
    kv_usage_max: float
    kv_blocks: int
    max_running: int
    preemptions: int
    iterations: int
    queue_series: dict[str, list[float]] = field(default_factory=dict)
    usd_per_gpu_hour: float | None = None

    @property
    def gpus(self) -> int:
        """GPUs in all replicas."""
        return self.replicas * self.tp

    @property
    def usd_per_hour(self) -> float | None:
        """Rent of all the GPUs."""
        return None if self.usd_per_gpu_hour is None else self.usd_per_gpu_hour * self.gpus

    @property
    def usd_per_million_tokens(self) -> float | None:
        """Rent per million output tokens at the simulated throughput."""
        if self.usd_per_hour is None or not self.tokens_per_s:
            return None
        return self.usd_per_hour / 3600 / self.tokens_per_s * 1e6

    def meets(self, slo_ttft_s: float | None, slo_tpot_s: float | None) -> bool:
        """p95 TTFT and p95 TPOT within the targets (all requests completed)."""
        if self.completed < self.requests:
            return False
        if slo_ttft_s is not None and not self.ttft_s["p95"] <= slo_ttft_s:
            return False
        return slo_tpot_s is None or self.tpot_s["p95"] <= slo_tpot_s

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the field names of the CLI (units in the names)."""
        doc: dict[str, Any] = {
            "requests": self.requests,
            "completed": self.completed,
            "replicas": self.replicas,
            "tp": self.tp,
            "gpus": self.gpus,
            "policy": self.policy,
            "duration_s": self.duration_s,
            "requests_per_s": self.requests_per_s,
            "tokens_per_s": self.tokens_per_s,
            "input_tokens_per_s": self.input_tokens_per_s,
        }
        for name, stats in (("ttft", self.ttft_s), ("tpot", self.tpot_s), ("e2e", self.e2e_s)):
            for key in ("mean", "p50", "p95", "p99"):
                doc[f"{name}_{key}_s"] = stats[key]
        doc.update(
            {
                "queue_wait_mean_s": self.queue_wait_mean_s,
                "gpu_utilization": self.gpu_utilization,
                "kv_usage_mean": self.kv_usage_mean,
                "kv_usage_max": self.kv_usage_max,
                "kv_blocks_per_replica": self.kv_blocks,
                "max_running_per_replica": self.max_running,
                "preemptions": self.preemptions,
                "iterations": self.iterations,
                "usd_per_gpu_hour": self.usd_per_gpu_hour,
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_tokens": self.usd_per_million_tokens,
                "queue_series": self.queue_series,
            }
        )
        return doc


def _stats(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return {"mean": math.nan, "p50": math.nan, "p95": math.nan, "p99": math.nan}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"mean": float(values.mean()), "p50": float(p50), "p95": float(p95), "p99": float(p99)}


def simulate(
    cost: ReplicaCost,
    requests: Requests,
    config: EngineConfig | None = None,
    *,
    replicas: int = 1,
    dispatch: str = "round-robin",
    usd_per_gpu_hour: float | None = None,
    samples: int = 100,
    progress: Callable[[int, int], None] | None = None,
) -> ServingResult:
    """Simulate ``replicas`` replicas of ``cost`` serving ``requests`` under ``config``."""
    config = config or EngineConfig()
    if replicas < 1:
        raise ValueError(f"--replicas must be >= 1, got {replicas}")
    if dispatch not in DISPATCH:
        raise ValueError(f"dispatch {dispatch!r} is not one of {', '.join(DISPATCH)}")
    if usd_per_gpu_hour is not None and usd_per_gpu_hour < 0:
        raise ValueError(f"--price must be >= 0, got {usd_per_gpu_hour}")
    n = len(requests)
    if n == 0:
        raise ValueError("no requests to simulate")
    bs = cost.block_size
    longest = int((requests.prompt + requests.output).max())
    need = -(-longest // bs)
    if cost.max_context and longest > cost.max_context:
        raise ValueError(
            f"a request of {longest:,} tokens (prompt + output) is longer than the model's "
            f"context of {cost.max_context:,}"
        )
    if cost.kv_blocks < max(need, 1):
        free_gib = cost.kv_blocks * bs * cost.kv_bytes / 2**30
        raise ValueError(
            f"the KV cache holds {cost.kv_blocks * bs:,} tokens per replica "
            f"({free_gib:,.2f} GiB per GPU after weights and overhead) but a request needs "
            f"{longest:,}; use more memory, --tp, quantization or shorter requests"
        )
    shared = _Shared(requests)
    first_t = shared.arrival[0]
    span = shared.arrival[-1] - first_t
    grid = span / samples if span > 0 else 1.0
    reps = [_Replica(cost, config, shared, grid) for _ in range(replicas)]
    for r in reps:
        r.clock = first_t
        r.next_sample = first_t
    arrival = shared.arrival
    step = max(1, n // 100)
    safe = [-math.inf] * replicas if (replicas > 1 and dispatch == "least-loaded") else []
    best = 0
    for rid in range(n):
        t = arrival[rid]
        if replicas == 1:
            target = reps[0]
            target.run(t)
        elif dispatch == "round-robin":
            target = reps[rid % replicas]
            target.run(t)
        else:
            # Least loaded: a replica whose next completion cannot come before t needs no
            # advancing to know its load; the others iterate up to t.
            best, load = 0, -1
            for i, r in enumerate(reps):
                if safe[i] < t:
                    r.run(t)
                    safe[i] = r.safe_until()
                out = r.assigned - r.completed
                if load < 0 or out < load:
                    best, load = i, out
            target = reps[best]
            target.run(t)
        target.add(rid)
        if safe:
            safe[best] = target.safe_until()
        if progress is not None and rid % step == 0:
            progress(rid, n)
    for r in reps:
        r.run(math.inf)
    if progress is not None:
        progress(n, n)
    return _collect(cost, config, shared, reps, requests, usd_per_gpu_hour)


#: Throughput of a run with arrivals spread in time is measured from this share of the arrival
#: span on (the system filling up is left out) to the last arrival (the drain is left out).
WARMUP_SHARE = 0.1


def _throughput(
    requests: Requests, first: np.ndarray, finish: np.ndarray, makespan: float
) -> tuple[float, float, float]:
    """Requests, output tokens and prompt tokens per second.

    All arrivals at once (an offline benchmark): everything over the whole run, as
    ``trtllm-bench`` and ``vllm bench`` count. Arrivals spread in time: over the steady window
    ``[t0 + 10% of the span, last arrival]``, which gives the arrival rate when the replicas keep
    up and their capacity when they do not; output tokens are counted as produced evenly between
    a request's first and last token.
    """
    arrival = requests.arrival_s
    t0, t1 = float(arrival[0]), float(arrival[-1])
    out = requests.output.astype(np.float64)
    done = ~np.isnan(finish)
    if t1 - t0 <= 0:
        return (
            float(done.sum()) / makespan,
            float(out[done].sum()) / makespan,
            float(requests.prompt[done].sum()) / makespan,
        )
    lo = t0 + WARMUP_SHARE * (t1 - t0)
    window = t1 - lo

    def produced(t: float) -> float:
        span = np.where(finish > first, finish - first, 1.0)
        share = np.clip((t - first) / span, 0.0, 1.0)
        tokens = np.where(t >= first, 1 + (out - 1) * share, 0.0)
        return float(np.nansum(np.where(t >= finish, out, tokens)))

    finished = int(((finish > lo) & (finish <= t1)).sum())
    prefilled = float(requests.prompt[(first > lo) & (first <= t1)].sum())
    return finished / window, (produced(t1) - produced(lo)) / window, prefilled / window


def _collect(
    cost: ReplicaCost,
    config: EngineConfig,
    shared: _Shared,
    reps: list[_Replica],
    requests: Requests,
    usd_per_gpu_hour: float | None,
) -> ServingResult:
    arrival = requests.arrival_s
    first = np.asarray(shared.first)
    finish = np.asarray(shared.finish)
    admit = np.asarray(shared.admit)
    done = ~np.isnan(finish)
    completed = int(done.sum())
    end = float(np.nanmax(finish)) if completed else float(arrival[-1])
    duration = max(end - float(arrival[0]), 1e-12)
    req_rate, out_rate, in_rate = _throughput(requests, first, finish, duration)
    ttft = (first - arrival)[done]
    e2e = (finish - arrival)[done]
    multi = done & (requests.output > 1)
    tpot = (finish[multi] - first[multi]) / (requests.output[multi] - 1)
    wait = (admit - arrival)[done]
    busy = sum(r.busy for r in reps)
    area = sum(r.kv_area for r in reps)
    total_blocks = cost.kv_blocks * len(reps)
    length = max(len(r.samples) for r in reps)
    queue = [0.0] * length
    times = [0.0] * length
    for r in reps:
        for i, (t, q) in enumerate(r.samples):
            times[i] = t - float(arrival[0])
            queue[i] += q
    return ServingResult(
        requests=len(requests),
        completed=completed,
        replicas=len(reps),
        tp=cost.tp,
        policy=config.policy,
        duration_s=duration,
        requests_per_s=req_rate,
        tokens_per_s=out_rate,
        input_tokens_per_s=in_rate,
        ttft_s=_stats(ttft),
        tpot_s=_stats(tpot),
        e2e_s=_stats(e2e),
        queue_wait_mean_s=float(wait.mean()) if len(wait) else math.nan,
        gpu_utilization=busy / (duration * len(reps)),
        kv_usage_mean=area / (duration * total_blocks) if total_blocks else 0.0,
        kv_usage_max=max(r.kv_max for r in reps) / cost.kv_blocks if cost.kv_blocks else 0.0,
        kv_blocks=cost.kv_blocks,
        max_running=max(r.max_running for r in reps),
        preemptions=sum(r.preemptions for r in reps),
        iterations=sum(r.iterations for r in reps),
        queue_series={"t_s": times, "waiting": queue},
        usd_per_gpu_hour=usd_per_gpu_hour,
    )


# --- capacity planning --------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityRow:
    """The cheapest replica layout of one GPU type that meets the SLOs at the rate."""

    gpu_id: str
    fits: bool
    reason: str = ""
    tp: int = 0
    replicas: int = 0
    weight_format: str = ""
    result: ServingResult | None = None
    simulations: int = 0

    @property
    def gpus(self) -> int:
        """GPUs of the whole deployment."""
        return self.tp * self.replicas

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready row."""
        doc: dict[str, Any] = {
            "gpu": self.gpu_id,
            "fits": self.fits,
            "reason": self.reason,
            "tp": self.tp or None,
            "replicas": self.replicas or None,
            "gpus": self.gpus or None,
            "weight_format": self.weight_format or None,
            "simulations": self.simulations,
        }
        if self.result is not None:
            res = self.result.as_dict()
            res.pop("queue_series", None)
            for key in ("replicas", "tp", "gpus"):
                res.pop(key, None)
            doc.update(res)
        return doc


def _device_dtype(weight_format: str) -> str:
    from suanli.catalog.formats import get_format

    return "fp8" if get_format(weight_format).compute_dtype == "fp8" else "bf16"


def plan_replicas(
    spec: ModelSpec,
    device: Device,
    memory_bytes: float,
    requests: Requests,
    *,
    slo_ttft_s: float | None,
    slo_tpot_s: float | None,
    config: EngineConfig | None = None,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    max_gpus: int = 64,
    gpus_per_node: int = 8,
    usd_per_gpu_hour: float | None = None,
    dispatch: str = "round-robin",
) -> tuple[int, int, ServingResult | None, int, str]:
    """The fewest GPUs (replicas x TP, TP within a node) meeting the SLOs on ``requests``.

    Per TP degree: a lower bound from one replica's saturated throughput, then exponential and
    binary search on the replica count, each candidate checked by simulation. Returns
    ``(tp, replicas, result, simulations, reason)``; ``result`` is ``None`` when nothing within
    ``max_gpus`` meets the SLOs, with the reason.
    """
    config = config or EngineConfig()
    if slo_ttft_s is not None and not slo_ttft_s > 0:
        raise ValueError(f"--slo-ttft must be > 0 seconds, got {slo_ttft_s}")
    if slo_tpot_s is not None and not slo_tpot_s > 0:
        raise ValueError(f"--slo-tpot must be > 0 seconds, got {slo_tpot_s}")
    ref = int(requests.prompt.mean() + requests.output.mean() / 2)
    longest = int((requests.prompt + requests.output).max())
    best: tuple[int, int, ServingResult] | None = None
    sims = 0
    reasons: list[str] = []
    for tp in TP_CHOICES:
        if tp > max_gpus or tp > gpus_per_node or spec.attention.num_heads % tp:
            continue
        if best is not None and tp >= best[0] * best[1]:
            break
        cost = replica_cost(
            spec,
            device,
            tp=tp,
            weight_format=weight_format,
            kv_dtype=kv_dtype,
            memory_bytes=memory_bytes,
            config=config,
            reference_context=ref,
        )
        if cost.kv_blocks * cost.block_size < longest:
            reasons.append(f"tp{tp}: does not fit")
            continue
        # Unloaded latency bounds: one request alone.
        p, o = int(requests.prompt.mean()), int(requests.output.mean())
        alone_ttft = cost.iteration_s(p, 1, p * (p + 1) / 2, p, config.step_overhead_s)
        alone_tpot = cost.iteration_s(1, 1, p + o / 2, p + o / 2, config.step_overhead_s)
        if slo_tpot_s is not None and alone_tpot > slo_tpot_s:
            reasons.append(f"tp{tp}: TPOT alone {alone_tpot * 1e3:.1f} ms")
            continue
        if slo_ttft_s is not None and alone_ttft > slo_ttft_s:
            reasons.append(f"tp{tp}: TTFT alone {alone_ttft * 1e3:.0f} ms")
            continue
        limit = max_gpus // tp
        if best is not None:
            limit = min(limit, (best[0] * best[1] - 1) // tp)
        if limit < 1:
            continue
        # Saturated throughput of one replica bounds the replicas from below.
        probe_n = min(len(requests), max(4 * config.max_batch, 200))
        probe = Requests(np.zeros(probe_n), requests.prompt[:probe_n], requests.output[:probe_n])
        sat = simulate(cost, probe, config)
        sims += 1
        span = float(requests.arrival_s[-1] - requests.arrival_s[0])
        rate = (len(requests) - 1) / span if span > 0 else math.inf
        lo = max(1, math.ceil(0.8 * rate / sat.requests_per_s)) if math.isfinite(rate) else 1
        if lo > limit:
            reasons.append(f"tp{tp}: needs over {limit * tp} GPUs")
            continue

        def run(r: int, cost: ReplicaCost = cost) -> ServingResult:
            return simulate(
                cost,
                requests,
                config,
                replicas=r,
                dispatch=dispatch,
                usd_per_gpu_hour=usd_per_gpu_hour,
            )

        found: tuple[int, ServingResult] | None = None
        failed = lo - 1
        r = lo
        while r <= limit:
            res = run(r)
            sims += 1
            if res.meets(slo_ttft_s, slo_tpot_s):
                found = (r, res)
                break
            failed = r
            r = min(limit, r * 2) if r < limit else limit + 1
        if found is None:
            reasons.append(f"tp{tp}: SLOs not met with {limit * tp} GPUs")
            continue
        hi = found[0]
        while hi - failed > 1:
            mid = (hi + failed) // 2
            res = run(mid)
            sims += 1
            if res.meets(slo_ttft_s, slo_tpot_s):
                hi, found = mid, (mid, res)
            else:
                failed = mid
        if best is None or tp * found[0] < best[0] * best[1]:
            best = (tp, found[0], found[1])
    if best is None:
        return 0, 0, None, sims, "; ".join(reasons) or "no tensor-parallel degree applies"
    return best[0], best[1], best[2], sims, ""


def plan_capacity(
    spec: ModelSpec,
    gpus: Sequence[Any],
    requests: Requests,
    *,
    slo_ttft_s: float | None,
    slo_tpot_s: float | None,
    config: EngineConfig | None = None,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    max_gpus: int = 64,
    price: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[CapacityRow]:
    """Per catalog GPU, the cheapest deployment meeting the SLOs; ranked by cost per hour.

    GPUs without a price (and no ``price`` given) rank after the priced ones, by GPU count;
    those that cannot meet the SLOs come last with the reason.
    """
    from suanli.catalog.network import default_gpus_per_node
    from suanli.hardware import device_for

    rows: list[CapacityRow] = []
    dtype = _device_dtype(weight_format)
    for i, gpu in enumerate(gpus):
        if progress is not None:
            progress(gpu.id, i, len(gpus))
        try:
            device = device_for(gpu, dtype)
        except ValueError as exc:
            rows.append(CapacityRow(gpu.id, False, str(exc)))
            continue
        usd = price if price is not None else gpu.get("cloud_usd_per_hour")
        tp, reps, result, sims, reason = plan_replicas(
            spec,
            device,
            gpu.memory_bytes,
            requests,
            slo_ttft_s=slo_ttft_s,
            slo_tpot_s=slo_tpot_s,
            config=config,
            weight_format=weight_format,
            kv_dtype=kv_dtype,
            max_gpus=max_gpus,
            gpus_per_node=default_gpus_per_node(gpu),
            usd_per_gpu_hour=float(usd) if usd is not None else None,
        )
        if result is None:
            rows.append(CapacityRow(gpu.id, False, reason, simulations=sims))
        else:
            rows.append(CapacityRow(gpu.id, True, "", tp, reps, weight_format, result, sims))
    if progress is not None:
        progress("done", len(gpus), len(gpus))

    def key(row: CapacityRow) -> tuple[int, float, float]:
        if not row.fits or row.result is None:
            return (2, 0.0, 0.0)
        cost = row.result.usd_per_hour
        if cost is None:
            return (1, float(row.gpus), row.result.ttft_s["p95"])
        return (0, cost, float(row.gpus))

    rows.sort(key=key)
    return rows
