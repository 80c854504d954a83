"""Fixtures shared by the live tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from suanli.live import nvml

from . import fake_pynvml as fake
from .fake_pynvml import Gpu, State

Install = Callable[..., State]


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Put a fake ``pynvml`` over the given GPUs in ``sys.modules``, with a fresh NVML session."""
    nvml.shutdown()

    def _install(gpus: list[Gpu], **kw: object) -> State:
        state = State(gpus, **kw)  # type: ignore[arg-type]
        monkeypatch.setitem(sys.modules, "pynvml", fake.load(state))
        return state

    yield _install
    nvml.shutdown()
