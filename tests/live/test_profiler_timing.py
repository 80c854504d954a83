"""The profiler's timing leaves the loop's overlap alone.

On the CPU: an overlapped loop (DataLoader workers prepare batches while the model computes) gets
the same shares and verdict under the profiler as under hand-placed ``perf_counter`` calls, at a
small cost. On CUDA, faked here by a virtual GPU that runs queued work in real time: the profiler
records events and never waits inside a step, so data loading hidden behind queued GPU work is
not counted as a stall (synchronising at each phase boundary, as the profiler once did, makes
the same loop "input-bound").
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, Dataset  # noqa: E402

from suanli.live.diagnosis import StepRecord, diagnose_steps  # noqa: E402
from suanli.live.profiler import profile  # noqa: E402
from suanli.live.step_clock import CudaEventClock, HostClock, make_clock  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# -- a virtual GPU ------------------------------------------------------------------------------


class _FakeGpu:
    """One stream of a GPU that runs in real time: launched work queues behind earlier work, and
    the host never waits unless something synchronises."""

    def __init__(self) -> None:
        self.tail_s = 0.0
        self.events_made = 0
        self.event_waits = 0
        self.device_syncs = 0

    def launch(self, seconds: float) -> None:
        self.tail_s = max(self.tail_s, time.perf_counter()) + seconds

    def block_until(self, t_s: float) -> None:
        while (left := t_s - time.perf_counter()) > 0:
            time.sleep(min(left, 0.001))


def _fake_cuda(monkeypatch: pytest.MonkeyPatch, gpu: _FakeGpu) -> None:
    """``torch.cuda`` as the profiler uses it, backed by ``gpu``."""

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            gpu.events_made += 1
            self.at_s: float | None = None

        def record(self, stream: object = None) -> None:
            # The event completes when the stream reaches it: after the queued work.
            self.at_s = max(gpu.tail_s, time.perf_counter())

        def query(self) -> bool:
            return self.at_s is not None and time.perf_counter() >= self.at_s

        def synchronize(self) -> None:
            gpu.event_waits += 1
            gpu.block_until(self.at_s or 0.0)

        def elapsed_time(self, end: Event) -> float:
            if not (self.query() and end.query()):  # as torch: both must have completed
                raise RuntimeError("Both events must be completed before calculating elapsed time.")
            assert self.at_s is not None and end.at_s is not None
            return (end.at_s - self.at_s) * 1e3

    def synchronize(device: object = None) -> None:
        gpu.device_syncs += 1
        gpu.block_until(gpu.tail_s)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda mode: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: 0)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda *a: 0)


class _BackwardWork(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any, gpu: _FakeGpu, seconds: float) -> Any:
        ctx.gpu, ctx.seconds = gpu, seconds
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple[Any, None, None]:
        ctx.gpu.launch(ctx.seconds)
        return grad, None, None


class _GpuModel(torch.nn.Module):
    """A module that queues ``forward_s`` and ``backward_s`` of GPU work."""

    def __init__(self, gpu: _FakeGpu, forward_s: float, backward_s: float) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 1)
        self.gpu, self.forward_s, self.backward_s = gpu, forward_s, backward_s

    def forward(self, x: Any) -> Any:
        self.gpu.launch(self.forward_s)
        return _BackwardWork.apply(self.net(x), self.gpu, self.backward_s)


class _SlowBatches(Dataset):  # type: ignore[type-arg]
    """Whole batches that each take ``delay_s`` to load, on the host."""

    def __init__(self, delay_s: float, batches: int) -> None:
        self.delay_s, self.batches = delay_s, batches

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        time.sleep(self.delay_s)
        return torch.randn(16, 8), torch.randn(16, 1)


def _gpu_loop(
    gpu: _FakeGpu, data_s: float, forward_s: float, backward_s: float, steps: int = 12
) -> tuple[Any, dict[str, int]]:
    model = _GpuModel(gpu, forward_s, backward_s)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    opt.register_step_pre_hook(lambda *a: gpu.launch(0.1 * backward_s))  # the optimizer's work
    loader = DataLoader(_SlowBatches(data_s, steps), batch_size=None)
    with profile() as prof:
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        during = {
            "device_syncs": gpu.device_syncs,
            "event_waits": gpu.event_waits,
            "read": len(prof.records),
        }
    return prof, during


def test_gpu_work_hides_the_data_wait_and_no_step_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 ms of loading per batch on the host, 35 ms of GPU work per step: the host runs ahead,
    # the GPU never idles, the loop is GPU-bound. Waiting for the GPU at each phase boundary
    # would show data at 20 / 55 ms = 36% of the step: "input-bound".
    gpu = _FakeGpu()
    _fake_cuda(monkeypatch, gpu)
    prof, during = _gpu_loop(gpu, data_s=0.020, forward_s=0.010, backward_s=0.023)
    assert during["device_syncs"] == 0 and during["event_waits"] == 0  # none inside the loop
    assert during["read"] < 12  # steps still queued on the GPU were read later, not waited for
    assert len(prof.records) == 12 and prof.errors == []
    report = prof.report(warmup=2)
    assert report.verdict == "compute-bound"
    assert report.shares["data"] < 0.05
    assert report.step_time_s == pytest.approx(0.0353, rel=0.1)  # the GPU's step, not the host's
    assert report.extras["timing"] == "cuda-events"
    # Read events are reused: six marks a step took far fewer events (the GPU ran up to seven
    # steps behind here, so their events were all in flight at once).
    assert gpu.events_made < 0.6 * 6 * 12


def test_an_idle_gpu_waiting_for_data_is_input_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # 30 ms of loading, 7 ms of GPU work: the GPU idles while the host loads.
    gpu = _FakeGpu()
    _fake_cuda(monkeypatch, gpu)
    prof, during = _gpu_loop(gpu, data_s=0.030, forward_s=0.002, backward_s=0.004)
    assert during["device_syncs"] == 0 and during["event_waits"] == 0
    report = prof.report(warmup=2)
    assert report.verdict == "input-bound"
    assert report.shares["data"] > 0.6


def test_the_event_clock_polls_and_reuses_events(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = _FakeGpu()
    _fake_cuda(monkeypatch, gpu)
    clock = make_clock(cuda=True)
    assert isinstance(clock, CudaEventClock)
    start = clock.mark()
    gpu.launch(0.05)
    end = clock.mark()
    assert not clock.ready(end)  # queued behind 50 ms of work: polling does not wait
    assert gpu.event_waits == 0
    clock.wait(end)
    assert clock.ready(end)
    assert clock.elapsed_s(start, end) == pytest.approx(0.05, abs=0.01)
    clock.release([start])
    assert clock.mark().event is start.event  # read events go back to the pool
    host = make_clock(cuda=False)
    assert type(host) is HostClock and host.ready(host.mark())


def test_a_failing_event_falls_back_to_host_time(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = _FakeGpu()
    _fake_cuda(monkeypatch, gpu)

    def broken(self: object, stream: object = None) -> None:
        raise RuntimeError("event record failed")

    monkeypatch.setattr(torch.cuda.Event, "record", broken)
    prof, _ = _gpu_loop(gpu, data_s=0.0, forward_s=0.001, backward_s=0.001, steps=5)
    assert len(prof.records) == 5  # training and recording went on
    assert prof.errors and "event record failed" in prof.errors[0]


def test_a_step_that_cannot_be_read_is_dropped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = _FakeGpu()
    _fake_cuda(monkeypatch, gpu)

    def broken(self: object, end: object) -> float:
        raise RuntimeError("elapsed_time failed")

    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", broken)
    prof, _ = _gpu_loop(gpu, data_s=0.0, forward_s=0.001, backward_s=0.001, steps=5)
    assert prof.records == [] and prof._unresolved == []  # dropped, not retried every step
    assert prof.errors == ["RuntimeError: elapsed_time failed"]  # kept once, not once a step


# -- an overlapped loop on the CPU --------------------------------------------------------------


class _Batches(Dataset):  # type: ignore[type-arg]
    """Ready-made batches that take ``delay_s`` each to load (a sleep: no CPU is used)."""

    def __init__(self, delay_s: float, batches: int, width: int = 64, batch: int = 128) -> None:
        self.delay_s, self.batches = delay_s, batches
        self.x, self.y = torch.randn(batch, width), torch.randn(batch, 1)

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        time.sleep(self.delay_s)
        return self.x, self.y


def _mlp(width: int) -> tuple[Any, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 1),
    )
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def _by_hand(loader: Any, model: Any, opt: Any) -> tuple[list[StepRecord], list[float]]:
    """The loop with the profiler's phase boundaries timed by hand (no hooks)."""
    records, walls = [], []
    it = iter(loader)
    t0 = time.perf_counter()
    while True:
        try:
            x, y = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        out = model(x)
        t2 = time.perf_counter()
        loss = torch.nn.functional.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        records.append(
            StepRecord(data=t1 - t0, forward=t2 - t1, backward=t3 - t2, optimizer=t4 - t3)
        )
        walls.append(t4 - t0)
        t0 = t4
    return records, walls


