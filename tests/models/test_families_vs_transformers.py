"""Every family reader against the model ``transformers`` builds from the same config.

Small random configs from transformers' own config classes (no download): the parameter count
must be exact, the KV cache a forward pass fills must be exact per token, and the forward FLOPs
within 2% of ``torch.utils.flop_counter.FlopCounterMode``.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from suanli.estimate.flops import forward_flops_per_token  # noqa: E402
from suanli.estimate.inference_memory import kv_bytes_per_token  # noqa: E402
from suanli.models.config import spec_from_config  # noqa: E402
from suanli.models.params import count_params  # noqa: E402
from tests.transformers_generations import skip_on_4x  # noqa: E402

#: Small sizes, set under whichever name each config class uses.
SMALL: dict[tuple[str, ...], int] = {
    ("hidden_size", "n_embd", "d_model"): 64,
    ("num_hidden_layers", "n_layer", "n_layers", "num_layers"): 2,
    ("num_attention_heads", "n_head", "n_heads", "attention_heads"): 4,
    ("num_key_value_heads", "num_kv_heads"): 2,
    ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"): 128,
    ("vocab_size",): 256,
    ("max_position_embeddings", "n_positions", "max_seq_len"): 128,
    ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"): 4,
    ("num_experts_per_tok",): 2,
    ("moe_intermediate_size",): 32,
}

#: (model_type, extra config values). 37 families beyond the 17 with hand-written readers.
FAMILIES: list[tuple[str, dict[str, Any]]] = [
    ("gptj", {"rotary_dim": 8}),
    ("codegen", {"rotary_dim": 8}),
    ("phi", {}),
    ("phi", {"qk_layernorm": True}),
    ("falcon", {}),
    ("falcon", {"new_decoder_architecture": True, "num_kv_heads": 2}),
    ("falcon", {"parallel_attn": False}),
    ("opt", {}),
    ("opt", {"word_embed_proj_dim": 64}),
    ("bloom", {}),
    ("mpt", {}),
    ("starcoder2", {}),
    ("gpt_bigcode", {}),
    ("gpt_bigcode", {"multi_query": False}),
    ("gpt_neo", {}),
    ("olmo", {}),
    ("olmo2", {}),
    ("cohere", {}),
    ("cohere", {"use_qk_norm": True}),
    ("cohere2", {}),
    ("glm", {}),
    ("glm4", {}),
    ("seed_oss", {}),
    ("stablelm", {}),
    ("stablelm", {"qk_layernorm": True, "use_parallel_residual": True}),
    ("ernie4_5", {}),
    ("granite", {}),
    ("helium", {}),
    ("smollm3", {}),
    ("arcee", {}),
    ("exaone4", {}),
    ("persimmon", {}),
    ("biogpt", {}),
    ("xglm", {}),
    ("olmoe", {}),
    ("granitemoe", {}),
    ("phimoe", {}),
    ("gpt_oss", {}),
    ("glm4_moe", {}),
    ("ernie4_5_moe", {}),
    ("llama4_text", {}),
    ("apertus", {}),
    ("bitnet", {}),
]


def _config(model_type: str, extra: dict[str, Any]) -> Any:
    cfg = transformers.AutoConfig.for_model(model_type)
    for names, value in SMALL.items():
        for key in names:
            current = getattr(cfg, key, None)
            if isinstance(current, int) and not isinstance(current, bool):
                setattr(cfg, key, value)
    if isinstance(getattr(cfg, "head_dim", None), int):
        with contextlib.suppress(AttributeError):  # a derived property (Falcon)
            cfg.head_dim = 16
    cfg.pad_token_id = 0
    for key, value in extra.items():
        setattr(cfg, key, value)
    return cfg


def _model(cfg: Any) -> Any:
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        # Eager attention: its score and value matmuls are ops FlopCounterMode counts.
        return transformers.AutoModelForCausalLM.from_config(
            cfg, attn_implementation="eager"
        ).eval()


def _spec(model_type: str, cfg: Any) -> Any:
    doc = cfg.to_dict()
    doc["model_type"] = model_type
    return spec_from_config(doc, model_type)


IDS = [f"{m}-{i}" for i, (m, _) in enumerate(FAMILIES)]


def meta_params(build: Any) -> int:
    """The parameter count of ``build()``'s model, built on the meta device; transformers 4.x
    initialises some families' weights by copying tensors (StableLM, Apertus's xIELU), which the
    meta device cannot, so those small models are built on the CPU instead."""
    try:
        with torch.device("meta"):
            model = build()
    except NotImplementedError:
        model = build()
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("model_type", "extra"), FAMILIES, ids=IDS)
def test_parameters_exact(model_type: str, extra: dict[str, Any]) -> None:
    skip_on_4x("build", model_type)
    cfg = _config(model_type, extra)
    expected = meta_params(lambda: _model(cfg))
    assert count_params(_spec(model_type, cfg)).total == expected


def _cached_tensors(cache: Any) -> list[Any]:
    """Every key and value tensor the cache holds, whatever its generation's layout: 5.x cache
    layers, a 4.x cache whose layer list is longer than the small model (its unused layers hold
    None), or the legacy tuple per layer (GPT-BigCode's one fused key-value tensor per layer)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        pairs = [(layer.keys, layer.values) for layer in layers]
    else:
        pairs = [entry if isinstance(entry, tuple) else (entry,) for entry in cache]
    return [t for pair in pairs for t in pair if t is not None]


def _kv_elements_per_token(cache: Any, tokens: int) -> int:
    return sum(t.numel() for t in _cached_tensors(cache)) // tokens


def _cached_heads(cache: Any) -> int | None:
    """The head count of the first cached key tensor (batch, heads, tokens, width), or None
    where the cache holds no per-head keys (a recurrent state)."""
    keys = _cached_tensors(cache)[0]
    return int(keys.shape[1]) if keys.dim() == 4 else None


@pytest.mark.parametrize(("model_type", "extra"), FAMILIES, ids=IDS)
def test_kv_cache_and_forward_flops(model_type: str, extra: dict[str, Any]) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    skip_on_4x("build", model_type)
    cfg = _config(model_type, extra)
    model = _model(cfg)
    spec = _spec(model_type, cfg)
    tokens = 32
    ids = torch.randint(1, cfg.vocab_size, (1, tokens))
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(ids, use_cache=True)
    cached = _kv_elements_per_token(out.past_key_values, tokens)
    kv = kv_bytes_per_token(spec, 1, tokens)
    cached_heads = _cached_heads(out.past_key_values)
    attention = spec.attention
    if cached_heads is not None and cached_heads != attention.num_kv_heads:
        # transformers 4.x's Falcon caches its KV heads repeated to every query head (5.x holds
        # the num_kv_heads the model has, as serving engines and suanli do): read which one the
        # installed version does; any other head count is a wrong KV layout.
        assert model_type == "falcon"
        assert cached_heads == attention.num_heads
        kv *= attention.num_heads / attention.num_kv_heads
    assert kv == pytest.approx(cached)
    if spec.embedding_extra:
        return  # OPT-350m-style projections: the FLOPs model has no embedding projections
    if spec.is_moe:
        return  # routed experts: the FLOPs depend on the routing (KV and parameters checked)

    # Non-causal count: eager/SDPA kernels compute the full s x s scores.
    expected = counter.get_total_flops()
    estimate = sum(forward_flops_per_token(spec, tokens, causal=False).values()) * tokens
    assert estimate == pytest.approx(expected, rel=0.02)


#: Families whose saved activations the layer terms reproduce within 5% (fp32, eager attention,
#: what autograd saves in one training forward): all of them.
ACTIVATIONS_WITHIN_5 = {
    "gptj",
    "codegen",
    "bloom",
    "mpt",
    "starcoder2",
    "gpt_bigcode",
    "gpt_neo",
    "olmo",
    "olmo2",
    "glm",
    "seed_oss",
    "ernie4_5",
    "granite",
    "helium",
    "smollm3",
    "arcee",
    "exaone4",
    "biogpt",
    "olmoe",
    "granitemoe",
    "phimoe",
    "glm4_moe",
    "ernie4_5_moe",
    "phi",
    "falcon",
    "opt",
    "cohere",
    "cohere2",
    "glm4",
    "stablelm",
    "persimmon",
    "xglm",
    "gpt_oss",
    "llama4_text",
    "apertus",
    "bitnet",
}
ACTIVATION_CASES = [(m, e) for m, e in FAMILIES if m in ACTIVATIONS_WITHIN_5]


@pytest.mark.parametrize(
    ("model_type", "extra"),
    ACTIVATION_CASES,
    ids=[f"{m}-{i}" for i, (m, _) in enumerate(ACTIVATION_CASES)],
)
def test_saved_activations_within_5_percent(model_type: str, extra: dict[str, Any]) -> None:
    from suanli.estimate.memory import activation_bytes
    from suanli.estimate.workload import TrainWork
    from suanli.live.measure import saved_for_backward

    skip_on_4x("build", model_type)
    skip_on_4x("activations", model_type)
    cfg = _config(model_type, extra)
    model = _model(cfg).float()  # eval(): no dropout masks; autograd still records
    ids = torch.randint(1, cfg.vocab_size, (2, 32))
    measured, _ = saved_for_backward(model, lambda: model(ids, labels=ids).loss)
    work = TrainWork(
        task="full", batch=2, seq=32, dtype="fp32", attention="eager", device="cpu", dropout=0.0
    )
    estimate = sum(line.bytes for line in activation_bytes(_spec(model_type, cfg), work)[0])
    assert estimate == pytest.approx(measured.saved_bytes, rel=0.05)
