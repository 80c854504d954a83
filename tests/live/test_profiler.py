"""End to end on the CPU: a real loop with a slow loader is input-bound and the fix helps."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader, Dataset  # noqa: E402

from suanli.live.profiler import profile  # noqa: E402


class _Data(Dataset):  # type: ignore[type-arg]
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> tuple[object, object]:
        if self.delay_s:
            time.sleep(self.delay_s)
        return torch.randn(64), torch.randn(1)


def _train(delay_s: float, workers: int, steps: int = 24, width: int = 256) -> tuple:  # type: ignore[type-arg]
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(_Data(delay_s), batch_size=32, num_workers=workers)
    with profile(max_steps=steps, replay_steps=min(6, steps // 3)) as prof:
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return prof.report(warmup=2), prof


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_slow_loader_is_input_bound_and_more_workers_fix_it() -> None:
    slow, prof = _train(delay_s=0.002, workers=0)
    assert slow.verdict == "input-bound"
    assert slow.data_free_step_s is not None and slow.data_free_step_s < slow.step_time_s / 3
    assert "num_workers" in slow.fixes[0].action
    assert prof.errors == []
    fixed, _ = _train(delay_s=0.002, workers=2)
    assert fixed.step_time_s < 0.75 * slow.step_time_s  # the fix raised the throughput


def test_fast_loader_is_not_input_bound() -> None:
    # A wide model: compute dominates the collate of 32 tiny samples even on a loaded machine.
    fast, _ = _train(delay_s=0.0, workers=0, width=4096)
    assert fast.verdict != "input-bound"


def test_hooks_are_removed_and_dataloader_restored() -> None:
    original = DataLoader.__iter__
    _train(0.0, 0, steps=5)
    assert DataLoader.__iter__ is original
    model = torch.nn.Linear(2, 2)
    model(torch.randn(1, 2))  # no hook left behind raises or records


def test_instrumentation_errors_never_break_training(monkeypatch: pytest.MonkeyPatch) -> None:
    from suanli.live import profiler

    def boom(self: object, *args: object) -> None:
        raise RuntimeError("instrumentation bug")

    monkeypatch.setattr(profiler.Recorder, "forward_pre", boom)
    report, prof = _train(0.0, 0, steps=6)
    assert prof.errors and "instrumentation bug" in prof.errors[0]
    assert report.steps >= 1
