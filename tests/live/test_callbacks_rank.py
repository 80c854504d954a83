"""The Hugging Face and Lightning callbacks report on rank 0 alone, or on every rank when asked.

The rank is faked (launcher variables, an initialised process group) and the callbacks' hooks are
called around a small loop, as the trainers call them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from suanli.live.callbacks import current_rank, hf_callback, lightning_callback  # noqa: E402


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)


def _train(steps: int = 5) -> None:
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.TensorDataset(torch.randn(8 * steps, 4), torch.randn(8 * steps, 1))
    for x, y in torch.utils.data.DataLoader(data, batch_size=8):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def _hf(**options: Any) -> tuple[Any, Callable[[], None], Callable[[], None]]:
    pytest.importorskip("transformers")
    cb = hf_callback(warmup=1, **options)
    return (
        cb,
        lambda: cb.on_train_begin(None, None, None),
        lambda: cb.on_train_end(None, None, None),
    )


def _lightning(**options: Any) -> tuple[Any, Callable[[], None], Callable[[], None]]:
    try:
        import lightning.pytorch  # noqa: F401
    except ImportError:
        pytest.importorskip("pytorch_lightning")
    cb = lightning_callback(warmup=1, **options)
    return cb, lambda: cb.on_train_start(None, None), lambda: cb.on_train_end(None, None)


FRAMEWORKS = [pytest.param(_hf, id="hugging-face"), pytest.param(_lightning, id="lightning")]


def _run(make: Any, **options: Any) -> Any:
    cb, begin, end = make(**options)
    begin()
    _train()
    end()
    return cb


@pytest.mark.parametrize("make", FRAMEWORKS)
@pytest.mark.parametrize("variable", ["RANK", "LOCAL_RANK"])
def test_other_ranks_stay_silent_and_uninstrumented(
    make: Any, variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(variable, "1")
    cb = _run(make)
    assert capsys.readouterr().out == ""
    assert cb.session.rank == 1
    assert cb.session.recorder is None and cb.session.report is None


@pytest.mark.parametrize("make", FRAMEWORKS)
def test_rank_zero_reports_once_without_a_label(
    make: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    cb = _run(make)
    out = capsys.readouterr().out
    assert out.count("suanli doctor:") == 1 and "[rank" not in out
    assert cb.session.report is not None and cb.session.report.steps >= 3


@pytest.mark.parametrize("make", FRAMEWORKS)
def test_every_rank_reports_when_asked(
    make: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RANK", "3")
    cb = _run(make, all_ranks=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("[rank 3] ") for line in lines)
    assert "suanli doctor:" in lines[0]
    assert cb.session.report is not None


def test_the_process_group_decides_over_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    monkeypatch.setenv("RANK", "0")  # a launcher's variable that the group contradicts
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 2)
    assert current_rank() == 2
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    assert current_rank() == 0


def test_the_rank_without_a_group() -> None:
    assert current_rank() == 0  # a single process: no variable, no group


def test_rank_variables_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert current_rank() == 1
    monkeypatch.setenv("RANK", "5")  # the global rank first
    assert current_rank() == 5
    monkeypatch.setenv("RANK", "not-a-number")
    assert current_rank() == 1
