"""Keys a config.json leaves out take the default of their configuration class, as transformers
applies it; the shipped table of those defaults is the installed transformers'.

The short configs here hold only the sizes (under whichever names each class uses) and leave
every other key out: suanli must count the model transformers builds from the same file.
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

import pytest

from suanli.models import library_defaults
from suanli.models.config import SUPPORTED_MODEL_TYPES, spec_from_config
from suanli.models.params import count_params

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402

from tests.models.test_families_vs_transformers import FAMILIES, SMALL, meta_params  # noqa: E402
from tests.scripts import load_script  # noqa: E402

#: Every exact family with a transformers configuration class, once each, with the extra keys
#: the families test needs for a small model (GPT-J's rotary_dim below the head width).
EXTRAS = {model_type: extra for model_type, extra in reversed(FAMILIES)}
SHORT_TYPES = sorted(
    t for t in set(SUPPORTED_MODEL_TYPES) | set(EXTRAS) if t in CONFIG_MAPPING and t in EXTRAS
)
#: The hand-written readers' families (not in FAMILIES), read with no extras.
SHORT_TYPES += sorted(
    t
    for t in (
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "gpt2",
        "gpt_neox",
        "mixtral",
        "qwen2_moe",
        "qwen3_moe",
    )
    if t in CONFIG_MAPPING
)


#: What a small model needs beyond its sizes: GPT-Neo's attention pattern must cover every
#: layer (transformers refuses it otherwise); transformers' Helium builds its output projection
#: hidden x hidden, which equals heads x head_dim in every released checkpoint, so the small one
#: keeps that equality rather than the class's 128-wide heads.
SHORT_EXTRAS: dict[str, dict[str, Any]] = {
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},
    "helium": {"head_dim": 16},
}


def _short_config(model_type: str) -> dict[str, Any]:
    """Only the sizes, under the names the class declares, plus the families test's extras."""
    found = library_defaults.class_defaults(CONFIG_MAPPING[model_type])
    declared, aliases = found.defaults, found.aliases
    doc: dict[str, Any] = {"model_type": model_type}
    for names, value in SMALL.items():
        for key in names:
            number = isinstance(declared.get(key), int) and not isinstance(declared.get(key), bool)
            if number or key in aliases:  # ERNIE MoE's top-k is moe_k, num_experts_per_tok to HF
                doc[key] = value
    if "pad_token_id" in declared:  # a padding row inside the small vocabulary
        doc["pad_token_id"] = 0
    doc.update(EXTRAS.get(model_type, {}))
    doc.update(SHORT_EXTRAS.get(model_type, {}))
    return doc


def _built_params(doc: dict[str, Any]) -> int:
    kwargs = {k: v for k, v in doc.items() if k != "model_type"}
    cfg = transformers.AutoConfig.for_model(doc["model_type"], **kwargs)
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return meta_params(lambda: transformers.AutoModelForCausalLM.from_config(cfg))


@pytest.mark.parametrize("model_type", SHORT_TYPES)
def test_short_config_counts_the_model_transformers_builds(model_type: str) -> None:
    doc = _short_config(model_type)
    assert count_params(spec_from_config(doc, model_type)).total == _built_params(doc)


SIZES = ("vocab_size", "intermediate_size", "max_position_embeddings", "max_seq_len")
LEFT_OUT = [
    (model_type, key)
    for model_type in ("ernie4_5", "mpt", "seed_oss")
    for key in SIZES
    if key in _short_config(model_type)
]


@pytest.mark.parametrize(("model_type", "left_out"), LEFT_OUT)
def test_a_size_left_out_takes_the_class_default(model_type: str, left_out: str) -> None:
    """ERNIE 4.5, MPT and Seed-OSS were refused or counted wrong with a key left out (a missing
    vocabulary was refused; Seed-OSS's and ERNIE's 128-wide heads were taken as hidden/heads)."""
    doc = _short_config(model_type)
    del doc[left_out]
    assert count_params(spec_from_config(doc, model_type)).total == _built_params(doc)


def test_ernie_short_config_takes_the_class_head_width_and_tied_embeddings() -> None:
    """The issue's case, from transformers' declared defaults: a 64-wide, 4-head ERNIE 4.5 has
    128-wide heads (not 16) and no separate LM head."""
    declared = library_defaults.class_defaults(CONFIG_MAPPING["ernie4_5"]).defaults
    spec = spec_from_config(_short_config("ernie4_5"), "ernie")
    assert spec.attention.head_dim == declared["head_dim"]
    assert spec.tie_word_embeddings is declared["tie_word_embeddings"]


def test_the_shipped_table_is_the_installed_transformers() -> None:
    """scripts/gen_config_defaults.py run now writes the table the package ships."""
    table = library_defaults._table()
    if table["transformers"] != transformers.__version__:
        pytest.skip(
            f"the table is from transformers {table['transformers']}, "
            f"{transformers.__version__} is installed (the lock's version is checked)"
        )
    script = load_script("scripts/gen_config_defaults.py")
    assert json.loads(script.rendered()) == table


def test_the_table_covers_every_exact_family_transformers_knows() -> None:
    table = library_defaults._table()["model_types"]
    missing = [t for t in SUPPORTED_MODEL_TYPES if t in CONFIG_MAPPING and t not in table]
    assert missing == []


def test_without_transformers_imported_the_table_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning commands do not import transformers: the table gives the same defaults."""
    live = library_defaults.defaults_for("ernie4_5")
    monkeypatch.delitem(__import__("sys").modules, "transformers")
    table = library_defaults.defaults_for("ernie4_5")
    assert live is not None and table is not None
    if library_defaults.table_version() == transformers.__version__:
        assert table == live


def test_a_key_given_under_an_alias_is_not_overwritten() -> None:
    """GPT-2 names its width n_embd; a config saying hidden_size keeps its own width."""
    doc = {"model_type": "gpt2", "hidden_size": 64, "n_layer": 2, "n_head": 4, "vocab_size": 256}
    filled = library_defaults.with_library_defaults(doc)
    assert filled["n_embd"] == 64
    assert spec_from_config(doc, "gpt2").hidden_size == 64


def test_a_null_key_stays_null_for_the_reader_to_derive() -> None:
    doc = {"model_type": "ernie4_5", "head_dim": None}
    assert library_defaults.with_library_defaults(doc)["head_dim"] is None


def test_an_unknown_model_type_is_left_as_it_is() -> None:
    doc = {"model_type": "not-a-family", "hidden_size": 8}
    assert library_defaults.with_library_defaults(doc) == doc
