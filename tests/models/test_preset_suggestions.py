"""'Did you mean' for model names: presets ranked by similarity, separators and case aside."""

from __future__ import annotations

import pytest

from suanli.models.presets import find_preset, presets, similar_presets


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("llama3.1-8b", "llama-3.1-8b"),  # issue 22: this listed bert-base-uncased first
        ("Llama3.1_8B", "llama-3.1-8b"),
        ("llama3-8b", "llama-3-8b"),
        ("qwen25-7b", "qwen2.5-7b"),
        ("qwen38b", "qwen3-8b"),
        ("mistral7b-v0.3", "mistral-7b-v0.3"),
        ("deepseekv3", "deepseek-v3"),
        ("phi4", "phi-4"),
        ("gpt-2", "gpt2"),
    ],
)
def test_the_meant_preset_comes_first(typed: str, meant: str) -> None:
    assert find_preset(typed) is None  # still refused: a suggestion, not a guess
    assert similar_presets(typed)[0] == meant


def test_the_nearest_follow_in_order() -> None:
    near = similar_presets("llama3.1-8b", 3)
    assert near[:2] == ["llama-3.1-8b", "llama-3-8b"]
    assert len(near) == 3
    assert "bert-base-uncased" not in similar_presets("llama3.1-8b")


def test_there_are_always_examples_to_show() -> None:
    assert len(similar_presets("zzzz")) == 8
    assert set(similar_presets("zzzz", len(presets()))) == set(presets())
