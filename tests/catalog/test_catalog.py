"""The bundled catalog loads, validates, and holds the published figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu, load_catalog
from suanli.catalog.gpu import NUMERIC_FIELDS
from suanli.catalog.loader import parse_catalog_text
from suanli.units import GiB


def test_whole_catalog_loads_with_at_least_40_entries() -> None:
    gpus = bundled_gpus()
    assert len(gpus) >= 40
    assert len({g.id for g in gpus}) == len(gpus)


def test_every_figure_has_a_dated_source() -> None:
    for gpu in bundled_gpus():
        for key, value in gpu.as_dict().items():
            if key in NUMERIC_FIELDS and value is not None:
                src = gpu.source_of(key)
                assert src is not None, f"{gpu.id}.{key} has no source"
                assert src.ref and src.date[:2] in ("19", "20")


def test_required_vendors_and_families_present() -> None:
    gpus = bundled_gpus()
    for query in [
        "B200",
        "H200",
        "H100 SXM",
        "H100 PCIe",
        "H800",
        "H20",
        "L40S",
        "L4",
        "T4",
        "A10G",
        "RTX 4090",
        "RTX 3090",
        "MI300X",
        "MI325X",
        "Gaudi 3",
        "910B",
        "M2 Ultra",
    ]:
        assert find_gpu(query, gpus)


# Published dense figures (datasheet value with sparsity, halved), per shared/reference/gpus.csv.
@pytest.mark.parametrize(
    ("query", "field", "published"),
    [
        ("H100 SXM", "peak_bf16_dense_flops", 989e12),  # NVIDIA: 1,979 with sparsity
        ("H100 SXM", "memory_bandwidth_bytes_per_s", 3.35e12),
        ("H200", "memory_bandwidth_bytes_per_s", 4.8e12),
        ("A100 SXM 80GB", "peak_bf16_dense_flops", 312e12),  # A100 datasheet: 312 | 624*
        ("L40S", "peak_bf16_dense_flops", 362.05e12),  # datasheet: 362.05 | 733*
        ("L4", "peak_fp16_dense_flops", 121e12),  # datasheet gives 242 sparse
        ("MI300X", "peak_bf16_dense_flops", 1307e12),  # AMD quotes 2,615 sparse
        ("RTX 4090", "peak_fp16_dense_flops", 165.15e12),  # FP32 accumulate, dense
        ("RTX 4090", "memory_bandwidth_bytes_per_s", 1008e9),
        ("T4", "peak_fp16_dense_flops", 65e12),
    ],
)
def test_published_dense_figures(query: str, field: str, published: float) -> None:
    value = find_gpu(query, bundled_gpus()).get(field)
    assert value == pytest.approx(published, rel=0.01)


def test_memory_is_binary_gib() -> None:
    assert find_gpu("H100 SXM", bundled_gpus()).memory_bytes == 80 * GiB
    assert find_gpu("RTX 4090", bundled_gpus()).memory_bytes == 24 * GiB


GOOD = """
[[gpu]]
id = "my-card"
name = "My Card"
vendor = "nvidia"
form_factor = "pcie"
memory_bytes = 25_769_803_776
memory_type = "GDDR6"
memory_bandwidth_bytes_per_s = 600e9
launch_year = 2024
software_stack = "cuda"
peak_bf16_dense_flops = 100e12
tdp_watts = 300
[[gpu.sources]]
fields = ["*"]
ref = "test"
date = "2026-11"
"""


def test_good_entry_parses() -> None:
    (gpu,) = parse_catalog_text(GOOD, "user.toml")
    assert gpu.peak_flops("bf16") == 100e12


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("launch_year = 2024", "launch_year = 2024\nhbm_size = 3"), "unknown key(s) hbm_size"),
        (("peak_bf16_dense_flops = 100e12", "peak_bf16_dense_flops = 900e12"), "sparse"),
        (("memory_bytes = 25_769_803_776", "memory_bytes = 24"), "plausible range"),
        (('vendor = "nvidia"', 'vendor = "nvidai"'), "vendor"),
        (('fields = ["*"]', 'fields = ["tdp_watts"]'), "without a source"),
        (('date = "2026-11"', 'date = "last year"'), "YYYY-MM"),
        (('id = "my-card"', 'id = "My Card"'), "lower-case"),
        (('memory_type = "GDDR6"\n', ""), "memory_type"),
        (("tdp_watts = 300", "tdp_watts = 300\npeak_bf16_sparse_flops = 150e12"), "twice"),
        (("tdp_watts = 300", 'tdp_watts = 300\nuncertain = ["price_usd"]'), "uncertain"),
        (
            (
                "tdp_watts = 300",
                'tdp_watts = 300\nprice_usd = 999\nprice_date = "2024-01"\nprice_kind = "cheap"',
            ),
            "price_kind",
        ),
        (("tdp_watts = 300", "tdp_watts = 300\nprice_usd = 999"), "go together"),
    ],
)
def test_invalid_entries_are_rejected_with_the_file_and_entry(
    edit: tuple[str, str], message: str
) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    with pytest.raises(CatalogError) as err:
        parse_catalog_text(text, "user.toml")
    assert message in str(err.value)
    assert "user.toml" in str(err.value)


def test_alias_naming_two_entries_rejected() -> None:
    from suanli.catalog.loader import _check_unique

    one = parse_catalog_text(GOOD, "a.toml")[0]
    two = parse_catalog_text(GOOD.replace('id = "my-card"', 'id = "other"'), "b.toml")[0]
    with pytest.raises(CatalogError, match="aliases must be unique"):
        _check_unique([one, two])


def test_duplicate_ids_rejected() -> None:
    with pytest.raises(CatalogError, match="duplicate id 'my-card'"):
        parse_catalog_text(GOOD + GOOD.replace("[[gpu.sources]]", "[[gpu.sources]]", 1), "u.toml")


def test_user_file_adds_and_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUANLI_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    override = GOOD.replace('id = "my-card"', 'id = "h100-sxm-80gb"').replace("My Card", "Mine")
    path = tmp_path / "mine.toml"
    path.write_text(GOOD + override.replace("[[gpu]]", "\n[[gpu]]"))
    gpus = load_catalog(path)
    assert find_gpu("my-card", gpus).name == "My Card"
    assert find_gpu("h100-sxm-80gb", gpus).peak_flops("bf16") == 100e12
    assert len(gpus) == len(bundled_gpus()) + 1


def test_per_user_config_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUANLI_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "suanli").mkdir()
    (tmp_path / "suanli" / "gpus.toml").write_text(GOOD)
    assert find_gpu("my card", load_catalog()).id == "my-card"


def test_an_edited_user_file_is_read_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's file is parsed once per text (a plan loads the catalog about 80 times): an
    edit between two loads is seen, names included."""
    monkeypatch.delenv("SUANLI_CATALOG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    before = load_catalog(path)
    assert find_gpu("my card", before).memory_bytes == 24 * GiB
    path.write_text(GOOD.replace("25_769_803_776", "51_539_607_552").replace("My Card", "Big"))
    after = load_catalog(path)
    assert find_gpu("my-card", after).memory_bytes == 48 * GiB
    assert find_gpu("big", after).id == "my-card"
    with pytest.raises(CatalogError):
        find_gpu("big", before)
    path.write_text(GOOD)
    assert find_gpu("my card", load_catalog(path)).memory_bytes == 24 * GiB


def test_missing_user_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read catalog file"):
        load_catalog(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("4090", "rtx"),
        ("rtx4090", "rtx"),
        ("RTX 4090", "rtx"),
        ("H100 SXM", "h100-sxm"),
        ("h100-sxm", "h100-sxm"),
        ("MI300X", "mi300x"),
    ],
)
def test_lookup_forgives_case_spaces_dashes(query: str, expected: str) -> None:
    assert expected in find_gpu(query, bundled_gpus()).id


def test_ambiguous_name_lists_candidates() -> None:
    with pytest.raises(CatalogError, match="ambiguous") as err:
        find_gpu("6000", bundled_gpus())
    assert "rtx-6000-ada" in str(err.value) and "rtx-a6000" in str(err.value)


def test_unknown_name_suggests_near_names() -> None:
    with pytest.raises(CatalogError, match="did you mean") as err:
        find_gpu("H1000 SXM", bundled_gpus())
    assert "h100" in str(err.value)
