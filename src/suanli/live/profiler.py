"""Record a training loop's steps with global PyTorch hooks, without changing the loop.

One mechanism serves every way of attaching: the Python API (``with profile() as prof:``), the
``suanli doctor run script.py`` launcher, and the Hugging Face / Lightning callbacks. It installs:

- a wrapper around ``DataLoader.__iter__`` that times each ``next()`` (data wait) and can replay
  the first batches from memory to measure "what if data were free";
- global module forward hooks (``torch.nn.modules.module.register_module_forward_*_hook``) that
  time the outermost forward;
- global optimizer step hooks (``torch.optim.optimizer.register_optimizer_step_*_hook``) that
  time the optimizer and mark the end of each step; backward is the time between the end of the
  forward and the optimizer step.

The hooks only take marks (:mod:`suanli.live.step_clock`): host time on the CPU, CUDA events
recorded on the current stream on a GPU. Nothing waits for the GPU inside a step: a closed step
is read when its events have completed (polled at the next step's end), and the last few when a
report is asked for or the block ends. So the overlap of data loading with GPU work that the
verdict is about is left as it is, and the times are those of the GPU timeline.

Instrumentation never breaks training: every hook body is guarded, and a failure is recorded in
``errors`` and the hook disables itself. torch is imported inside the functions.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from suanli.i18n import N_
from suanli.live.diagnosis import Report, StepRecord, diagnose_steps
from suanli.live.step_clock import HostClock, Mark, make_clock


class StopProfiling(BaseException):
    """Raised from a hook to end a ``suanli doctor run`` after its steps. A BaseException, like
    KeyboardInterrupt: a script's own ``except Exception`` cannot swallow it."""


@dataclass
class _Pending:
    """The marks of the step being run."""

    fetches: list[tuple[Mark, Mark]] = field(default_factory=list)
    forwards: list[tuple[Mark, Mark]] = field(default_factory=list)
    optimizer_start: Mark | None = None
    syncs: int = 0


@dataclass
class _Closed:
    """A finished step whose marks may not be readable yet (CUDA events still queued)."""

    start: Mark
    end: Mark
    marks: _Pending
    replay: bool

    def inner(self) -> list[Mark]:
        """Every mark but the end (which is the next step's start)."""
        p = self.marks
        pairs = [m for pair in (*p.fetches, *p.forwards) for m in pair]
        return [self.start, *pairs, *([p.optimizer_start] if p.optimizer_start else [])]


