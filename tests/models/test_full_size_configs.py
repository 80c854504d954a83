"""Full-size configs of the newly read families (tests/fixtures/configs, sources in SOURCES.md):
parameters exact against transformers' own module on the meta device, and against the bytes the
published checkpoints store where those are known."""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pytest

from suanli.models.config import spec_from_config
from suanli.models.params import count_params

CONFIGS = Path(__file__).parent.parent / "fixtures" / "configs"


def _count(name: str) -> tuple[int, object]:
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    spec = spec_from_config(cfg, name)
    return count_params(spec).total, spec


@pytest.mark.parametrize(
    ("name", "stored"),
    [("falcon-7b", 7_217_189_760), ("falcon-40b", 41_835_970_560)],
)
def test_falcon_checkpoint_sizes(name: str, stored: int) -> None:
    """The checkpoints store the tied LM head a second time: bf16 bytes / 2 of the index."""
    total, spec = _count(name)
    assert total + spec.vocab_size * spec.hidden_size == stored  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("falcon-7b", 6_921_720_704),
        ("gpt-j-6b", 6_050_882_784),
        ("starcoder2-15b", 15_957_889_024),
        ("olmo-2-1124-7b", 7_298_617_344),
        ("olmoe-1b-7b-0924", 6_919_161_856),
        ("gpt-oss-20b", 20_914_757_184),
    ],
)
def test_full_size_counts_equal_transformers(name: str, expected: int) -> None:
    """``expected`` is what transformers builds (checked below when it is installed)."""
    assert _count(name)[0] == expected
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    raw = json.loads((CONFIGS / f"{name}.json").read_text())
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "auto_map")}
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if raw["model_type"].startswith("RefinedWeb"):
            cfg = transformers.FalconConfig(**fields)
        else:
            cfg = transformers.AutoConfig.for_model(raw["model_type"], **fields)
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
    assert sum(p.numel() for p in model.parameters()) == expected
