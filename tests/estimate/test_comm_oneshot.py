"""The serving engines' custom all-reduce (TensorRT-LLM's one-shot kernels in vLLM and SGLang;
vLLM's own on ROCm) against the latencies measured on H100 (tests/fixtures/oneshot-allreduce.csv,
sglang#2904) and on MI300X (tests/fixtures/oneshot-allreduce-mi300x.csv, aiter#801 and
vllm#19744)."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import numpy as np
import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import get_link
from suanli.estimate.comm import Network, all_reduce_s, tp_all_reduce_s
from suanli.estimate.vector import _tp_all_reduce
from suanli.hardware import device_for

from ..scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "oneshot-allreduce.csv"
with FIXTURE.open(encoding="utf-8") as _f:
    MEASURED = [
        (int(r["gpus"]), int(r["bytes"]), float(r["latency_us"]) * 1e-6) for r in csv.DictReader(_f)
    ]
NVLINK4 = get_link("nvlink4").link()
MI300X_FIXTURE = ROOT / "tests" / "fixtures" / "oneshot-allreduce-mi300x.csv"
with MI300X_FIXTURE.open(encoding="utf-8") as _f:
    MI300X_MEASURED = [
        (int(r["gpus"]), int(r["bytes"]), float(r["latency_us"]) * 1e-6) for r in csv.DictReader(_f)
    ]
XGMI = get_link("infinity-fabric-mi300x").link()


def test_fit_is_close_to_every_measured_point() -> None:
    shot = NVLINK4.oneshot
    assert shot is not None
    errors = [abs(shot.seconds(size, n) - t) / t for n, size, t in MEASURED]
    assert statistics.median(errors) < 0.10
    assert max(errors) < 0.5


@pytest.mark.parametrize("link", ["nvlink4", "infinity-fabric-mi300x"])
def test_catalog_fields_are_what_the_research_fit_gives(link: str) -> None:
    """nvlink4: the switch form on H100 (absolute errors); MI300X: the mesh form, relative."""
    module = load_script("docs/research/derive_collective_fits.py")
    if link == "nvlink4":
        base, step, bandwidth = module.fit_oneshot(FIXTURE)
    else:
        base, step, bandwidth = module.fit_oneshot(MI300X_FIXTURE, per_peer=True, relative=True)
    shot = get_link(link).link().oneshot
    assert shot is not None
    assert shot.base_s == pytest.approx(base, rel=0.01)
    assert shot.step_s == pytest.approx(step, rel=0.01)
    assert shot.bytes_per_s == pytest.approx(bandwidth, rel=0.01)


def test_small_tensor_parallel_all_reduce_is_a_few_microseconds_on_h100() -> None:
    """A decode step's all-reduce (one token of a 70B model: 16 KiB) on 2 H100s: the measured
    kernel takes ~4 us where NCCL's ring or tree costs tens of microseconds."""
    nbytes = 8192 * 2
    assert tp_all_reduce_s(nbytes, 2, NVLINK4) == pytest.approx(4.2e-6, rel=0.15)
    assert all_reduce_s(nbytes, 2, NVLINK4) > 4 * tp_all_reduce_s(nbytes, 2, NVLINK4)


def test_large_messages_and_unmeasured_links_stay_on_nccl() -> None:
    big = 64 * 2**20
    assert tp_all_reduce_s(big, 8, NVLINK4) == all_reduce_s(big, 8, NVLINK4)
    # Beyond the measured 1 MiB the fit is not used even where it would be cheaper.
    just_over = 2**20 + 2
    assert tp_all_reduce_s(just_over, 2, NVLINK4) == all_reduce_s(just_over, 2, NVLINK4)
    nvlink3 = get_link("nvlink3").link()
    assert nvlink3.oneshot is None
    assert tp_all_reduce_s(16384, 8, nvlink3) == all_reduce_s(16384, 8, nvlink3)


