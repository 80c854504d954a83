"""Exact on the CPU: the estimate against what PyTorch really holds for real transformers models.

Small configs of five families (llama, qwen2, mixtral, gpt2, bert; plus qwen3, gemma2, gpt_neox)
are built with random weights and run one real training step on the CPU. Measured: parameter
bytes, gradient bytes, AdamW state bytes after the step, and the bytes autograd saves for the
backward pass (saved_tensors_hooks, de-duplicated by storage, parameters excluded); and the bytes
of a real KV cache after generation. Each estimated component must be within 3%.
"""

from __future__ import annotations

from typing import Any

import pytest

from suanli.estimate.inference_memory import inference_memory, kv_bytes_per_token
from suanli.estimate.memory import activation_bytes, training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.live.measure import kv_cache_bytes, optimizer_state_bytes, saved_for_backward
from suanli.models.config import spec_from_config
from tests.transformers_generations import skip_on_4x

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

TOLERANCE = 0.03

CONFIGS: dict[str, dict[str, Any]] = {
    "llama": {
        "model_type": "llama",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
    },
    "qwen2": {
        "model_type": "qwen2",
        "vocab_size": 1200,
        "hidden_size": 192,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
    },
    "mixtral": {
        "model_type": "mixtral",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "gpt2": {
        "model_type": "gpt2",
        "vocab_size": 1000,
        "n_embd": 256,
        "n_layer": 2,
        "n_head": 8,
        "n_positions": 256,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
    },
    "bert": {
        "model_type": "bert",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
    },
    "qwen3": {
        "model_type": "qwen3",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
    },
    "gemma2": {
        "model_type": "gemma2",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 688,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
    },
    "gpt_neox": {
        "model_type": "gpt_neox",
        "vocab_size": 1000,
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
    },
}
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def _build(cfg: dict[str, Any], dtype: str, attention: str) -> Any:
    kwargs = {k: v for k, v in cfg.items() if k != "model_type"}
    conf = transformers.AutoConfig.for_model(cfg["model_type"], **kwargs)
    conf._attn_implementation = attention
    torch.manual_seed(0)
    auto = (
        transformers.AutoModel
        if cfg["model_type"] == "bert"
        else (transformers.AutoModelForCausalLM)
    )
    model = auto.from_config(conf).to(getattr(torch, DTYPES[dtype]))
    model.train()
    return model


def _forward(model: Any, cfg: dict[str, Any], batch: int, seq: int) -> Any:
    ids = torch.randint(0, cfg["vocab_size"], (batch, seq))
    if cfg["model_type"] == "bert":
        # BertModel has no loss: sum the outputs (sum saves nothing for backward).
        return lambda: (lambda o: o.last_hidden_state.sum() + o.pooler_output.sum())(model(ids))
    return lambda: model(input_ids=ids, labels=ids).loss


def _work(dtype: str, attention: str, batch: int, seq: int, **kw: Any) -> TrainWork:
    return TrainWork(
        task="full",
        batch=batch,
        seq=seq,
        dtype=dtype,
        precision="pure",
        attention=attention,
        device="cpu",
        **kw,
    )


CASES = [
    (family, dtype, attention, batch, seq)
    for family in CONFIGS
    for dtype in DTYPES
    for attention in (("eager",) if family == "gemma2" else ("sdpa", "eager"))
    for batch, seq in ((2, 64), (1, 128), (3, 48))
]


@pytest.mark.parametrize(
    ("family", "dtype", "attention", "batch", "seq"), CASES, ids=lambda v: str(v)
)
def test_saved_activations_match(
    family: str, dtype: str, attention: str, batch: int, seq: int
) -> None:
    skip_on_4x("activations", family)
    cfg = CONFIGS[family]
    model = _build(cfg, dtype, attention)
    measured, _ = saved_for_backward(model, _forward(model, cfg, batch, seq))
    spec = spec_from_config(cfg, family)
    lines, _ = activation_bytes(spec, _work(dtype, attention, batch, seq))
    estimate = sum(line.bytes for line in lines)
    assert estimate == pytest.approx(measured.saved_bytes, rel=TOLERANCE)


@pytest.mark.parametrize("family", ["llama", "qwen2", "mixtral", "gpt2", "bert"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_weights_gradients_and_adamw_states_match(family: str, dtype: str) -> None:
    cfg = CONFIGS[family]
    model = _build(cfg, dtype, "sdpa")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = _forward(model, cfg, 2, 32)()
    loss.backward()
    optimizer.step()
    params = list(model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in params)
    grad_bytes = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    state_bytes = optimizer_state_bytes(optimizer)
    result = training_memory(spec_from_config(cfg, family), _work(dtype, "sdpa", 2, 32))
    assert result.breakdown["weights"] == pytest.approx(weight_bytes, rel=TOLERANCE)
    assert result.breakdown["gradients"] == pytest.approx(grad_bytes, rel=TOLERANCE)
    assert result.breakdown["optimizer"] == pytest.approx(state_bytes, rel=TOLERANCE)
    assert result.breakdown["master_weights"] == 0  # pure precision keeps no master copy


def test_dropout_masks_are_counted() -> None:
    """GPT-2 with its default dropout 0.1: masks on the CPU are float tensors in dtype."""
    cfg = {**CONFIGS["gpt2"], "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    model = _build(cfg, "fp32", "eager")
    measured, _ = saved_for_backward(model, _forward(model, cfg, 2, 64))
    spec = spec_from_config(cfg, "gpt2")
    assert spec.dropout == 0.1
    with_masks = sum(ln.bytes for ln in activation_bytes(spec, _work("fp32", "eager", 2, 64))[0])
    without = sum(
        ln.bytes for ln in activation_bytes(spec, _work("fp32", "eager", 2, 64, dropout=0.0))[0]
    )
    assert with_masks == pytest.approx(measured.saved_bytes, rel=TOLERANCE)
    assert without < 0.9 * measured.saved_bytes  # the masks are a real share


def test_frozen_base_saves_less_as_lora_assumes() -> None:
    """Frozen linear weights need no saved input: the LoRA estimate without adapters matches a
    model whose linear weights are frozen (norms frozen too)."""
    cfg = CONFIGS["llama"]
    model = _build(cfg, "bf16", "sdpa")
    for name, param in model.named_parameters():
        param.requires_grad_("embed" in name)  # keep one trainable path so autograd runs
    measured, _ = saved_for_backward(model, _forward(model, cfg, 2, 64))
    spec = spec_from_config(cfg, "llama")
    work = TrainWork(
        task="lora",
        batch=2,
        seq=64,
        dtype="bf16",
        precision="pure",
        device="cpu",
        lora_targets=("q",),
        lora_rank=1,
    )
    estimate = sum(ln.bytes for ln in activation_bytes(spec, work)[0])
    # The estimate also keeps q's input and a rank-1 adapter output for the q adapter.
    adapter = spec.num_layers * 2 * 64 * (2 * spec.hidden_size + 2 * 1)
    assert estimate - adapter == pytest.approx(measured.saved_bytes, rel=TOLERANCE)


KV_CASES = {
    "llama-gqa": CONFIGS["llama"],
    "qwen2": CONFIGS["qwen2"],
    "mixtral": CONFIGS["mixtral"],
    "gpt2-mha": CONFIGS["gpt2"],
    "mistral-sliding": {
        "model_type": "mistral",
        "vocab_size": 1000,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "sliding_window": 16,
    },
}


@pytest.mark.parametrize("name", sorted(KV_CASES))
@pytest.mark.parametrize(("batch", "prompt", "new"), [(2, 24, 9), (1, 40, 5)])
def test_kv_cache_after_generation(name: str, batch: int, prompt: int, new: int) -> None:
    cfg = KV_CASES[name]
    model = _build(cfg, "bf16", "sdpa").eval()
    ids = torch.randint(3, cfg["vocab_size"], (batch, prompt))
    with torch.no_grad():
        out = model.generate(
            ids,
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            return_dict_in_generate=True,
            pad_token_id=0,
        )
    measured = kv_cache_bytes(out.past_key_values)
    # The cache holds every position fed to the model: the prompt and all but the last token.
    held = prompt + new - 1
    spec = spec_from_config(cfg, name)
    estimate = kv_bytes_per_token(spec, 2, held) * batch * held
    assert estimate == pytest.approx(measured, rel=TOLERANCE)
    full = inference_memory(spec, InferWork(batch=batch, context=held, kv_dtype="bf16"))
    assert full.breakdown["kv_cache"] == pytest.approx(measured, rel=TOLERANCE)
