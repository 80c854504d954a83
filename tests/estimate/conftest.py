"""Fixtures of the serving simulator's tests: the Llama-3.1-8B spec and its H100 replica cost."""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.estimate.device import device_for
from suanli.estimate.serving import ReplicaCost, replica_cost
from suanli.models.resolve import load_model
from suanli.models.spec import ModelSpec

H100 = find_gpu("h100-sxm-80gb", bundled_gpus())


@pytest.fixture(scope="module")
def llama8b() -> ModelSpec:
    return load_model("llama-3.1-8b").spec


@pytest.fixture(scope="module")
def h100_cost(llama8b: ModelSpec) -> ReplicaCost:
    return replica_cost(
        llama8b, device_for(H100, "bf16"), memory_bytes=H100.memory_bytes, reference_context=640
    )