def test_an_overlapped_cpu_loop_keeps_its_shares_verdict_and_speed() -> None:
    steps, warmup, width = 10, 2, 1536
    model, opt = _mlp(width)
    # Each batch takes half a compute step to load; two workers load two at a time, so loading
    # hides behind compute (on a fast or a slow machine alike).
    probe, _ = _by_hand(DataLoader(_Batches(0.0, 4), batch_size=None), model, opt)
    delay_s = 0.5 * statistics.median(r.compute for r in probe[1:])

    def loader() -> Any:
        return DataLoader(_Batches(delay_s, steps), batch_size=None, num_workers=2)

    plain_walls: list[float] = []
    profiled_walls: list[float] = []
    for _ in range(2):  # interleaved: both see the same machine load
        plain, walls = _by_hand(loader(), model, opt)
        plain_walls += walls[warmup:]
        with profile() as prof:  # the same loop, the same hand timing, and the profiler
            by_hand, walls = _by_hand(loader(), model, opt)
        profiled_walls += walls[warmup:]
    without = diagnose_steps(plain, warmup=warmup)
    within = diagnose_steps(by_hand, warmup=warmup)
    measured = prof.report(warmup=warmup)
    assert prof.errors == [] and measured.steps == steps - warmup
    # The profiler reads what hand-placed timers read in the same steps...
    for phase in ("data", "forward", "backward", "optimizer"):
        assert measured.shares[phase] == pytest.approx(within.shares[phase], abs=0.05), phase
    # ...and being profiled does not change the loop: the loading still overlaps, the verdict
    # is the one of the loop without the profiler (the compute phases' split between runs moves
    # with the machine's load, not with the profiler).
    assert without.shares["data"] < 0.15
    assert measured.shares["data"] == pytest.approx(without.shares["data"], abs=0.1)
    assert measured.verdict == without.verdict
    # The overhead, as a ratio of median step times in this one run: a generous bound (the
    # hooks cost microseconds against a step of tens of milliseconds).
    ratio = statistics.median(profiled_walls) / statistics.median(plain_walls)
    assert ratio < 1.5
