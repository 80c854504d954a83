"""Readers refuse nonsense instead of answering silently wrong (issue 39): a Mixtral GGUF is read
as the MoE it is, a config routing to more experts than it has is refused, text from a file never
drives the terminal, an unknown SUANLI_LANG speaks English with one warning, and float options
that would overflow or contradict themselves are bounded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from suanli.models.config import ModelConfigError, spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import find_preset

from ..cli.test_cli import run

gguf = pytest.importorskip("gguf")

HIDDEN, FFN, LAYERS, HEADS, VOCAB, EXPERTS, USED = 64, 128, 2, 4, 128, 4, 2


def _write_mixtral_gguf(path: Path) -> None:
    """A two-layer Mixtral the way llama.cpp stores it: architecture llama, expert counts, and
    the experts of each layer stacked in one tensor per projection (ffn_*_exps)."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_expert_count(EXPERTS)
    w.add_expert_used_count(USED)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(VOCAB)])

    def add(name: str, *shape: int) -> None:
        w.add_tensor(name, np.zeros(shape, dtype=np.float32))

    add("token_embd.weight", VOCAB, HIDDEN)
    for i in range(LAYERS):
        b = f"blk.{i}."
        add(b + "attn_norm.weight", HIDDEN)
        for proj in ("attn_q", "attn_k", "attn_v", "attn_output"):
            add(b + proj + ".weight", HIDDEN, HIDDEN)
        add(b + "ffn_norm.weight", HIDDEN)
        add(b + "ffn_gate_inp.weight", EXPERTS, HIDDEN)
        add(b + "ffn_gate_exps.weight", EXPERTS, FFN, HIDDEN)
        add(b + "ffn_up_exps.weight", EXPERTS, FFN, HIDDEN)
        add(b + "ffn_down_exps.weight", EXPERTS, HIDDEN, FFN)
    add("output_norm.weight", HIDDEN)
    add("output.weight", VOCAB, HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_mixtral_gguf_is_read_as_the_moe_it_is(tmp_path: Path) -> None:
    from suanli.models.resolve import load_model

    path = tmp_path / "mixtral.gguf"
    _write_mixtral_gguf(path)
    loaded = load_model(str(path))
    assert loaded.spec.is_moe
    assert loaded.spec.moe is not None
    assert (loaded.spec.moe.num_experts, loaded.spec.moe.experts_per_token) == (EXPERTS, USED)
    params = count_params(loaded.spec)
    stored = sum(int(t.n_elements) for t in gguf.GGUFReader(str(path)).tensors)
    assert params.total == stored  # every expert counted, not one dense MLP
    assert params.active < params.total


def test_more_experts_per_token_than_experts_is_refused() -> None:
    preset = find_preset("mixtral-8x7b")
    assert preset is not None
    cfg = {**preset.config(), "num_experts_per_tok": 9}
    with pytest.raises(ModelConfigError, match="routes each token to 9 experts but has only 8"):
        spec_from_config(cfg)


@pytest.mark.parametrize(
    "model_type",
    ["llama\x1b]0;pwned\x07", "\x1b[2J\x1b[Hllama", "[link=https://example.com]llama[/link]", ""],
)
def test_a_model_type_that_is_no_name_is_refused(model_type: str, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    out = run("model", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr


def test_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    """An error that echoes file text (here a folder name with an ESC sequence) prints no ESC."""
    folder = tmp_path / "m\x1b]0;title\x07"
    folder.mkdir()
    out = run("model", str(folder))
    assert out.returncode == 2
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr


def test_an_unknown_suanli_lang_speaks_english_with_one_warning() -> None:
    out = run("gpu", "h100-sxm", env={"SUANLI_LANG": "xx"})
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("SUANLI_LANG") == 1 and "Traceback" not in out.stderr
    assert "H100" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cost", "h100-sxm", "--pue", "1e308"], "pue must be at most 10"),
        (["cost", "h100-sxm", "--years", "1e-308"], "at least one day"),
        (
            ["capacity", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1e-308"],
            "below 0.001 requests/s",
        ),
    ],
)
def test_float_options_are_bounded(args: list[str], message: str) -> None:
    out = run(*args)
    assert out.returncode == 2 and message in out.stderr
    assert "Traceback" not in out.stderr and "Warning" not in out.stderr
    assert "Infinity" not in out.stdout
