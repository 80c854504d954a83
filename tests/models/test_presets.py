"""Every bundled preset parses, matches its published count, and matches transformers."""

from __future__ import annotations

import pytest

from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import Preset, find_preset, presets

from .test_params_transformers import _meta_count

PRESETS = sorted(presets().values(), key=lambda p: p.name)


def test_at_least_30_presets_over_the_supported_families() -> None:
    assert len(PRESETS) >= 30
    families = {p.family for p in PRESETS}
    for family in [
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "phi3",
        "gpt2",
        "gpt_neox",
        "bert",
        "deepseek_v2",
        "deepseek_v3",
    ]:
        assert family in families, family


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_preset_matches_published_count(preset: Preset) -> None:
    counts = count_params(spec_from_config(preset.config(), preset.name))
    assert preset.config()["model_type"] in (preset.family, "gemma3")
    if preset.published_params_total is None:
        pytest.skip(f"{preset.name}: no published count")
    published = preset.published_params_total - preset.published_buffers
    if preset.params_exact:
        assert counts.total == published, preset.params_source
    else:
        # A rounded figure such as "13B" or "671B": within 1%.
        assert counts.total == pytest.approx(published, rel=0.01)
    if preset.published_params_active:
        active = counts.active
        if preset.active_excludes_embeddings:
            active -= counts.by_component["embeddings"]
        assert active == pytest.approx(preset.published_params_active, rel=0.03)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_preset_matches_transformers_on_meta_device(preset: Preset) -> None:
    pytest.importorskip("transformers")
    cfg = preset.config()
    assert count_params(spec_from_config(cfg, preset.name)).total == _meta_count(cfg)


def test_lookup_forgives_case_and_accepts_hf_ids() -> None:
    first = PRESETS[0]
    assert find_preset(first.name.upper()) == first
    assert find_preset(first.hf_id) == first
    assert find_preset("no-such-model") is None