def test_mi300x_fit_is_close_to_every_measured_point() -> None:
    """2 and 4 GPUs, 2 KiB-8 MiB: the full-mesh form (each peer adds an xGMI link) within 26%
    everywhere, median under 10%; the switch form of the NVLink fit cannot hold both group sizes
    (its bandwidth per GPU would have to double from 2 to 4 GPUs)."""
    shot = XGMI.oneshot
    assert shot is not None and shot.per_peer and shot.max_ranks == 4
    errors = [abs(shot.seconds(size, n) - t) / t for n, size, t in MI300X_MEASURED]
    assert statistics.median(errors) < 0.10
    assert max(errors) < 0.26
    assert {n for n, _, _ in MI300X_MEASURED} == {2, 4}


def test_mi300x_decode_all_reduce_uses_the_custom_kernel_on_two_and_four_gpus_only() -> None:
    """A 70B decode step's all-reduce (16 KiB): about 7 us through vLLM's kernel on 2 or 4
    MI300X (measured 7.3-7.5 us) where the RCCL model costs 15 and 30 us (7.5 us per tree
    step); 8 GPUs were not measured, so they stay on RCCL."""
    nbytes = 8192 * 2
    for n in (2, 4):
        link = XGMI.for_group(n)
        assert tp_all_reduce_s(nbytes, n, link) == pytest.approx(7.3e-6, rel=0.15)
        assert all_reduce_s(nbytes, n, link) > 2 * tp_all_reduce_s(nbytes, n, link)
    assert tp_all_reduce_s(nbytes, 8, XGMI) == all_reduce_s(nbytes, 8, XGMI)
    # More peers, more links: an 8 MiB all-reduce is faster on 4 GPUs than on 2 (118 vs 181 us).
    big = 8 * 2**20
    four, two = XGMI.for_group(4), XGMI.for_group(2)
    assert tp_all_reduce_s(big, 4, four) < 0.7 * tp_all_reduce_s(big, 2, two)
    assert tp_all_reduce_s(big + 1, 2, two) == all_reduce_s(big + 1, 2, two)


@pytest.mark.parametrize("gpu", ["h100", "a100", "l40s", "mi300x"])
def test_vectorized_equals_scalar(gpu: str) -> None:
    net: Network = device_for(find_gpu(gpu, bundled_gpus()), "bf16").network
    tp = np.array([1, 2, 4, 8, 2, 8, 16])
    nbytes = np.array([16384, 16384, 65536, 262144, 4e6, 1.5e6, 16384], dtype=float)
    vector = _tp_all_reduce(nbytes, tp, net)
    for i in range(len(tp)):
        n = int(tp[i])
        scalar = tp_all_reduce_s(float(nbytes[i]), n, net.link_for(n)) if n > 1 else 0.0
        assert vector[i] == pytest.approx(scalar, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"oneshot_bytes_per_s": "fast"}, "needs numeric"),
        ({"oneshot_source": None}, "needs numeric"),
        ({"oneshot_base_s": -1.0}, "implausible"),
        ({"oneshot_max_bytes": 0}, "implausible"),
        ({"oneshot_date": ""}, "implausible"),
        ({"oneshot_max_ranks": -2}, "implausible"),
        ({"oneshot_max_ranks": "four"}, "needs numeric"),
    ],
)
def test_a_bad_one_shot_row_is_one_sentence(change: dict[str, object], match: str) -> None:
    from suanli.catalog import CatalogError
    from suanli.catalog.network import _oneshot

    raw: dict[str, object] = {
        "oneshot_base_s": 2e-6,
        "oneshot_step_s": 1e-6,
        "oneshot_bytes_per_s": 3e10,
        "oneshot_max_bytes": 2**20,
        "oneshot_source": "a measurement",
        "oneshot_date": "2025-01",
    }
    for key, value in change.items():
        if value is None:
            del raw[key]
        else:
            raw[key] = value
    with pytest.raises(CatalogError, match=match):
        _oneshot(raw, "x")
    assert _oneshot({}, "x") is None
