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

Instrumentation never breaks training: every hook body is guarded, and a failure is recorded in
``errors`` and the hook disables itself. torch is imported inside the functions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from suanli.i18n import N_
from suanli.live.diagnosis import Report, StepRecord, diagnose_steps


class StopProfiling(BaseException):
    """Raised from a hook to end a ``suanli doctor run`` after its steps. A BaseException, like
    KeyboardInterrupt: a script's own ``except Exception`` cannot swallow it."""


@dataclass
class _Pending:
    data: float = 0.0
    forward: float = 0.0
    forward_end: float | None = None
    optimizer_start: float | None = None
    syncs: int = 0


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
    _step_start: float = field(default_factory=time.perf_counter)
    _depth: int = 0
    _forward_start: float = 0.0
    _cache: list[Any] = field(default_factory=list)
    _cuda: bool = False
    model: Any = None
    """The outermost module seen in a forward (for the memory breakdown)."""
    optimizer: Any = None
    sync_sites: dict[str, int] = field(default_factory=dict)
    """Call sites of synchronising calls (CUDA sync debug mode) and how often they fired."""
    on_step: Callable[[Recorder], None] | None = None
    """Called after each recorded step (``suanli doctor run`` saves the steps so far with it,
    so that a process ending by ``os._exit`` or a signal still leaves them behind)."""

    @property
    def replaying(self) -> bool:
        """Whether the loader now feeds cached batches."""
        if not self.replay_steps or self.max_steps is None:
            return False
        return len(self.records) >= self.max_steps - self.replay_steps

    def _sync(self) -> None:
        if self._cuda:
            import torch

            torch.cuda.synchronize()

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except StopProfiling:
            raise
        except Exception as exc:  # instrumentation must never break the user's training
            self.errors.append(f"{type(exc).__name__}: {exc}")

    # -- data
    def wrap_iterator(self, iterator: Iterator[Any]) -> Iterator[Any]:
        """Time each batch fetch; in replay mode, yield cached batches instead."""
        while True:
            if self.replaying and self._cache:
                start = time.perf_counter()
                batch = self._cache[len(self.replay_records) % len(self._cache)]
                self._pending.data += time.perf_counter() - start
                yield batch
                continue
            start = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self._pending.data += time.perf_counter() - start
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
            self._sync()
            self._forward_start = time.perf_counter()
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
        if self._depth == 0:
            self._sync()
            now = time.perf_counter()
            self._pending.forward += now - self._forward_start
            self._pending.forward_end = now

    # -- optimizer
    def optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Global optimizer pre-hook: backward ends here."""
        self.optimizer = optimizer
        self._sync()
        self._pending.optimizer_start = time.perf_counter()

    def optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Global optimizer hook: close the step."""
        if self.finished:  # a script that swallowed the stop: record nothing more, stop again
            raise StopProfiling
        self._sync()
        now = time.perf_counter()
        p = self._pending
        opt_start = p.optimizer_start or now
        backward = opt_start - p.forward_end if p.forward_end else 0.0
        total = now - self._step_start
        optimizer = now - opt_start
        other = max(total - p.data - p.forward - backward - optimizer, 0.0)
        record = StepRecord(
            data=p.data,
            forward=p.forward,
            backward=max(backward, 0.0),
            optimizer=optimizer,
            other=other,
            syncs=p.syncs,
        )
        (self.replay_records if self.replaying else self.records).append(record)
        self._pending = _Pending()
        self._step_start = now
        if self.on_step is not None:
            self.on_step(self)
        if self.finished:
            raise StopProfiling

    @property
    def finished(self) -> bool:
        """Whether every step asked for is recorded (replay included)."""
        done = len(self.records) + len(self.replay_records)
        return self.max_steps is not None and done >= self.max_steps

    def snapshot(self, memory: dict[str, float] | None = None) -> dict[str, Any]:
        """What was recorded, as plain JSON-ready data (:func:`report_from_snapshot` reads it
        back, in this process or in the ``suanli doctor run`` parent)."""
        return {
            "records": [asdict(r) for r in self.records],
            "replay_records": [asdict(r) for r in self.replay_records],
            "errors": list(self.errors),
            "batch_size": self.batch_size,
            "memory_bytes": self.memory_breakdown() if memory is None else memory,
            "sync_sites": dict(sorted(self.sync_sites.items(), key=lambda kv: -kv[1])[:10]),
        }

    def report(self, warmup: int = 1) -> Report:
        """The verdict over the recorded steps (replayed steps give the data-free time)."""
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
    rec._step_start = time.perf_counter()
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


def _watch_syncs(rec: Recorder) -> Callable[[], None]:
    """CUDA only: turn on ``torch.cuda.set_sync_debug_mode('warn')`` and count each warning at
    its call site; returns a function that restores the previous state."""
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
    torch.cuda.set_sync_debug_mode("warn")

    def restore() -> None:
        torch.cuda.set_sync_debug_mode(previous_mode)
        warnings.showwarning = previous_show

    return restore