@dataclass
class Recorder:
    """Collects step records; the hooks below feed it."""

    max_steps: int | None = None
    """Stop (raise :class:`StopProfiling`) after this many steps, replay included."""
    replay_steps: int = 0
    """After ``max_steps - replay_steps`` real steps, feed cached batches for this many."""
    cache_batches: int = 4
    records: list[StepRecord] = field(default_factory=list)
    replay_records: list[StepRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    batch_size: int | None = None
    last_input_shape: tuple[int, ...] | None = None
    _pending: _Pending = field(default_factory=_Pending)
    _clock: HostClock = field(default_factory=HostClock)
    _step_start: Mark = field(default_factory=lambda: Mark(time.perf_counter()))
    _depth: int = 0
    _forward_start: Mark | None = None
    _cache: list[Any] = field(default_factory=list)
    _cuda: bool = False
    _unresolved: list[_Closed] = field(default_factory=list)
    _pid: int = field(default_factory=os.getpid)
    _thread: int | None = None
    """The thread whose optimizer steps are recorded: the first to step. Other threads that
    train (a thread pool of trainers) are left alone: never timed, never stopped."""
    model: Any = None
    """The outermost module seen in a forward (for the memory breakdown)."""
    optimizer: Any = None
    sync_sites: dict[str, int] = field(default_factory=dict)
    """Call sites of synchronising calls (CUDA sync debug mode) and how often they fired."""
    on_step: Callable[[Recorder], None] | None = None
    """Called after each recorded step (``suanli doctor run`` saves the steps so far with it,
    so that a process ending by ``os._exit`` or a signal still leaves them behind)."""

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            # A fork (a DataLoader worker, a forking trainer) cannot use its parent's CUDA
            # events: it drops them, as it drops the parent's records, and times on the host.
            self._pid = os.getpid()
            if type(self._clock) is HostClock:
                return
            self._unresolved.clear()
            self._clock = HostClock()
            self._forward_start = None
            self._step_start = Mark(time.perf_counter())

    def _closed(self, replay: bool) -> int:
        """Steps run so far, real or replayed, read or not."""
        self._check_fork()
        done = self.replay_records if replay else self.records
        return len(done) + sum(1 for c in self._unresolved if c.replay == replay)

    @property
    def replaying(self) -> bool:
        """Whether the loader now feeds cached batches."""
        if not self.replay_steps or self.max_steps is None:
            return False
        return self._closed(False) >= self.max_steps - self.replay_steps

    def _mark(self) -> Mark:
        """A mark from the clock; a clock that fails falls back to host time for that mark."""
        if self._cuda:
            self._check_fork()
        try:
            return self._clock.mark()
        except Exception as exc:  # instrumentation must never break the user's training
            self._note_error(exc)
            return Mark(time.perf_counter())

    def _note_error(self, exc: Exception) -> None:
        """Keep an instrumentation error once (a failing hook fails at every step)."""
        text = f"{type(exc).__name__}: {exc}"
        if text not in self.errors and len(self.errors) < 20:
            self.errors.append(text)

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except StopProfiling:
            raise
        except Exception as exc:  # instrumentation must never break the user's training
            self._note_error(exc)

    # -- data
    def wrap_iterator(self, iterator: Iterator[Any]) -> Iterator[Any]:
        """Time each batch fetch; in replay mode, yield cached batches instead."""
        while True:
            if self.replaying and self._cache:
                start = self._mark()
                batch = self._cache[self._closed(True) % len(self._cache)]
                self._pending.fetches.append((start, self._mark()))
                yield batch
                continue
            # On CUDA the two events bracket the wait: when the GPU still has queued work the
            # second follows the first at once (the wait is hidden); when it ran dry, the GPU
            # time between them is the part of the wait that left it idle.
            start = self._mark()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self._pending.fetches.append((start, self._mark()))
            if len(self._cache) < self.cache_batches and self.replay_steps:
                self._cache.append(batch)
            self._note_batch(batch)
            yield batch

    def _note_batch(self, batch: Any) -> None:
        try:
            first = batch[0] if isinstance(batch, (list, tuple)) else batch
            if isinstance(first, dict):
                first = next(iter(first.values()))
            shape = tuple(getattr(first, "shape", ()))
            if shape:
                self.batch_size = int(shape[0])
        except Exception:
            pass

    # -- forward
    def forward_pre(self, module: Any, args: Any) -> None:
        """Global forward pre-hook: start timing the outermost module call."""
        if self._depth == 0:
            self._forward_start = self._mark()
            if self.model is None:
                self.model = module
            try:
                first = args[0] if args else None
                if first is not None and hasattr(first, "shape"):
                    self.last_input_shape = tuple(first.shape)
            except Exception:
                pass
        self._depth += 1

    def forward_post(self, module: Any, args: Any, output: Any) -> None:
        """Global forward hook: stop timing when the outermost call returns."""
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0 and self._forward_start is not None:
            self._pending.forwards.append((self._forward_start, self._mark()))
            self._forward_start = None

    # -- optimizer
    def _other_thread(self) -> bool:
        """Whether this call comes from a thread other than the recorded one (the first call's
        thread becomes the recorded one)."""
        ident = threading.get_ident()
        if self._thread is None:
            self._thread = ident
        return ident != self._thread

    def optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Global optimizer pre-hook: backward ends here."""
        if self._other_thread():
            return
        self.optimizer = optimizer
        self._pending.optimizer_start = self._mark()

    def optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Global optimizer hook: close the step, and read the closed steps that are ready."""
        if self._other_thread():
            return  # another trainer thread: left alone
        if self.finished:  # a script that swallowed the stop: record nothing more, stop again
            self._stop()
            return
        end = self._mark()
        self._unresolved.append(_Closed(self._step_start, end, self._pending, self.replaying))
        self._pending = _Pending()
        self._step_start = end
        # Polls only; the last step waits, since nothing runs after it.
        self._resolve(wait=self.finished)
        if self.on_step is not None:
            self.on_step(self)
        if self.finished:
            self._stop()

    def _stop(self) -> None:
        """End the script's training: StopProfiling in the main thread. In another thread it
        would only end that thread, with a traceback on stderr; the steps are recorded, and
        ``suanli doctor run`` ends the script once it overstays them."""
        if threading.current_thread() is threading.main_thread():
            raise StopProfiling

    def _resolve(self, wait: bool) -> None:
        """Turn closed steps into records, oldest first, while their marks are readable (or,
        with ``wait``, after waiting for them: at report time, never inside a step)."""
        clock = self._clock
        while self._unresolved:
            step = self._unresolved[0]
            if clock.lazy:
                inner = step.inner()
                if wait:
                    for mark in (step.end, *inner):
                        clock.wait(mark)
                elif not clock.ready(step.end) or not all(map(clock.ready, inner)):
                    return  # still queued on the GPU: read at a later step, or at report time
            self._unresolved.pop(0)
            try:
                record = self._record_of(step)
            except Exception as exc:  # a step that cannot be read is dropped, not retried
                self._note_error(exc)
                continue
            (self.replay_records if step.replay else self.records).append(record)
            if clock.lazy:
                clock.release(inner)

    def _record_of(self, step: _Closed) -> StepRecord:
        """The phases of a closed step from its marks (the same rules on the host and GPU)."""
        elapsed, p = self._clock.elapsed_s, step.marks
        total = elapsed(step.start, step.end)
        data = forward = 0.0
        for a, b in p.fetches:
            data += elapsed(a, b)
        for a, b in p.forwards:
            forward += elapsed(a, b)
        opt_start = p.optimizer_start or step.end
        backward = elapsed(p.forwards[-1][1], opt_start) if p.forwards else 0.0
        optimizer = elapsed(opt_start, step.end)
        other = max(total - data - forward - backward - optimizer, 0.0)
        return StepRecord(
            data=data,
            forward=forward,
            backward=max(backward, 0.0),
            optimizer=optimizer,
            other=other,
            syncs=p.syncs,
        )

    def flush(self) -> None:
        """Read every closed step, waiting for the GPU if need be (once, after the steps)."""
        self._guard(lambda: self._resolve(wait=True))

    @property
    def finished(self) -> bool:
        """Whether every step asked for is recorded (replay included)."""
        if self.max_steps is None:
            return False
        return self._closed(False) + self._closed(True) >= self.max_steps

    def snapshot(self, memory: dict[str, float] | None = None) -> dict[str, Any]:
        """What was recorded, as plain JSON-ready data (:func:`report_from_snapshot` reads it
        back, in this process or in the ``suanli doctor run`` parent). Steps whose CUDA events
        are still queued are left for a later snapshot: taking one never waits for the GPU."""
        self._guard(lambda: self._resolve(wait=False))
        return {
            "records": [asdict(r) for r in self.records],
            "replay_records": [asdict(r) for r in self.replay_records],
            "errors": list(self.errors),
            "batch_size": self.batch_size,
            "memory_bytes": self.memory_breakdown() if memory is None else memory,
            "sync_sites": dict(sorted(self.sync_sites.items(), key=lambda kv: -kv[1])[:10]),
            "timing": self._clock.kind,
        }

    def report(self, warmup: int = 1) -> Report:
        """The verdict over the recorded steps (replayed steps give the data-free time)."""
        self.flush()
        return report_from_snapshot(self.snapshot(), warmup)

    def note_sync(self, site: str) -> None:
        """Count a synchronising call (from CUDA's sync debug warnings) at its call site."""
        self._pending.syncs += 1
        self.sync_sites[site] = self.sync_sites.get(site, 0) + 1

    def memory_breakdown(self) -> dict[str, float]:
        """Parameters, gradients and optimizer state (exact), and the peak (CUDA allocator, or
        the process's resident memory on the CPU) with the rest as activations and temporaries."""
        out: dict[str, float] = {}
        try:
            if self.model is not None:
                from suanli.live.autopsy import measured_states

                out.update(measured_states(self.model, self.optimizer))
            if self._cuda:
                import torch

                peak = float(torch.cuda.max_memory_allocated())
                states = sum(out.get(k, 0) for k in ("weights", "gradients", "optimizer"))
                out["peak_allocated"] = peak
                out["activations_and_temporaries"] = max(peak - states, 0.0)
                out["peak_reserved"] = float(torch.cuda.max_memory_reserved())
            else:
                import psutil

                out["process_resident"] = float(psutil.Process().memory_info().rss)
        except Exception as exc:
            self.errors.append(N_("memory breakdown: {error}").format(error=exc))
        return out


def report_from_snapshot(snapshot: dict[str, Any], warmup: int = 1) -> Report:
    """The verdict over a :meth:`Recorder.snapshot` (replayed steps give the data-free time)."""
    records = [StepRecord(**r) for r in snapshot.get("records", [])]
    replayed = [StepRecord(**r) for r in snapshot.get("replay_records", [])]
    data_free = None
    if len(replayed) > 1:
        import statistics

        data_free = statistics.median(r.total for r in replayed[1:])
    report = diagnose_steps(
        records, warmup=warmup, data_free_step_s=data_free, batch_size=snapshot.get("batch_size")
    )
    report.extras["instrumentation_errors"] = list(snapshot.get("errors", []))
    report.extras["memory_bytes"] = dict(snapshot.get("memory_bytes") or {})
    if snapshot.get("sync_sites"):
        report.extras["sync_sites"] = dict(snapshot["sync_sites"])
    report.extras["timing"] = snapshot.get("timing", "host")
    return report


@contextmanager
def profile(
    max_steps: int | None = None,
    replay_steps: int = 0,
    on_step: Callable[[Recorder], None] | None = None,
) -> Iterator[Recorder]:
    """Record every step of the training loop run inside the block.

    >>> with profile() as prof:        # doctest: +SKIP
    ...     train()
    >>> print(prof.report().verdict)   # doctest: +SKIP
    """
    import torch
    from torch.nn.modules import module as nn_module
    from torch.optim import optimizer as optim_module
    from torch.utils.data import DataLoader

    rec = Recorder(max_steps=max_steps, replay_steps=replay_steps, on_step=on_step)
    rec._cuda = torch.cuda.is_available()
    rec._clock = make_clock(rec._cuda)
    handles = [
        nn_module.register_module_forward_pre_hook(
            lambda m, a: rec._guard(lambda: rec.forward_pre(m, a))
        ),
        nn_module.register_module_forward_hook(
            lambda m, a, o: rec._guard(lambda: rec.forward_post(m, a, o))
        ),
        optim_module.register_optimizer_step_pre_hook(
            lambda o, a, k: rec._guard(lambda: rec.optimizer_pre(o, a, k))
        ),
        optim_module.register_optimizer_step_post_hook(
            lambda o, a, k: rec._guard(lambda: rec.optimizer_post(o, a, k))
        ),
    ]
    original_iter = DataLoader.__iter__

    def timed_iter(loader: Any) -> Iterator[Any]:
        return rec.wrap_iterator(original_iter(loader))

    DataLoader.__iter__ = timed_iter  # type: ignore[method-assign,assignment]
    rec._step_start = rec._mark()
    restore_sync = _watch_syncs(rec) if rec._cuda else None
    try:
        yield rec
    except StopProfiling:
        pass
    finally:
        DataLoader.__iter__ = original_iter  # type: ignore[method-assign]
        for handle in handles:
            handle.remove()
        if restore_sync is not None:
            restore_sync()
        rec.flush()  # the steps still queued on the GPU: one wait, after the loop


def _watch_syncs(rec: Recorder) -> Callable[[], None]:
    """CUDA only: turn on ``torch.cuda.set_sync_debug_mode('warn')`` and count each warning at
    its call site; returns a function that restores the previous state. A caller's own
    ``"error"`` mode is kept (its syncs raise instead of being counted)."""
    import warnings

    import torch

    previous_mode = torch.cuda.get_sync_debug_mode()
    previous_show = warnings.showwarning

    def show(
        message: Any, category: Any, filename: str, lineno: int, *args: Any, **kwargs: Any
    ) -> None:
        if "synchroniz" in str(message).lower():
            rec.note_sync(f"{filename}:{lineno}")
            return
        previous_show(message, category, filename, lineno, *args, **kwargs)

    warnings.showwarning = show
    if previous_mode < 1:  # 0 "default", 1 "warn", 2 "error": never weaken the caller's
        torch.cuda.set_sync_debug_mode("warn")

    def restore() -> None:
        torch.cuda.set_sync_debug_mode(previous_mode)
        warnings.showwarning = previous_show

    return restore
