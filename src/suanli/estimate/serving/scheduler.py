"""The scheduling policies of one serving replica: static, continuous, chunked and
prefill-first batching, with admission into the paged KV cache and preemption (vLLM
``recompute``).

:class:`Replica` runs the iteration loop on the state of
:class:`~suanli.estimate.serving.engine.EngineState`; the policies are described in
:mod:`suanli.estimate.serving`, of which this module is part.
"""

from __future__ import annotations

import heapq
import math

from suanli.estimate.serving.engine import EngineState
from suanli.estimate.serving.timing import sum_max
from suanli.i18n import N_


class Replica(EngineState):
    """One engine: the iteration loop, KV blocks, events and statistics.

    The state, costs and bookkeeping are those of :class:`EngineState`; this class schedules
    the iterations under the engine's policy (``static``, ``continuous``, ``chunked`` or
    ``prefill-first``).

    ``self.k`` counts decode steps: the aggregate KV bookkeeping and the finish events are keyed
    by it. Every iteration of ``continuous`` and ``chunked`` is a decode step; a prefill-only
    iteration of ``prefill-first`` is not (the running sequences pause), so it leaves ``k``.
    """

    # -- KV ------------------------------------------------------------------------------------

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
                    N_(
                        "a request cannot be admitted even on an empty replica; "
                        "raise GPU memory or shorten prompts"
                    )
                )

    def _scheduled_iteration(self) -> bool:
        """Schedule and run one iteration with prefill work; False when there is none.

        ``prefill-first`` (vLLM v0): the iteration holds only the admitted prompts, the running
        sequences' decodes wait for the next one; they need no blocks in it and nothing is
        preempted here (a decode step preempts, :meth:`_decode_run`)."""
        s = self.s
        j = self.k
        bs = self.bs
        prefill_only = self.prefill_first
        # Running sequences first: their decode blocks, preempting if short (vLLM order);
        # after a preemption nothing new is admitted in this iteration.
        preempted = False
        need = 0
        if not self.reserve and self.n and not prefill_only:
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
        # One iteration: the prefill chunks plus one decode token per running sequence (none
        # with prefill-first: decode step j is still to come, so joiners start with it).
        if prefill_only:
            tokens = logits = 0
            keys = positions = 0.0
            joined = j - 1
        else:
            tokens = logits = n
            keys = positions = float(self.acc + n * (j + 1))
            joined = j
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
        dt = self.iteration_s(tokens, logits, keys, positions)
        self.clock += dt
        self.iterations += 1
        first = s.first
        for rid in completing:
            self.prefilling.remove(rid)
            if first[rid] != first[rid]:  # NaN: first token (not a recomputation)
                first[rid] = self.clock
            self.join_decode(rid, joined)
        if not prefill_only:
            if j in self.events:
                self.process_events(j)
            self.k = j + 1
        self.account(dt, used0)
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
        if grow and n * -(-m // self.bs) > self.free and self.blocks_needed(j, m) > self.free:
            lo, hi = 1, m  # need(lo) <= free < need(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.blocks_needed(j, mid) <= self.free:
                    lo = mid
                else:
                    hi = mid
            m = lo
        fixed, c0, c1, m0, m1 = self.run_terms(j)
        dt = m * fixed + sum_max(c0, c1, m0, m1, m)
        gap = limit - self.clock
        if dt > gap:
            # Stop at the first boundary at or after `limit`: T(k) >= k t(0) bounds it above,
            # T(k) <= k t(hi - 1) below; iteration times barely change, so the range is small.
            hi = min(m, math.ceil(gap / (fixed + max(c0, m0))))
            t_hi = fixed + max(c0 + c1 * (hi - 1), m0 + m1 * (hi - 1))
            lo = max(0, min(hi - 1, math.ceil(gap / t_hi) - 1))
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if mid * fixed + sum_max(c0, c1, m0, m1, mid) >= gap:
                    hi = mid
                else:
                    lo = mid
            m = max(hi, 1)
            dt = m * fixed + sum_max(c0, c1, m0, m1, m)
        used0 = self.total_blocks - self.free
        if grow:
            self.free -= self.blocks_needed(j, m)
        self.clock += dt
        self.iterations += m
        last = j + m - 1
        self.k = last + 1
        if last in events:
            self.process_events(last)
        self.account(dt, used0)

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
                N_(
                    "a request cannot be admitted even on an empty replica; "
                    "raise GPU memory or shorten prompts"
                )
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
        dt = self.iteration_s(b * pmax, b, b * pmax * (pmax + 1) / 2, float(b * pmax))
        for rid in batch:
            s.admit[rid] = start
        self.clock += dt
        self.iterations += 1
        self.batch_end = j + omax - 1
        for rid in batch:
            s.first[rid] = self.clock
            if s.remaining[rid] <= 1:
                s.finish[rid] = self.clock
                s.finished.append(rid)
                self.completed += 1
            else:
                self.event(j + s.remaining[rid] - 1, rid, 1)
        self.k = j + 1
        if omax > 1:
            self.n = b
            self.acc = b * (pmax - (j + 1))
            self.event(self.batch_end, -1, 0)
        else:
            self.free += self.batch_blocks
            self.batch_blocks = 0
            self.batch_running = False
        self.account(dt, used0)
        return True
