"""Serving capacity: a discrete-event simulation of LLM serving replicas, and SLO-based sizing.

One replica is a tensor-parallel group of GPUs running an inference engine. The engine works in
iterations (forward passes). An iteration processes the prefill tokens scheduled in it and one
decode token for every running sequence; its time comes from the roofline of the speed model
(:mod:`suanli.estimate.perf`), per op class, classes one after another:

- the linear layers (GEMMs): ``max(tokens x FLOPs per token / matmul FLOP/s, weight bytes /
  bandwidth)``, with the LM head only for tokens that produce logits (decode tokens, the last
  prompt chunk);
- attention: ``max(attention FLOPs / matmul FLOP/s, KV bytes read and written / bandwidth)``;
- the non-matmul ops (norms, residual adds, activation, RoPE): each kernel's traffic at the share
  of the bandwidth its kind was measured to reach (:func:`elementwise_seconds_per_token`);
  the logits the sampler reads: traffic / bandwidth;
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
:func:`suanli.estimate.inference_memory.inference_memory` (weights, prefill peak, runtime
overhead), in paged blocks of 16 tokens. Two policies (``kv_policy``):

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
- ``prefill-first``: vLLM v0's default scheduler (and Vidur's ``vllm``): when waiting prompts
  can be admitted (same FCFS admission, budget and KV rules as ``continuous``, no blocks kept
  for the paused decodes), the iteration prefills only them and every running sequence skips
  it; a decode-only iteration (preempting as ``continuous`` does) runs only when no prompt can
  be admitted. Lower TTFT, higher TPOT than ``continuous`` under load.

Several replicas share the arrivals by round-robin or least-loaded dispatch (fewest requests
waiting or running when the request arrives; a replica in the middle of an iteration counts
what that iteration completes as done).

Closed-loop load (``C`` clients, each sending its next request when its last one ends, as
serving benchmarks run it): ``simulate(..., concurrency=C)`` runs the replicas through
:func:`~suanli.estimate.serving.closed_loop.closed_loop`, which finds the arrival times as the
requests complete.

The package's modules: :mod:`~suanli.estimate.serving.arrivals` (requests, length
distributions, traces), :mod:`~suanli.estimate.serving.closed_loop` (closed-loop load),
:mod:`~suanli.estimate.serving.config` (the engine configuration),
:mod:`~suanli.estimate.serving.timing` (per-iteration roofline times),
:mod:`~suanli.estimate.serving.engine` and :mod:`~suanli.estimate.serving.scheduler` (one
replica's state and its scheduling policies), :mod:`~suanli.estimate.serving.simulate` (the
simulation and its result) and :mod:`~suanli.estimate.serving.search` (capacity planning).
"""

from __future__ import annotations

from suanli.estimate.serving.arrivals import (
    ARRIVALS,
    LENGTH_DISTS,
    MAX_REQUESTS,
    Lengths,
    Requests,
    make_requests,
    parse_trace,
)
from suanli.estimate.serving.closed_loop import closed_loop
from suanli.estimate.serving.config import KV_POLICIES, POLICIES, EngineConfig
from suanli.estimate.serving.engine import WATERMARK
from suanli.estimate.serving.search import (
    CapacityRow,
    device_dtype,
    plan_capacity,
    plan_replicas,
)
from suanli.estimate.serving.simulate import (
    DISPATCH,
    WARMUP_SHARE,
    ServingResult,
    saturated_requests_per_s,
    simulate,
)
from suanli.estimate.serving.timing import (
    TP_CHOICES,
    ReplicaCost,
    elementwise_seconds_per_token,
    replica_cost,
)

__all__ = [
    "ARRIVALS",
    "DISPATCH",
    "KV_POLICIES",
    "LENGTH_DISTS",
    "MAX_REQUESTS",
    "POLICIES",
    "TP_CHOICES",
    "WARMUP_SHARE",
    "WATERMARK",
    "CapacityRow",
    "EngineConfig",
    "Lengths",
    "ReplicaCost",
    "Requests",
    "ServingResult",
    "closed_loop",
    "device_dtype",
    "elementwise_seconds_per_token",
    "make_requests",
    "parse_trace",
    "plan_capacity",
    "plan_replicas",
    "replica_cost",
    "saturated_requests_per_s",
    "simulate",
]
