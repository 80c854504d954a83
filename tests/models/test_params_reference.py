"""Parameter counts equal the published counts of ten real models, exactly.

Configs and counts are copies of shared/reference (configs/*.json and params.csv), kept in
tests/fixtures with their sources (fixtures/configs/SOURCES.md, params.csv `source` column).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from suanli.models.config import spec_from_config
from suanli.models.params import COMPONENTS, count_params

FIXTURES = Path(__file__).parent.parent / "fixtures"
ROWS = list(csv.DictReader((FIXTURES / "params.csv").read_text().splitlines()))


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["name"])
def test_total_and_active_match_published(row: dict[str, str]) -> None:
    cfg = json.loads((FIXTURES / "configs" / f"{row['name']}.json").read_text())
    counts = count_params(spec_from_config(cfg, row["name"]))
    assert counts.total == int(row["total_params"]), row["source"]
    assert counts.active == int(row["active_params"])
    assert sum(counts.by_component.values()) == counts.total
    assert set(counts.by_component) == set(COMPONENTS)


def test_published_rounded_active_counts() -> None:
    """Rounded figures from the model cards: Mixtral 12.9B active, Qwen3-30B-A3B 3.3B,
    DeepSeek-V3 37B activated of 671B."""
    expect = {"mixtral-8x7b-v0.1": 12.9e9, "qwen3-30b-a3b": 3.3e9, "deepseek-v3": 37e9}
    for name, published in expect.items():
        cfg = json.loads((FIXTURES / "configs" / f"{name}.json").read_text())
        active = count_params(spec_from_config(cfg, name)).active
        assert active == pytest.approx(published, rel=0.02)


def test_qwen25_7b_non_embedding_matches_model_card() -> None:
    """Qwen2.5-7B card: 7.61B parameters, 6.53B non-embedding (embeddings + untied head)."""
    cfg = json.loads((FIXTURES / "configs" / "qwen2.5-7b.json").read_text())
    parts = count_params(spec_from_config(cfg)).by_component
    non_embedding = sum(parts.values()) - parts["embeddings"] - parts["lm_head"]
    assert round(non_embedding / 1e9, 2) == 6.53


def test_gpt2_learned_positions_and_tied_head() -> None:
    cfg = json.loads((FIXTURES / "configs" / "gpt2.json").read_text())
    parts = count_params(spec_from_config(cfg)).by_component
    assert parts["lm_head"] == 0
    assert parts["embeddings"] == (50257 + 1024) * 768
