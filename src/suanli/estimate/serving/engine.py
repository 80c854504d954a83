"""One serving replica's engine state: requests, decoding sequences, finish events, KV blocks.

:class:`EngineState` keeps the bookkeeping the scheduling policies
(:mod:`suanli.estimate.serving.scheduler`) share: per-iteration costs, events keyed by
iteration, paged KV blocks and the statistics. Part of :mod:`suanli.estimate.serving`.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from suanli.estimate.serving.arrivals import Requests
from suanli.estimate.serving.config import EngineConfig
from suanli.estimate.serving.timing import ReplicaCost, sum_max

#: vLLM keeps this share of the KV blocks free when admitting (``watermark=0.01``).
WATERMARK = 0.01


#: Grid points one gap of the queue-length series may fill before only its ends are kept.
MAX_GAP_SAMPLES = 1000


class SharedState:
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
        self.finished: list[int] = []
        """Requests in the order they completed (a closed loop replaces them in that order)."""


class EngineState:
    """One engine's state: KV blocks, events and statistics; the iteration loop and the
    scheduling policies are in :class:`suanli.estimate.serving.scheduler.Replica`.

    Decoding sequences are tracked in aggregate: ``n`` of them, and ``acc`` = the sum over them
    of ``prompt - k0`` (``k0``: the first decode iteration), so that the KV entries iteration
    ``j`` reads are ``acc + n (j + 1)``; ``phase[r]`` counts those whose context fills a block
    at iterations ``j`` with ``(r + j) % block_size == 0``. Finishes are events keyed by
    iteration; preempted sequences are dropped lazily (a generation counter).
    """

    def __init__(self, cost: ReplicaCost, config: EngineConfig, shared: SharedState, grid: float):
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
        self.prefill_first = config.policy == "prefill-first"
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
        self.elt_s = cost.elementwise_s
        self.logit_s = cost.logits_bytes / bw
        self.bw = bw
        self.moe = bool(cost.expert_fraction)
        self.tp1 = cost.tp <= 1
        self.overhead = config.step_overhead_s + cost.kernel_floor_s
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

    def iteration_s(self, tokens: int, logits: int, keys: float, positions: float) -> float:
        """Seconds of one iteration (as :meth:`ReplicaCost.iteration_s`, with the per-unit
        times precomputed)."""
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
        if grow and self.n * -(-m // self.bs) > self.free and self.blocks_needed(j, m) > self.free:
            return self.clock + m * self.t_min  # preemptions come first: a bound only
        fixed, c0, c1, m0, m1 = self.run_terms(j)
        # Added as the decode run adds it (the run's seconds, then the clock), so that running
        # to this time stops exactly there, not one rounding short of it.
        return self.clock + (m * fixed + sum_max(c0, c1, m0, m1, m))

    def run_terms(self, j: int) -> tuple[float, float, float, float, float]:
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
            self.sample_until(t, 0)  # idle: nothing waits
            self.clock = t
        self.waiting.append(rid)
        self.assigned += 1

    def event(self, k: int, rid: int, kind: int) -> None:
        """At the end of iteration ``k``: 1 record a finish, 3 record and leave, 0 end the
        static batch."""
        entry = (rid, kind, self.s.gen[rid] if rid >= 0 else 0)
        lst = self.events.get(k)
        if lst is None:
            self.events[k] = [entry]
            heapq.heappush(self.heap, k)
        else:
            lst.append(entry)

    def account(self, dt: float, used0: int) -> None:
        """Statistics of an iteration (or a run of them) of ``dt`` seconds that started with
        ``used0`` KV blocks in use: busy time, KV usage, running sequences, queue samples."""
        self.busy += dt
        used1 = self.total_blocks - self.free
        self.kv_area += dt * (used0 + used1) / 2
        if used1 > self.kv_max:
            self.kv_max = used1
        running = self.n + len(self.prefilling)
        if running > self.max_running:
            self.max_running = running
        if self.clock >= self.next_sample:
            self.sample_until(self.clock, len(self.waiting))

    def sample_until(self, t: float, queue: int) -> None:
        """Queue-length samples on the grid up to ``t``. A gap of more than
        :data:`MAX_GAP_SAMPLES` grid points (a burst served for hours after a microsecond of
        arrivals) is recorded at its two ends only, so the samples stay bounded."""
        if self.next_sample > t:
            return
        points = int((t - self.next_sample) / self.grid) + 1
        if points > MAX_GAP_SAMPLES:
            self.samples.append((self.next_sample, queue))
            self.samples.append((t, queue))
            self.next_sample += points * self.grid
            return
        while self.next_sample <= t:
            self.samples.append((self.next_sample, queue))
            self.next_sample += self.grid

    def join_decode(self, rid: int, j: int) -> None:
        """``rid`` finished its prefill in iteration ``j`` (its first token is out)."""
        s = self.s
        left = s.remaining[rid]
        if left <= 1:  # its only token came from the prefill
            s.finish[rid] = self.clock
            s.finished.append(rid)
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
        self.event(j + left - 1, rid, 3)

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

    def process_events(self, j: int) -> None:
        """Apply the events at the end of iteration ``j``: record finishes, let finished
        sequences leave, end the static batch."""
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
                s.finished.append(rid)
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

    def blocks_needed(self, j: int, m: int) -> int:
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
