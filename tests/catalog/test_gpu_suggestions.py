"""'Did you mean' for GPU names: catalog entries ranked by similarity."""

from __future__ import annotations

import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu
from suanli.catalog.lookup import similar_gpus


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("4090x", "rtx-4090-24gb"),
        ("H1000 SXM", "h100-sxm-80gb"),
        ("H20O", "h20-96gb"),
        ("l40x", "l40-48gb"),
        ("radeon 7900xtxx", "rx-7900-xtx-24gb"),
        ("tesla v1oo", "v100-sxm2-16gb"),  # no id is near: names and aliases are compared
    ],
)
def test_the_nearest_gpu_is_suggested_first(typed: str, first: str) -> None:
    assert similar_gpus(typed, bundled_gpus())[0].id == first
    with pytest.raises(CatalogError, match="did you mean") as err:
        find_gpu(typed, bundled_gpus())
    assert f"did you mean {first}" in str(err.value)


def test_suggestions_are_ranked_and_bounded() -> None:
    near = [g.id for g in similar_gpus("a1000", bundled_gpus(), limit=3)]
    assert len(near) == 3 and all(i.startswith("a100") for i in near)
    assert similar_gpus("zzzzzz", bundled_gpus()) == []
