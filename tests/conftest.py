"""Shared test setup: tests marked ``gpu`` run only where CUDA is available."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _logging_disable_is_restored() -> Iterator[None]:
    """Tests that quiet transformers with ``logging.disable(...)`` leave the process-wide
    switch as they found it (it would silence the logging tests that run after them)."""
    before = logging.root.manager.disable
    yield
    logging.disable(before)
