"""Property-based tests (Hypothesis): the option types, the config checker, the safetensors and
catalog readers either accept an input or refuse it with their own one-sentence error: no other
exception, no NaN, nothing out of bounds."""

from __future__ import annotations

import json
import math
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suanli.catalog.loader import CatalogError, parse_catalog_text
from suanli.cli.types import FloatRange, IntRange
from suanli.limits import BY_NAME, MAX_FLOAT, MAX_INT
from suanli.models.config import ModelConfigError, spec_from_config
from suanli.models.params import count_params
from suanli.models.safetensors import SafetensorsError, count_header
from suanli.models.validate import INT_FIELDS, ConfigFieldError, check_config

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

numbers_as_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e308", "1e-320", "abc", "", " 7 ", "0x10"]),
)


@FAST
@given(text=numbers_as_text, name=st.sampled_from(["seq", "batch", "price", "tokens", "other"]))
def test_float_option_is_finite_and_bounded_or_refused(text: str, name: str) -> None:
    param = click.Option([f"--{name}"])
    try:
        value = FloatRange(min=0).convert(text, param, None)
    except click.BadParameter:
        return
    assert math.isfinite(value) and 0 <= value <= BY_NAME.get(name, MAX_FLOAT)


@FAST
@given(text=numbers_as_text, name=st.sampled_from(["seq", "gpus", "replicas", "other"]))
def test_int_option_fits_a_c_long_or_is_refused(text: str, name: str) -> None:
    param = click.Option([f"--{name}"])
    try:
        value = IntRange(min=1).convert(text, param, None)
    except click.BadParameter:
        return
    assert 1 <= value <= BY_NAME.get(name, MAX_INT) < 2**63


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
config_fields = st.sampled_from(
    [
        *sorted(INT_FIELDS),
        "attn_logit_softcapping",
        "mlp_only_layers",
        "rope_scaling",
        "text_config",
        "layer_types",
    ]
)


@FAST
@given(
    fields=st.dictionaries(config_fields, json_values, max_size=5),
    model_type=st.sampled_from(
        ["llama", "qwen3_moe", "mixtral", "gemma2", "falcon", "opt", "unknown_family"]
    ),
)
def test_any_config_reads_or_refuses_in_one_sentence(
    fields: dict[str, Any], model_type: str
) -> None:
    cfg = {
        "model_type": model_type,
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 256,
        **fields,
    }
    try:
        spec = spec_from_config(cfg, "fuzz")
    except ModelConfigError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 300
        return
    total = count_params(spec).total
    assert isinstance(total, int) and total >= 0
    assert spec.num_layers <= 100_000


@FAST
@given(fields=st.dictionaries(config_fields, json_values, max_size=6))
def test_check_config_only_raises_its_own_error(fields: dict[str, Any]) -> None:
    try:
        out = check_config(fields)
    except ConfigFieldError:
        return
    for key, top in INT_FIELDS.items():
        if out.get(key) is not None:
            assert isinstance(out[key], int) and 0 <= out[key] <= top


tensor_info = st.fixed_dictionaries(
    {
        "dtype": st.one_of(st.sampled_from(["BF16", "F32", "I8"]), json_values),
        "shape": st.one_of(
            st.lists(st.integers(min_value=-5, max_value=2**50), max_size=10), json_values
        ),
    }
)


@FAST
@given(header=st.dictionaries(st.text(max_size=10), tensor_info, max_size=6))
def test_safetensors_counts_are_non_negative_or_refused(header: dict[str, Any]) -> None:
    try:
        counts = count_header(header)
    except SafetensorsError:
        return
    assert all(isinstance(v, int) and v >= 0 for v in counts.values())


toml_like = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            "gpu = [1, 2]",
            'gpu = "x"',
            "[[gpu]]\nid = 1",
            '[[gpu]]\nid = "x"\nmemory_bytes = -1',
            '[[gpu]]\nid = "x"\nname = "X"\nvendor = "nvidia"\nmemory_bytes = nan',
            '[gpu]\nid = "x"',
            "x = 1",
        ]
    ),
)


@FAST
@given(text=toml_like)
def test_catalog_text_parses_or_is_refused(text: str) -> None:
    try:
        gpus = parse_catalog_text(text, "fuzz.toml")
    except CatalogError as exc:
        assert "\n" not in str(exc).strip()
        return
    for gpu in gpus:
        assert gpu.memory_bytes > 0


def test_a_config_nested_past_the_limit_is_refused() -> None:
    cfg: dict[str, Any] = {"model_type": "llava"}
    inner = cfg
    for _ in range(10):
        inner["text_config"] = {"model_type": "llama"}
        inner = inner["text_config"]
    with pytest.raises(ModelConfigError, match="too deeply"):
        spec_from_config(json.loads(json.dumps(cfg)), "deep")
