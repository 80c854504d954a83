"""Phase boundaries of a training step, timed without adding any synchronisation.

The profiler (:mod:`suanli.live.profiler`) marks the boundaries of each step (batch fetched,
outermost forward entered and left, optimizer step entered and left) and asks a clock for the
time between two marks:

- :class:`HostClock` (the CPU): a mark is a ``time.perf_counter()`` reading.
- :class:`CudaEventClock`: a mark is also a ``torch.cuda.Event(enable_timing=True)`` recorded
  on the current stream. The event completes when the GPU reaches that point of the queued work,
  so the time between two events is GPU-timeline time, and recording one never makes the host
  wait. Events are read lazily: :meth:`CudaEventClock.ready` polls (``Event.query()``, no
  synchronisation) and :meth:`CudaEventClock.wait` (``Event.synchronize()``) is only called when
  a report is asked for, after the steps.

Calling ``torch.cuda.synchronize()`` at every boundary instead, as the profiler once did, makes
the host wait for the GPU four times a step: the data loading that overlapped GPU work no longer
overlaps, and the verdict leans towards "input-bound".
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple


class Mark(NamedTuple):
    """One phase boundary: the host time, and on CUDA the event recorded there (a tuple: the
    profiler takes several a step, and a tuple is the cheapest object to make)."""

    host_s: float
    """``time.perf_counter()`` when the boundary was passed, in seconds."""
    event: Any = None
    """The ``torch.cuda.Event`` recorded on the current stream at the boundary, or None."""


class HostClock:
    """Host wall time (``time.perf_counter``): marks are ready as soon as they are taken."""

    kind = "host"
    """Named in the profiler's snapshot (``timing``)."""
    lazy = False
    """Whether marks can be unreadable for a while (then the profiler polls them)."""

    def mark(self) -> Mark:
        """Take a mark now."""
        return Mark(time.perf_counter())

    def ready(self, mark: Mark) -> bool:
        """Whether ``mark`` can be read without waiting (always, on the host)."""
        return True

    def wait(self, mark: Mark) -> None:
        """Block until ``mark`` can be read (nothing to wait for on the host)."""

    def elapsed_s(self, start: Mark, end: Mark) -> float:
        """Seconds from ``start`` to ``end`` (both ready)."""
        return end.host_s - start.host_s

    def release(self, marks: list[Mark]) -> None:
        """``marks`` have been read and will not be read again (their events can be reused)."""


class CudaEventClock(HostClock):
    """GPU-timeline time from CUDA events on the current stream, read lazily.

    Events are recorded on ``torch.cuda.current_stream()`` of the current device: the stream a
    training loop launches its kernels on unless it switches streams (one device per process,
    ``torch.cuda.set_device(local_rank)``, as torchrun scripts do). Read events go back to a pool,
    so a long run creates a few dozen events, not four per step.
    """

    kind = "cuda-events"
    lazy = True

    def __init__(self) -> None:
        import torch

        self._event_type: Any = torch.cuda.Event
        self._free: list[Any] = []

    def mark(self) -> Mark:
        """Record an event on the current stream (asynchronous: the host does not wait)."""
        event = self._free.pop() if self._free else self._event_type(enable_timing=True)
        event.record()
        return Mark(time.perf_counter(), event)

    def ready(self, mark: Mark) -> bool:
        """Whether the GPU has passed ``mark`` (``Event.query()``: a poll, not a wait)."""
        return mark.event is None or bool(mark.event.query())

    def wait(self, mark: Mark) -> None:
        """Block until the GPU has passed ``mark``; only at report time, never in a step."""
        if mark.event is not None:
            mark.event.synchronize()

    def elapsed_s(self, start: Mark, end: Mark) -> float:
        """GPU time between the two events, in seconds (``elapsed_time`` gives milliseconds)."""
        if start.event is None or end.event is None:
            return end.host_s - start.host_s
        return float(start.event.elapsed_time(end.event)) / 1e3

    def release(self, marks: list[Mark]) -> None:
        """Return the events of ``marks`` to the pool."""
        self._free.extend(m.event for m in marks if m.event is not None)


def make_clock(cuda: bool) -> HostClock:
    """The clock for a profiled loop: CUDA events when CUDA is in use, else host time."""
    return CudaEventClock() if cuda else HostClock()
