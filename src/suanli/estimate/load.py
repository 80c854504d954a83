"""How requests share one serving replica when clients wait for their answers.

Load generators such as NVIDIA AIPerf/genai-perf, ``vllm bench serve --max-concurrency`` and
LLMPerf keep a fixed number of clients, each sending its next request as soon as the last one
ends (a closed loop). In steady state their requests arrive one after another, so a new prompt is
prefilled while the other clients' sequences decode, and its TTFT is one prompt's prefill plus
the wait behind the other clients' prefills, not the prefill of all of them at once.

The model here is a cycle balance: in one client's cycle (one request end to end) the replica
prefills every client's prompt once and runs ``output - 1`` decode steps for all of them, so

    cycle = clients x prefill_one + (output - 1) x decode_step(clients)

and the prefills queue with the Pollaczek-Khinchine mean wait of an M/D/1 queue (Kleinrock,
*Queueing Systems* vol. 1, 1975, eq. 5.72 with a deterministic service time):
``wait = rho / (2 (1 - rho)) x prefill_one``, where ``rho`` is the share of the cycle spent on the
*other* clients' prefills (a client never waits for its own).

A static batch (:func:`static_batch`) is the other way to load a replica: every prompt at once,
as offline batch inference and ``benchmark_latency``-style runs do; when the KV cache cannot hold
the whole batch, the engine runs it in waves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from suanli.i18n import N_


@dataclass(frozen=True, kw_only=True)
class ClosedLoop:
    """Steady-state speed of ``clients`` closed-loop clients on one replica."""

    clients: int
    ttft_s: float
    """Mean time to first token: one prompt's prefill plus the wait behind others' prefills."""
    tpot_s: float
    """Mean time per output token after the first, as the client sees it (inter-token
    latency): decode steps stretched by the prefills that run between them."""
    tokens_per_s: float
    """Output tokens per second of all clients together, prefills included."""
    cycle_s: float
    """One request end to end; every client sends its next request then."""
    prefill_share: float
    """Share of the replica's time spent prefilling."""


def closed_loop(
    clients: int, output: int, prefill_one_s: float, decode_step_s: float
) -> ClosedLoop:
    """The cycle balance of ``clients`` clients whose requests generate ``output`` tokens, from
    the prefill time of one prompt alone and the decode step time at batch ``clients``."""
    if clients < 1 or output < 1:
        raise ValueError(N_("closed_loop needs at least one client and one output token"))
    decode_steps = output - 1
    cycle_s = clients * prefill_one_s + decode_steps * decode_step_s
    others = (clients - 1) * prefill_one_s / cycle_s
    wait_s = others / (2 * (1 - others)) * prefill_one_s
    ttft_s = prefill_one_s + wait_s
    # The client measures its cycle as TTFT followed by output - 1 inter-token gaps.
    tpot_s = (cycle_s - ttft_s) / decode_steps if decode_steps else decode_step_s
    return ClosedLoop(
        clients=clients,
        ttft_s=ttft_s,
        tpot_s=max(tpot_s, decode_step_s),
        tokens_per_s=clients * output / cycle_s,
        cycle_s=cycle_s,
        prefill_share=clients * prefill_one_s / cycle_s,
    )


@dataclass(frozen=True, kw_only=True)
class StaticBatch:
    """A static batch (every sequence submitted together) on an engine that holds at most
    ``held`` sequences' KV cache at once."""

    tokens_per_s: float
    """Output tokens/s of the whole batch, prefills included."""
    waves: int
    """How many times the engine fills up: 1 when the whole batch fits."""
    held: int
    """The most sequences that run at once."""


def static_batch(
    batch: int, held: int, output: int, request_s: Callable[[int], float]
) -> StaticBatch:
    """The rate of ``batch`` sequences of ``output`` tokens submitted together, where the KV cache
    holds ``held`` of them (0 or more than ``batch``: all) and ``request_s(n)`` is the end-to-end
    time of ``n`` sequences run together (prefill, then decode).

    A serving engine admits what its KV cache holds and queues the rest (vLLM's scheduler keeps
    them waiting until blocks free up), so the batch runs in full waves of ``held`` and one of
    what is left. This is the best an engine can do: vLLM admits more at first and preempts
    (recomputing or swapping) when sequences outgrow the cache, which only adds time."""
    if batch < 1 or output < 1:
        raise ValueError(N_("static_batch needs at least one sequence and one output token"))
    if held < 1 or held >= batch:
        return StaticBatch(tokens_per_s=batch * output / request_s(batch), waves=1, held=batch)
    full, rest = divmod(batch, held)
    seconds = full * request_s(held) + (request_s(rest) if rest else 0.0)
    return StaticBatch(
        tokens_per_s=batch * output / seconds, waves=full + (1 if rest else 0), held=held
    )
