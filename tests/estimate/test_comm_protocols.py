"""NVLink 3's two NCCL protocol regimes: fitted on Vidur's 8xA100 curve (thinned into
tests/fixtures/collectives-vidur-a100-curve.csv), checked against Azure's ND A100 v4 curve
(tests/estimate/test_kernels_azure.py) and here against the fit itself and the vector path."""

from __future__ import annotations

import statistics
from dataclasses import replace
from types import ModuleType

import numpy as np
import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.loader import CatalogError
from suanli.catalog.network import get_link, links
from suanli.estimate.comm import all_reduce_s, tp_all_reduce_s
from suanli.estimate.device import device_for
from suanli.estimate.links import link_of
from suanli.estimate.vector_comm import all_reduce, tp_all_reduce

from ..catalog_patch import link_row_changed
from ..scripts import load_script

NVLINK3 = link_of(get_link("nvlink3"))


def _research() -> ModuleType:
    return load_script("docs/research/derive_collective_fits.py")


def test_catalog_fields_are_what_the_research_fit_gives() -> None:
    research = _research()
    small, bulk_base, before, after = research.fit_protocols(research.read_curve())
    assert NVLINK3.small_efficiency == pytest.approx(small, abs=0.005)
    assert NVLINK3.bulk_base_latency_s == pytest.approx(bulk_base, rel=0.01)
    assert after < 0.10 < before


def test_eight_gpus_within_forty_percent_and_mid_sizes_improve() -> None:
    """Every point of 8 GPUs within 40% (4 GPUs keep their known small-message anomaly: 20 us
    measured below 2 GPUs' 46 us, docs/speed.md); 2-32 MiB of all groups improve."""
    curve = _research().read_curve()
    one = replace(NVLINK3, small_efficiency=0.0, bulk_base_latency_s=0.0)
    errors = [all_reduce_s(s, n, NVLINK3) / t - 1 for n, s, t in curve if n == 8]
    assert len(errors) > 15 and max(abs(e) for e in errors) < 0.40
    mid = [(n, s, t) for n, s, t in curve if 2**21 <= s <= 2**25]
    assert mid
    two = statistics.median(abs(all_reduce_s(s, n, NVLINK3) / t - 1) for n, s, t in mid)
    single = statistics.median(abs(all_reduce_s(s, n, one) / t - 1) for n, s, t in mid)
    assert two < 0.12 and single > 0.25


def test_small_and_large_messages_keep_the_one_protocol_answer() -> None:
    one = replace(NVLINK3, small_efficiency=0.0, bulk_base_latency_s=0.0)
    for n in (2, 4, 8):
        assert all_reduce_s(4096, n, NVLINK3) == pytest.approx(all_reduce_s(4096, n, one), rel=0.01)
        big = 4 * 2**30
        assert all_reduce_s(big, n, NVLINK3) == pytest.approx(all_reduce_s(big, n, one), rel=0.02)


def test_only_nvlink3_carries_two_protocols() -> None:
    """The H100 and H200 curves are within 11% with one protocol (a two-protocol fit made the
    8-GPU median worse: 5% -> 11%), so no other link gets one."""
    assert [lid for lid, spec in links().items() if spec.small_efficiency] == ["nvlink3"]


@pytest.mark.parametrize("gpu", ["a100", "a100-pcie-80gb", "h100"])
def test_vectorized_equals_scalar(gpu: str) -> None:
    net = device_for(find_gpu(gpu, bundled_gpus()), "bf16").network
    group = np.array([2, 4, 8, 8, 8, 8, 16, 4])
    stride = np.array([1, 1, 1, 1, 1, 1, 1, 4])
    nbytes = np.array([4e6, 16e6, 1e3, 2e6, 8e6, 64e6, 8e6, 8e6])
    vector = all_reduce(net, nbytes, group, stride)
    tp_vector = tp_all_reduce(nbytes, group, net)
    for i in range(len(group)):
        link = net.link_for(int(group[i]), int(stride[i]))
        assert vector[i] == pytest.approx(all_reduce_s(float(nbytes[i]), int(group[i]), link))
        if stride[i] == 1:
            tp_link = net.link_for(int(group[i]))
            assert tp_vector[i] == pytest.approx(
                tp_all_reduce_s(float(nbytes[i]), int(group[i]), tp_link)
            )


def test_a_protocol_split_on_a_network_link_is_refused() -> None:
    split = {
        "small_efficiency": 0.3,
        "bulk_base_latency_s": 1e-4,
        "protocols_source": "x",
        "protocols_date": "2026-12",
    }
    with link_row_changed("ib-ndr", **split), pytest.raises(CatalogError, match="protocol split"):
        links()
