"""On a GPU host: the training-loop profiler adds no synchronisation to a step, and it keeps the
overlap of data loading with GPU work that its verdict is about.

``torch.cuda.set_sync_debug_mode("error")`` raises on the implicit synchronisations (a blocking
copy, ``.item()``, a stream sync); ``torch.cuda.synchronize()`` and ``Event.synchronize()``
are explicit and not covered by it, so those are counted by wrapping them.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, Dataset, TensorDataset  # noqa: E402

from suanli.live.profiler import profile  # noqa: E402


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every explicit wait for the GPU from now on, by name."""
    calls: list[str] = []
    for owner, label in (
        (torch.cuda, "torch.cuda.synchronize"),
        (torch.cuda.Event, "Event.synchronize"),
        (torch.cuda.Stream, "Stream.synchronize"),
    ):
        original = owner.synchronize

        def counted(*args: Any, _original: Any = original, _label: str = label, **kw: Any) -> Any:
            calls.append(_label)
            return _original(*args, **kw)

        monkeypatch.setattr(owner, "synchronize", counted)
    return calls


def _step(model: Any, opt: Any, x: Any, y: Any) -> None:
    device = torch.device("cuda")
    # non_blocking: a blocking host-to-device copy is itself a synchronisation
    out = model(x.to(device, non_blocking=True))
    loss = torch.nn.functional.mse_loss(out, y.to(device, non_blocking=True))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def test_the_profiled_loop_adds_no_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = 12
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(64 * steps, 256), torch.randn(64 * steps, 1))
    loader = DataLoader(data, batch_size=64)
    _step(model, opt, *data[:64])  # libraries (cuBLAS) set up outside the checked loop
    torch.cuda.synchronize()
    calls = _count_syncs(monkeypatch)
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")  # any implicit sync in the loop raises
    try:
        with profile() as prof:
            for x, y in loader:
                _step(model, opt, x, y)
            in_loop = list(calls)
        mode_kept = torch.cuda.get_sync_debug_mode()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    assert in_loop == []  # not one explicit wait while the steps ran
    assert mode_kept == 2  # the profiler did not weaken "error" to its own "warn"
    assert prof.errors == [] and prof.sync_sites == {}
    assert len(prof.records) == steps  # the steps still queued were read once, after the loop
    report = prof.report(warmup=2)
    assert report.extras["timing"] == "cuda-events"
    assert report.shares["forward"] > 0 and report.shares["backward"] > 0


class _SlowBatches(Dataset):  # type: ignore[type-arg]
    """The same batch every time, after ``delay_s`` of loading on the host. Pinned: a copy of
    a large pageable buffer waits for the stream in the driver, and the host could not run ahead."""

    def __init__(self, delay_s: float, batches: int) -> None:
        self.delay_s, self.batches = delay_s, batches
        self.x = torch.randn(4096, 64).pin_memory()
        self.y = torch.randn(4096, 1).pin_memory()

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        time.sleep(self.delay_s)
        return self.x, self.y


def _deep_model() -> tuple[Any, Any]:
    torch.manual_seed(0)
    layers: list[Any] = [torch.nn.Linear(64, 4096), torch.nn.ReLU()]
    for _ in range(8):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 1)).cuda()
    return model, torch.optim.SGD(model.parameters(), lr=1e-6)


def _gpu_step_s(model: Any, opt: Any) -> float:
    """The GPU time of one step with data ready (measured with syncs, outside the profiler)."""
    batches = _SlowBatches(0.0, 1)
    for _ in range(2):
        _step(model, opt, batches.x, batches.y)
    times = []
    for _ in range(5):
        torch.cuda.synchronize()
        start = time.perf_counter()
        _step(model, opt, batches.x, batches.y)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _profiled(model: Any, opt: Any, delay_s: float, steps: int) -> Any:
    with profile() as prof:
        for x, y in DataLoader(_SlowBatches(delay_s, steps), batch_size=None):
            _step(model, opt, x, y)
    return prof.report(warmup=2)


def test_loading_hidden_behind_gpu_work_is_not_input_bound() -> None:
    model, opt = _deep_model()
    gpu_step_s = _gpu_step_s(model, opt)
    # Loading takes 70% of the GPU's step: the host launches a step and loads the next batch
    # while the GPU works. Synchronising at each phase boundary would show data at
    # 0.7 / 1.7 = 41% of the step ("input-bound"); the GPU never waits, so it is not.
    hidden = _profiled(model, opt, 0.7 * gpu_step_s, steps=12)
    assert hidden.shares["data"] < 0.1, hidden.shares
    assert hidden.verdict != "input-bound"
    assert hidden.step_time_s == pytest.approx(gpu_step_s, rel=0.25)
    # Loading three times as long as the GPU's step: the GPU idles, the loop is input-bound.
    starved = _profiled(model, opt, 3.0 * gpu_step_s, steps=8)
    assert starved.verdict == "input-bound", starved.shares
    assert starved.shares["data"] > 0.5
