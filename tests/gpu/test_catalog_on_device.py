"""On a GPU host: the catalog entry for the present card matches what the driver reports."""

from __future__ import annotations

import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu

pytestmark = pytest.mark.gpu


def test_catalog_memory_matches_the_device() -> None:
    torch = pytest.importorskip("torch")
    props = torch.cuda.get_device_properties(0)
    try:
        gpu = find_gpu(props.name, bundled_gpus())
    except CatalogError:
        pytest.skip(f"{props.name} is not in the catalog")
    # The driver reserves a little; usable memory sits within 3% below the nominal GiB.
    assert 0.97 * gpu.memory_bytes <= props.total_memory <= gpu.memory_bytes * 1.01
