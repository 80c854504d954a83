"""Card names resolve to the card meant: exact model numbers win, ambiguity is an error."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.catalog import CatalogError, bundled_gpus, find_gpu
from suanli.catalog.gpu import GPU
from suanli.catalog.lookup import FAMILY_PREFIXES, model_key

GPUS = bundled_gpus()


def _resolve(query: str) -> GPU | CatalogError:
    try:
        return find_gpu(query, GPUS)
    except CatalogError as err:
        return err


def _variants(key: str) -> set[str]:
    """A name as people type it: as stored, without the memory size, without the family word."""
    tokens, memory = model_key(key)
    out = {key, " ".join(tokens)}
    if memory is not None:
        out.add(f"{' '.join(tokens)} {memory}gb")
    return {v for v in out if v.strip()}


def test_every_id_name_and_alias_resolves_to_its_own_card() -> None:
    for gpu in GPUS:
        for key in (gpu.id, gpu.name, *gpu.aliases):
            assert find_gpu(key, GPUS).id == gpu.id, key


def test_no_silent_substitution_across_the_catalog() -> None:
    """Every shortened spelling of every key gives its own card or an error that names it."""
    substitutions = []
    for gpu in GPUS:
        for key in (gpu.id, gpu.name, *gpu.aliases):
            for query in _variants(key):
                got = _resolve(query)
                if isinstance(got, CatalogError):
                    assert gpu.id in str(got), (query, str(got))
                elif got.id != gpu.id:
                    substitutions.append((query, gpu.id, got.id))
    # The only allowed cross-resolutions are explicit aliases (a100 -> A100 SXM 80GB, ...):
    # the shortened query equals an alias of the card it returns.
    unexplained = [
        s for s in substitutions if model_key(s[0])[0] not in _alias_keys(find_gpu(s[2], GPUS))
    ]
    assert unexplained == []


def _alias_keys(gpu: GPU) -> set[tuple[str, ...]]:
    return {model_key(a)[0] for a in (gpu.id, gpu.name, *gpu.aliases)}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("4060", "rtx-4060-8gb"),
        ("RTX 4060", "rtx-4060-8gb"),
        ("geforce rtx 4060 8gb", "rtx-4060-8gb"),
        ("4070", "rtx-4070-12gb"),
        ("4070 ti", "rtx-4070-ti-12gb"),
        ("4070 super", "rtx-4070-super-12gb"),
        ("4070 ti super", "rtx-4070-ti-super-16gb"),
        ("4090", "rtx-4090-24gb"),
        ("4090D", "rtx-4090d-24gb"),
        ("4090 laptop", "rtx-4090-laptop-16gb"),
        ("7900 xt", "rx-7900-xt-20gb"),
        ("7900 xtx", "rx-7900-xtx-24gb"),
        ("b580", "arc-b580-12gb"),
        ("p40", "p40-24gb"),
        ("m4 pro", "m4-pro-64gb"),
        ("4060 ti 8gb", "rtx-4060-ti-8gb"),
        ("4060 ti 16gb", "rtx-4060-ti-16gb"),
    ],
)
def test_whole_model_numbers_resolve(query: str, expected: str) -> None:
    assert find_gpu(query, GPUS).id == expected


@pytest.mark.parametrize(
    ("query", "candidates"),
    [
        ("3080", {"rtx-3080-10gb", "rtx-3080-12gb"}),
        ("4060 ti", {"rtx-4060-ti-8gb", "rtx-4060-ti-16gb"}),
        ("5060 ti", {"rtx-5060-ti-8gb", "rtx-5060-ti-16gb"}),
        ("v100 pcie", {"v100-pcie-16gb", "v100-pcie-32gb"}),
    ],
)
def test_same_model_in_two_memory_sizes_is_ambiguous(query: str, candidates: set[str]) -> None:
    with pytest.raises(CatalogError, match="ambiguous") as err:
        find_gpu(query, GPUS)
    assert all(c in str(err.value) for c in candidates)


def test_a_prefix_of_a_longer_model_number_is_never_chosen() -> None:
    # "406" is no card: the error names the candidates instead of picking one.
    with pytest.raises(CatalogError) as err:
        find_gpu("406", GPUS)
    assert "rtx-4060-8gb" in str(err.value)
    assert find_gpu("4090", GPUS).id != "rtx-4090d-24gb"


def test_a100_is_the_sxm_80gb_by_explicit_alias() -> None:
    """'a100' is an alias of the A100 SXM 80GB (the DGX/HGX part clouds rent); documented in
    docs/catalog.md. The 40 GB card needs its size: 'a100 40gb'."""
    assert find_gpu("a100", GPUS).id == "a100-sxm-80gb"
    assert find_gpu("a100 40gb", GPUS).id == "a100-sxm-40gb"
    assert find_gpu("a100 80gb", GPUS).id == "a100-sxm-80gb"


def test_a_memory_size_that_differs_is_not_matched() -> None:
    with pytest.raises(CatalogError):
        find_gpu("4070 16gb", GPUS)


def test_family_prefixes_are_documented_words() -> None:
    assert {"rtx", "rx", "arc"} <= FAMILY_PREFIXES


def test_media_fields_on_consumer_and_datacenter_cards() -> None:
    h100 = find_gpu("h100", GPUS)
    assert h100.get("nvenc_engines") == 0 and h100.get("nvdec_engines") == 7
    assert find_gpu("a100", GPUS).get("nvenc_engines") == 0
    l40s = find_gpu("l40s", GPUS)
    assert l40s.get("nvenc_engines") == 3 and l40s.get("av1_encode") is True
    assert find_gpu("l4", GPUS).get("av1_encode") is True
    for gpu in GPUS:
        if gpu.form_factor in ("consumer", "workstation") and gpu.vendor != "apple":
            assert gpu.get("nvenc_engines") is not None, gpu.id
            assert gpu.get("av1_encode") is not None, gpu.id
        assert gpu.as_dict().get("av1_encode") == gpu.get("av1_encode")


def test_av1_encode_must_be_a_boolean() -> None:
    from suanli.catalog.loader import parse_catalog_text

    text = """
[[gpu]]
id = "x"
name = "X"
vendor = "nvidia"
form_factor = "consumer"
memory_bytes = 8_589_934_592
memory_type = "GDDR6"
memory_bandwidth_bytes_per_s = 272e9
launch_year = 2023
software_stack = "cuda"
av1_encode = 1
[[gpu.sources]]
fields = ["*"]
ref = "test"
date = "2026-12"
"""
    with pytest.raises(CatalogError, match="av1_encode must be true or false"):
        parse_catalog_text(text, "t.toml")


def test_each_catalog_is_looked_up_in_itself() -> None:
    """Names are indexed once per catalog: a catalog of the same length and ids, one entry
    renamed (a user's override), answers with its own entries, and the bundled one with its."""
    h100 = find_gpu("h100-sxm-80gb", GPUS)
    mine = replace(h100, name="My Lab H100", aliases=("labcard",))
    renamed = [mine if g is h100 else g for g in GPUS]
    assert find_gpu("labcard", renamed) is mine
    assert find_gpu("my lab h100", renamed) is mine
    assert find_gpu("h100-sxm-80gb", renamed) is mine
    assert find_gpu("h100-sxm-80gb", GPUS) is h100
    with pytest.raises(CatalogError):
        find_gpu("labcard", GPUS)
    assert find_gpu("NVIDIA H100 SXM", GPUS) is h100
