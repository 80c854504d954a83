"""China-market NVIDIA variants and China domestic accelerators (issue 20, catalog part)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.gpu import GPU, NUMERIC_FIELDS, SOFTWARE_STACKS, VENDORS
from suanli.catalog.loader import _SPARSE_PAIRS

GPUS = bundled_gpus()

#: The China-market NVIDIA parts (export-compliant variants sold in China).
CHINA_NVIDIA = {
    "h20-96gb",
    "h800-sxm-80gb",
    "a800-sxm-80gb",
    "a800-pcie-80gb",
    "l20-48gb",
    "l2-24gb",
    "rtx-4090d-24gb",
}
#: Vendors whose parts are all China domestic accelerators.
DOMESTIC_VENDORS = {
    "huawei",
    "hygon",
    "cambricon",
    "kunlunxin",
    "moorethreads",
    "metax",
    "iluvatar",
    "biren",
    "enflame",
}
CHINA = [g for g in GPUS if g.id in CHINA_NVIDIA or g.vendor in DOMESTIC_VENDORS]

#: New software stacks and the vendor that uses each.
NEW_STACKS = {
    "dtk": "hygon",
    "neuware": "cambricon",
    "xpu-kunlun": "kunlunxin",
    "musa": "moorethreads",
    "maca": "metax",
    "corex": "iluvatar",
    "biren": "biren",
    "enflame": "enflame",
}


def test_at_least_twelve_accelerators_from_six_vendors() -> None:
    assert {g.id for g in CHINA} >= CHINA_NVIDIA
    assert len(CHINA) >= 12
    assert len({g.vendor for g in CHINA}) >= 6


def test_vendor_and_stack_ids_are_registered() -> None:
    assert set(VENDORS) >= DOMESTIC_VENDORS
    assert set(SOFTWARE_STACKS) >= set(NEW_STACKS)
    for stack, vendor in NEW_STACKS.items():
        assert any(g.software_stack == stack and g.vendor == vendor for g in GPUS), stack
    for gpu in GPUS:
        if gpu.vendor == "huawei":
            assert gpu.software_stack == "cann"


@pytest.mark.parametrize("gpu", CHINA, ids=lambda g: g.id)
def test_every_figure_has_a_dated_source_and_a_software_note(gpu: GPU) -> None:
    assert gpu.sources
    for src in gpu.sources:
        assert src.ref.strip()
        assert src.date[:2] == "20" and len(src.date) in (7, 10)
    for key, value in gpu.as_dict().items():
        if key in NUMERIC_FIELDS and value is not None:
            assert gpu.source_of(key) is not None, f"{gpu.id}.{key} has no source"
    note = gpu.get("software_note")
    assert isinstance(note, str) and len(note) > 20


@pytest.mark.parametrize("gpu", CHINA, ids=lambda g: g.id)
def test_sanity_of_figures(gpu: GPU) -> None:
    assert gpu.memory_bytes > 0
    assert gpu.memory_bandwidth_bytes_per_s > 0
    flops = [gpu.peak_flops(p) for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")]
    present = [f for f in flops if f is not None]
    assert present, f"{gpu.id} has no compute figure at all"
    assert all(f > 0 for f in present)
    for sparse, dense in _SPARSE_PAIRS.items():
        if gpu.get(sparse) is not None:
            assert gpu.get(dense) is not None
            assert gpu.get(dense) <= gpu.get(sparse)
    # Memory bandwidth and dense 16-bit compute in a plausible band for 2019-2025 parts.
    assert 50e9 <= gpu.memory_bandwidth_bytes_per_s <= 5e12
    for p in ("fp16", "bf16"):
        value = gpu.peak_flops(p)
        assert value is None or value <= 1.0e15


def test_figures_from_vendor_claims_only_are_marked_uncertain() -> None:
    """Entries whose whole source is recall or a single report carry `uncertain` figures."""
    for gid in (
        "ascend-910b-64gb",
        "ascend-910c-128gb",
        "r200-32gb",
        "metax-c500-64gb",
        "br104-32gb",
    ):
        gpu = find_gpu(gid, GPUS)
        assert gpu.uncertain, gid


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("4090d", "rtx-4090d-24gb"),
        ("h20", "h20-96gb"),
        ("l20", "l20-48gb"),
        ("a800", "a800-sxm-80gb"),  # documented default, like a100 -> SXM
        ("a800 pcie", "a800-pcie-80gb"),
        ("910b", "ascend-910b-64gb"),
        ("昇腾910B", "ascend-910b-64gb"),
        ("910c", "ascend-910c-128gb"),
        ("310p", "atlas-300i-duo-96gb"),
        ("k100 ai", "k100-ai-64gb"),
        ("mlu370", "mlu370-x8-48gb"),
        ("s4000", "mtt-s4000-48gb"),
        ("c500", "metax-c500-64gb"),
        ("br104", "br104-32gb"),
        ("i20", "enflame-i20-16gb"),
    ],
)
def test_names_resolve(query: str, expected: str) -> None:
    assert find_gpu(query, GPUS).id == expected


@pytest.mark.parametrize("name", ["4090d", "h20", "l20", "a800"])
def test_cli_gpu_resolves(name: str) -> None:
    from suanli.cli.main import cli

    result = CliRunner().invoke(cli, ["gpu", name])
    assert result.exit_code == 0, result.output


def test_published_china_figures() -> None:
    """Pinned to the sources named in the entries (read in the issue-20 session)."""
    h20 = find_gpu("h20", GPUS)
    assert h20.peak_flops("bf16") == pytest.approx(148e12)
    assert h20.peak_flops("fp8") == pytest.approx(296e12)
    assert h20.memory_bandwidth_bytes_per_s == pytest.approx(4.0e12)
    l20 = find_gpu("l20", GPUS)
    assert l20.peak_flops("bf16") == pytest.approx(119.5e12)
    assert l20.memory_bandwidth_bytes_per_s == pytest.approx(864e9)
    mlu = find_gpu("mlu370", GPUS)
    assert mlu.memory_bandwidth_bytes_per_s == pytest.approx(614.4e9)
    assert mlu.peak_flops("fp16") == pytest.approx(96e12)
    # TPP = dense TOPS x bit length stays under the 4,800 export threshold for H20, L20, L2.
    for gid in ("h20-96gb", "l20-48gb", "l2-24gb"):
        gpu = find_gpu(gid, GPUS)
        bf16 = gpu.peak_flops("bf16")
        assert bf16 is not None and bf16 / 1e12 * 16 < 4800
