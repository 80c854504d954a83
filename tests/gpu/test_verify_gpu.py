"""On a GPU host: verify a small preset and check the peak within 10% (the issue's target)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


def test_verify_peak_memory_on_cuda() -> None:
    pytest.importorskip("transformers")
    from suanli.estimate.workload import TrainWork
    from suanli.live.verify import verify_training
    from suanli.models.config import spec_from_config
    from suanli.models.presets import presets

    cfg = presets()["qwen2.5-0.5b"].config()
    work = TrainWork(task="full", batch=4, seq=1024, dtype="bf16", precision="pure")
    result = verify_training(spec_from_config(cfg), cfg, work, steps=3)
    assert result.device == "cuda"
    assert abs(result.error["peak_allocated"]) < 0.10
