"""Activation memory: the bytes autograd saves for the backward pass, derived from the architecture.

Each term names a tensor that a real ``transformers`` forward pass keeps for backward (checked
op by op with ``torch.autograd.graph.saved_tensors_hooks``; see tests/estimate and
docs/memory.md). Sizes are bytes per token unless a term says otherwise. The rules that decide
what is saved are PyTorch's autograd formulas:

- ``y = x @ W``: saves ``x`` only when ``W`` is trainable (a frozen base layer under LoRA saves
  nothing), and ``W`` (a parameter, not an activation) for the gradient of ``x``.
- ``y = a * b``: saves ``b`` for the gradient of ``a`` and ``a`` for the gradient of ``b``.
- RMSNorm in transformers upcasts to fp32 (``x.float()``, ``rsqrt``), then multiplies the weight.
- SDPA/flash kernels save q, k, v, the output and a fp32 log-sum-exp per head and token; the
  eager path keeps the s x s probabilities (fp32 softmax output plus a copy in the compute dtype).

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, section 4) give the same structure with Megatron's kernels (34sbh + 5as^2b);
the terms here follow transformers' modules so the CPU measurement can check them exactly.
"""

from __future__ import annotations

from suanli.estimate.saved_terms import FP32, INDEX, ActivationSettings, Term
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

__all__ = ["FP32", "INDEX", "ActivationSettings", "Term", "layer_terms", "model_terms"]


def _trainable(st: ActivationSettings, module: str) -> bool:
    """Whether a linear's input is saved: trainable weight, adapter, or a 4-bit base layer."""
    return st.train_weights or st.frozen_linear_saves_input or module in st.lora_targets


def _rms_norm(h: int, st: ActivationSettings, name: str, gemma: bool = False) -> list[Term]:
    """transformers RMSNorm: ``w * (x.float() * rsqrt(mean(x^2) + eps)).to(dtype)``.

    Saves the fp32 input (the input itself when computing in fp32), rsqrt per token, and, when the
    weight is trainable, the normalised tensor (fp32 for Gemma's ``(1 + w)`` form, else ``dtype``).
    """
    b = st.dtype_bytes
    if st.fused:
        # A fused RMSNorm kernel (Liger's LigerRMSNorm, Inductor's fusion under torch.compile)
        # keeps its input in the dtype and the fp32 rstd; the backward recomputes the rest.
        return [
            Term(
                N_("{name}: input and rstd (fused kernel)").format(name=name),
                b * h + FP32,
                "b·h + 4",
                "sp",
            )
        ]
    terms = [
        Term(N_("{name}: fp32 input and rsqrt").format(name=name), FP32 * h + FP32, "4h + 4", "sp")
    ]
    if st.train_weights:
        width = FP32 if gemma else b
        terms.append(
            Term(
                N_("{name}: normalised (for the weight's gradient)").format(name=name),
                width * h,
                f"{width}h",
                "sp",
            )
        )
    return terms


def _layer_norm(h: int, st: ActivationSettings, name: str) -> list[Term]:
    """LayerNorm (native kernel): saves its input plus mean and rstd per token."""
    b = st.dtype_bytes
    return [
        Term(N_("{name}: input, mean, rstd").format(name=name), b * h + 2 * b, "b·h + 2b", "sp")
    ]


def _dropout(width: float, st: ActivationSettings, name: str) -> list[Term]:
    if st.dropout <= 0:
        return []
    return [
        Term(
            N_("{name}: dropout mask").format(name=name), st.mask_bytes * width, "mask·width", "sp"
        )
    ]


def _attention_core(
    spec: ModelSpec, st: ActivationSettings, q_storage: float, kv_storage: float, out_copy: bool
) -> list[Term]:
    """Scores and softmax (eager) or the fused kernel's saves (sdpa/flash).

    ``q_storage``/``kv_storage``: bytes per token of the storages the kernel's q and k/v live in
    (a fused QKV projection keeps one storage for all three).
    """
    att = spec.attention
    b = st.dtype_bytes
    nh, d, s = att.num_heads, att.head_dim, st.seq
    dv = att.v_head_dim
    terms = []
    if st.attention == "eager":
        # repeat_kv copies K and V to every query head (GQA/MQA); MHA keeps them as they are.
        k_width = nh * d
        v_width = nh * dv
        terms.append(
            Term(
                N_("attention: q, k, v (k and v repeated to all heads)"),
                q_storage + b * (k_width + v_width),
                "b·(n_q·d) + b·n_q·(d + d_v)",
            )
        )
        scores = FP32 * nh * s + (b * nh * s if b != FP32 else 0)
        terms.append(
            Term(
                N_("attention: softmax (fp32) and its copy in dtype"),
                scores,
                "4·n_q·s + b·n_q·s",
                "tp",
            )
        )
        if spec.attn_logit_softcap:
            terms.append(Term(N_("attention: tanh soft-cap output"), b * nh * s, "b·n_q·s"))
        if spec.architecture == "xglm":
            # XGLM clamps the masked scores with torch.max against the dtype's minimum, in fp32.
            terms.append(Term(N_("attention: clamped scores (fp32)"), FP32 * nh * s, "4·n_q·s"))
        if st.dropout > 0:
            terms.append(
                Term(
                    N_("attention: dropout mask and dropped probabilities"),
                    st.mask_bytes * nh * s + b * nh * s,
                    "(mask + b)·n_q·s",
                )
            )
        if _trainable(st, "o"):
            terms.append(Term(N_("attention: output copy for o_proj"), b * nh * dv, "b·n_q·d_v"))
        return terms
    terms.append(
        Term(
            N_("attention: q, k, v (saved by the kernel)"),
            q_storage + kv_storage,
            "b·(n_q·d + 2·n_kv·d)",
        )
    )
    terms.append(Term(N_("attention: output"), b * nh * dv, "b·n_q·d_v"))
    terms.append(Term(N_("attention: log-sum-exp (fp32)"), FP32 * nh, "4·n_q"))
    if out_copy:
        terms.append(
            Term(
                N_("attention: merged-heads copy for the output projection"),
                b * nh * dv,
                "b·n_q·d_v",
            )
        )
    return terms


def _decoder_layer(spec: ModelSpec, st: ActivationSettings, moe_layer: bool) -> list[Term]:
    """A pre-norm rotary decoder layer (Llama, Mistral, Qwen, Gemma, Phi-3, Mixtral, DeepSeek)."""
    h = spec.hidden_size
    b = st.dtype_bytes
    att = spec.attention
    gemma = spec.architecture.startswith("gemma")
    terms = _norm(spec, st, N_("attention norm"), gemma)
    if any(_trainable(st, m) for m in ("q", "k", "v")):
        terms.append(Term(N_("q/k/v projection input"), b * h, "b·h", "sp"))
    nh, nkv, d = att.num_heads, att.num_kv_heads, att.head_dim
    if att.kind == "mla":
        # DeepSeek MLA: low-rank query and KV latents, their norms, then per-head q, k, v.
        qr, kr, rope = att.q_lora_rank, att.kv_lora_rank, att.qk_rope_head_dim
        latent = (FP32 * (qr + kr) + 2 * FP32) + b * (qr + kr)
        terms.append(
            Term(
                N_("MLA: q/kv latents (fp32 norm inputs, normalised)"),
                latent,
                "4(r_q + r_kv) + b(r_q + r_kv)",
            )
        )
        terms.append(Term(N_("MLA: rope key"), b * rope, "b·d_rope"))
        kv_storage = b * nh * (d + att.v_head_dim)
        terms += _attention_core(spec, st, b * nh * d, kv_storage, out_copy=False)
    else:
        if att.qk_norm:
            for part, heads in (("q", nh), ("k", nkv)):
                if spec.norm.kind == "layernorm-fp32":  # Cohere's per-head LayerNorm
                    kept = 3 if st.train_weights else 2
                    width = kept * FP32 * heads * d + FP32 * heads
                    formula = "3·4·n·d + 4·n"
                elif spec.norm.kind in ("layernorm", "layernorm-nobias"):
                    # nn.LayerNorm per head (Phi, StableLM): its input, mean and rstd per head.
                    width = b * heads * d + 2 * FP32 * heads
                    formula = "b·n·d + 8·n"
                else:
                    width = (
                        FP32 * heads * d + FP32 * heads + (b * heads * d if st.train_weights else 0)
                    )
                    formula = "4·n·d + 4·n + b·n·d"
                terms.append(
                    Term(
                        N_("{part}_norm: fp32 input, rsqrt, normalised").format(part=part),
                        width,
                        formula,
                    )
                )
        terms += _attention_core(spec, st, b * nh * d, b * 2 * nkv * d, out_copy=False)
    if spec.architecture == "bitnet":
        # BitNet normalises the attention output before o_proj (attn_sub_norm).
        terms += _rms_norm(h, st, N_("attention sub-norm"))
    terms += _dropout(h, st, N_("attention residual"))
    # Sandwich norms outside Gemma (GLM-4): a norm on each block's output before the residual.
    sandwich = spec.norm.per_layer >= 4 and not gemma
    if sandwich:
        terms += _norm(spec, st, N_("post-attention norm"), gemma)
    if spec.architecture.startswith(("gemma2", "gemma3")):
        terms.append(
            Term(
                N_("post-attention norm: fp32 input and rsqrt"),
                FP32 * h + FP32 + (FP32 * h if st.train_weights else 0),
                "4h + 4 (+4h)",
                "sp",
            )
        )
    if not spec.parallel_block:
        terms += _norm(spec, st, N_("MLP norm"), gemma)
    elif spec.norm.per_layer > 1:
        # Two norms on the same input (Falcon's new decoder): the input is saved once.
        terms += [
            t
            for t in _norm(spec, st, N_("MLP norm"), gemma)
            if spec.norm.kind not in ("layernorm", "layernorm-nobias", "none")
        ] or [Term(N_("MLP norm: mean and rstd (input shared)"), 2 * FP32, "8", "sp")]
    # A parallel block with one norm (GPT-J, Phi-2, Cohere) feeds attention and MLP from it.
    if moe_layer and spec.moe is not None:
        mlp = _moe_terms(spec, st)
    else:
        assert spec.mlp is not None
        if spec.mlp.gated:
            mlp = _gated_mlp(spec.mlp.intermediate_size, h, st, "MLP")
        else:
            mlp = _plain_mlp(spec.mlp.intermediate_size, h, spec.mlp.activation, st)
    if spec.architecture == "bitnet" and spec.mlp is not None:
        # ...and the MLP's act(gate) * up before down_proj (ffn_sub_norm, I wide).
        mlp += _rms_norm(spec.mlp.intermediate_size, st, N_("MLP sub-norm"))
    if (
        spec.parallel_block
        and spec.norm.per_layer <= 1
        and any(_trainable(st, m) for m in ("q", "k", "v"))
    ):
        # One normalised input feeds q/k/v and the MLP: autograd saves that tensor once.
        mlp = [t for t in mlp if t.name not in ("MLP: up-projection input", "MLP: gate/up input")]
    terms += mlp
    if sandwich:
        terms += _norm(spec, st, N_("post-MLP norm"), gemma)
    terms += _dropout(h, st, N_("MLP residual"))
    if st.lora_targets and st.lora_rank:
        # lora_B saves lora_A's output: r values per token for each adapted matrix.
        adapted = sum(1 for t in st.lora_targets if t in ("q", "k", "v", "o", "gate", "up", "down"))
        terms.append(
            Term(
                N_("LoRA: adapter hidden (A output) per adapted matrix"),
                b * st.lora_rank * adapted,
                "b·r per adapted matrix",
            )
        )
    if spec.architecture.startswith(("gemma2", "gemma3")):
        terms.append(
            Term(
                N_("post-MLP norm: fp32 input and rsqrt"),
                FP32 * h + FP32 + (FP32 * h if st.train_weights else 0),
                "4h + 4 (+4h)",
                "sp",
            )
        )
    return terms


def _norm(spec: ModelSpec, st: ActivationSettings, name: str, gemma: bool) -> list[Term]:
    """The family's norm: transformers' RMSNorm, or LayerNorm (with or without parameters)."""
    if spec.norm.kind == "layernorm-fp32":
        # Cohere: x.float(); mean; (x - mean).pow(2).mean(); (x - mean) * rsqrt(var); w * that.
        # Each subtraction makes its own fp32 tensor; the weight's product saves the normalised.
        h = spec.hidden_size
        kept = 3 if st.train_weights else 2
        return [
            Term(
                N_("{name}: fp32 centred input (twice), normalised, rsqrt").format(name=name),
                kept * FP32 * h + FP32,
                "3·4h + 4 (frozen weight: 2·4h + 4)",
                "sp",
            )
        ]
    if spec.norm.kind in ("layernorm", "layernorm-nobias", "none"):
        return _layer_norm(spec.hidden_size, st, name)
    return _rms_norm(spec.hidden_size, st, name, gemma)


#: What an ungated MLP's activation keeps, in I-wide tensors besides the down projection's input:
#: GELU and SiLU keep their input; tanh-GELU written out in Python (transformers'
#: NewGELUActivation) keeps four intermediates; ReLU keeps its output (the down input itself);
#: ReLU² keeps the ReLU output for the square.
_PLAIN_ACTIVATION_SAVES = {
    "gelu": 1,
    "gelu_pytorch_tanh": 1,
    "silu": 1,
    "swish": 1,
    "gelu_new": 4,
    "gelu_fast": 4,
    "relu": 0,
    "relu2": 1,
    # Apertus' xIELU in Python: x, alpha_p·x, min(x, eps) and expm1 of it (plus a bool mask).
    "xielu": 4,
}


def _plain_mlp(width: int, h: int, activation: str, st: ActivationSettings) -> list[Term]:
    """up -> activation -> down (GPT-J, Falcon, StarCoder2, BLOOM, OPT, Phi-2, Arcee)."""
    b = st.dtype_bytes
    terms = []
    if _trainable(st, "up"):
        terms.append(Term(N_("MLP: up-projection input"), b * h, "b·h", "sp"))
    keeps = _PLAIN_ACTIVATION_SAVES.get(activation, 1)
    if keeps:
        terms.append(
            Term(
                N_("MLP: {activation} saved tensors").format(activation=activation),
                keeps * b * width,
                f"{keeps}·b·I",
            )
        )
    if activation == "xielu":  # torch.where's condition x > 0
        terms.append(Term(N_("MLP: xIELU branch mask (bool)"), width, "I"))
    terms.append(Term(N_("MLP: down-projection input (activation output)"), b * width, "b·I"))
    return terms


def _gated_mlp(width: int, h: int, st: ActivationSettings, name: str) -> list[Term]:
    """gate and up read the normalised input; act(gate) * up feeds down."""
    b = st.dtype_bytes
    terms = []
    if _trainable(st, "gate") or _trainable(st, "up"):
        terms.append(Term(N_("{name}: gate/up input").format(name=name), b * h, "b·h", "sp"))
    if st.fused:
        # A fused SwiGLU (Liger's, Megatron's, Inductor's) keeps gate and up and recomputes
        # act(gate) in the backward pass.
        terms.append(
            Term(
                N_("{name}: gate and up outputs (fused SwiGLU)").format(name=name),
                2 * b * width,
                "2·b·I",
            )
        )
    else:
        terms.append(
            Term(
                N_("{name}: gate output, activation output, up output").format(name=name),
                3 * b * width,
                "3·b·I",
            )
        )
    if _trainable(st, "down"):
        terms.append(Term(N_("{name}: down-projection input").format(name=name), b * width, "b·I"))
    return terms


def _moe_terms(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """Router and routed experts (transformers' grouped-GEMM experts), per token.

    The router saves its input, the fp32 softmax over experts, top-k indices and the
    renormalised weights; each token's k copies save the gathered input, the fused gate/up
    output, the activation, the down input and output, and gather/scatter indices.
    """
    moe = spec.moe
    assert moe is not None
    h, b, k, e = spec.hidden_size, st.dtype_bytes, moe.experts_per_token, moe.num_experts
    width = moe.expert.intermediate_size
    # transformers' Llama 4 runs every expert on every token (inputs scaled by the router's
    # sigmoid scores) and keeps E copies, not k.
    copies = e if spec.architecture == "llama4_text" else k
    # gpt-oss's clamped SwiGLU keeps five I-wide tensors besides the fused gate/up output (the
    # clamped gate, sigmoid(gate·alpha), their product, up + 1 and the down input), where a
    # plain SwiGLU keeps two (act(gate) and the down input).
    act_tensors = 7 if spec.architecture == "gpt_oss" else 4
    terms = [
        Term(N_("router: input"), b * h if st.train_weights else 0, "b·h", "sp"),
        Term(
            N_("router: fp32 softmax, top-k indices and weights"),
            FP32 * e + 40 * k + FP32,
            "4E + 40k + 4",
            "none",
        ),
        Term(
            N_("experts: per routed copy (input, gate/up, act, down in/out)"),
            b * copies * (act_tensors * width + 2 * h),
            f"k·b·({act_tensors}I + 2h)" if copies == k else N_("E·b·(4I + 2h) (every expert)"),
        ),
    ]
    if moe.shared_expert is not None:
        terms += _gated_mlp(moe.shared_expert.intermediate_size, h, st, N_("shared expert"))
    return terms


def _gpt2_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """GPT-2: LayerNorm, fused Conv1D QKV (one storage), tanh-GELU, plain MLP with biases."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    nh = spec.attention.num_heads
    terms = _layer_norm(h, st, "ln_1")
    terms.append(Term(N_("c_attn input"), b * h, "b·h", "sp"))
    if st.attention == "eager" or st.dropout > 0:
        # The eager path: matmul(q, kᵀ), softmax in dtype, matmul(probs, v). With one sequence
        # q stays a view of the fused qkv output (whose storage is then saved) and k, v are
        # copied; with more, q, k and v are all copied to batched 3-D layouts.
        if st.batch == 1:
            terms.append(
                Term(N_("attention: fused qkv output, k and v copies"), 5 * b * h, "5·b·h")
            )
        else:
            terms.append(Term(N_("attention: q, k, v copies"), 3 * b * h, "3·b·h"))
        terms.append(Term(N_("attention: softmax output"), b * nh * st.seq, "b·n_q·s"))
        if st.dropout > 0:
            terms.append(
                Term(
                    N_("attention: dropout mask and dropped probabilities"),
                    (st.mask_bytes + b) * nh * st.seq,
                    "(mask + b)·n_q·s",
                )
            )
    else:
        terms.append(Term(N_("attention: fused qkv output, k and v copies"), b * 5 * h, "5·b·h"))
        terms.append(Term(N_("attention: log-sum-exp (fp32)"), FP32 * nh, "4·n_q"))
    terms.append(Term(N_("c_proj input (merged heads)"), b * h, "b·h"))
    terms += _dropout(h, st, N_("attention residual"))
    terms += _layer_norm(h, st, "ln_2")
    terms.append(Term(N_("c_fc input"), b * h, "b·h", "sp"))
    terms.append(Term(N_("gelu_new: x, 0.5x, tanh, 1 + tanh, output"), 5 * b * width, "5·b·I"))
    terms += _dropout(h, st, N_("MLP residual"))
    return terms


def _neox_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """GPT-NeoX / Pythia: parallel attention and MLP reading one input, LayerNorm, exact GELU."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    nh = spec.attention.num_heads
    terms = [
        Term(
            N_("layer input (read by both LayerNorms), means and rstds"),
            b * h + 4 * b,
            "b·h + 4b",
            "sp",
        ),
        Term(N_("qkv input"), b * h, "b·h", "sp"),
    ]
    if st.attention == "eager":
        terms.append(Term(N_("attention: q, k, v after rotary"), 3 * b * h, "3·b·h"))
        terms.append(
            Term(
                N_("attention: softmax (fp32) and its copy in dtype"),
                FP32 * nh * st.seq + (b * nh * st.seq if b != FP32 else 0),
                "4·n_q·s + b·n_q·s",
            )
        )
    else:
        terms.append(Term(N_("attention: q, k, v after rotary, output"), 4 * b * h, "4·b·h"))
        terms.append(Term(N_("attention: log-sum-exp (fp32)"), FP32 * nh, "4·n_q"))
    terms.append(Term(N_("dense input (merged heads)"), b * h, "b·h"))
    terms.append(Term(N_("MLP input"), b * h, "b·h", "sp"))
    terms.append(Term(N_("MLP: GELU input and output"), 2 * b * width, "2·b·I"))
    return terms


def _bert_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """BERT (post-norm): q/k/v from the layer input, LayerNorms after each residual add."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    terms = [Term(N_("layer input (q/k/v projections)"), b * h, "b·h", "sp")]
    if st.attention == "eager" or st.dropout > 0:
        nh = spec.attention.num_heads
        terms.append(Term(N_("attention: q, k, v"), 3 * b * h, "3·b·h"))
        terms.append(Term(N_("attention: softmax output"), b * nh * st.seq, "b·n_q·s"))
        if st.dropout > 0:
            terms.append(
                Term(
                    N_("attention: dropout mask and dropped probabilities"),
                    (st.mask_bytes + b) * nh * st.seq,
                    "(mask + b)·n_q·s",
                )
            )
    else:
        terms.append(Term(N_("attention: q, k, v"), 3 * b * h, "3·b·h"))
        terms.append(
            Term(N_("attention: log-sum-exp (fp32)"), FP32 * spec.attention.num_heads, "4·n_q")
        )
    terms.append(Term(N_("attention output (dense input)"), b * h, "b·h"))
    terms += _dropout(h, st, N_("attention output"))
    terms += _layer_norm(h, st, N_("attention LayerNorm"))
    terms.append(Term(N_("intermediate input"), b * h, "b·h", "sp"))
    terms.append(Term(N_("GELU input and output"), 2 * b * width, "2·b·I"))
    terms += _dropout(h, st, "output")
    terms += _layer_norm(h, st, N_("output LayerNorm"))
    return terms


def _traced_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term] | None:
    """The layer's saved bytes as traced on the meta device (generic-path families), where the
    settings are the traced ones: transformers' modules, bf16/fp16, every weight trainable, no
    dropout, no fused kernels. Eager attention is exact (``a + b·s``); a fused kernel keeps, in
    place of the repeated k and v, the scores and the softmax (what eager saves), k and v once,
    the output and the log-sum-exp."""
    if spec.traced_layer_bytes is None:
        return None
    if (
        st.saved_tensors != "hf"
        or st.fused
        or not st.train_weights
        or st.lora_targets
        or st.dtype_bytes != 2
        or st.dropout > 0
    ):
        return None
    a, per_seq = spec.traced_layer_bytes
    if st.attention == "eager":
        return [
            Term(N_("layer (traced on meta, eager attention)"), a + per_seq * st.seq, "a + b·s")
        ]
    att, b = spec.attention, st.dtype_bytes
    fused = (
        a
        - b * att.num_heads * att.head_dim
        + 2 * b * att.num_kv_heads * att.head_dim
        + b * att.num_heads * att.v_head_dim
        + FP32 * att.num_heads
    )
    return [
        Term(
            N_("layer (traced on meta, fused attention)"),
            fused,
            "a - b·n_q·d + 2·b·n_kv·d + b·n_q·d_v + 4·n_q",
        )
    ]


def layer_terms(spec: ModelSpec, st: ActivationSettings, layer: int = 0) -> list[Term]:
    """Saved-tensor terms of one layer (``layer`` picks dense vs MoE where both exist)."""
    arch = spec.architecture
    traced = _traced_layer(spec, st)
    if traced is not None:
        return traced
    if st.saved_tensors == "megatron" and arch != "bert" and not spec.is_moe:
        from suanli.estimate.megatron_activations import megatron_layer_terms

        return megatron_layer_terms(spec, st)
    if arch == "gpt2":
        return _gpt2_layer(spec, st)
    if arch == "gpt_neox":
        return _neox_layer(spec, st)
    if arch == "bert":
        return _bert_layer(spec, st)
    return _decoder_layer(spec, st, moe_layer=layer in spec.moe_layers)


def model_terms(spec: ModelSpec, st: ActivationSettings, batch: int) -> list[Term]:
    """Terms outside the layers: token ids, rotary tables, the final norm, logits and loss.

    Rotary cos/sin are shared by the batch ([1, s, d] each), so their per-token size is divided
    by ``batch``.
    """
    if st.saved_tensors == "megatron" and spec.architecture != "bert" and not spec.is_moe:
        from suanli.estimate.megatron_activations import megatron_model_terms

        return megatron_model_terms(spec, st)
    h, b = spec.hidden_size, st.dtype_bytes
    terms = [Term(N_("token ids (embedding lookup)"), INDEX, "8", "none")]
    if spec.architecture == "gpt2":
        terms.append(Term(N_("position ids"), INDEX / batch, "8/batch", "none"))
    if spec.architecture not in ("gpt2", "bert"):
        d = spec.attention.qk_rope_head_dim or spec.attention.head_dim
        terms.append(Term(N_("rotary cos and sin"), 2 * d * b / batch, "2·d·b/batch", "none"))
    terms += _dropout(h, st, "embedding")
    if spec.architecture == "bert":
        terms += _layer_norm(h, st, N_("embedding LayerNorm"))
        # The pooler's dense layer saves hidden[:, 0], a view that keeps the whole last hidden
        # state alive; its tanh saves one h-vector per sequence.
        terms.append(Term(N_("pooler: last hidden state (viewed)"), b * h, "b·h", "none"))
        terms.append(Term(N_("pooler: tanh output"), b * h / st.seq, "b·h/s", "none"))
        return terms
    if spec.architecture in ("gpt2", "gpt_neox"):
        terms += _layer_norm(h, st, N_("final LayerNorm"))
    elif spec.norm.final:
        terms += _norm(spec, st, N_("final norm"), spec.architecture.startswith("gemma"))
    head_width = h
    if spec.embedding_extra and spec.architecture == "opt" and st.train_weights:
        # OPT-350m's project_in / project_out (no bias): word embeddings of width p. The spec
        # books 2·p·h + V·(p - h)·(1 tied, 2 untied) extra parameters; solved here for p.
        k = 1 if spec.tie_word_embeddings else 2
        v = spec.vocab_size
        head_width = round((spec.embedding_extra + v * h * k) / (2 * h + v * k))
        terms.append(Term(N_("project_in input (embeddings)"), b * head_width, "b·p", "none"))
        terms.append(Term(N_("project_out input"), b * h, "b·h", "sp"))
    if st.train_weights or "lm_head" in st.lora_targets:
        terms.append(Term(N_("LM head input"), b * head_width, "b·h", "sp"))
    if spec.final_logit_softcap:
        terms.append(Term(N_("logits: tanh soft-cap output"), b * spec.vocab_size, "b·V", "tp"))
    logit_bytes = FP32 if st.logits_fp32 else b
    # Split over tensor parallelism like the logits (vocabulary-parallel cross-entropy:
    # Megatron, torchtitan's loss_parallel).
    terms.append(
        Term(
            N_("loss: log-softmax over the vocabulary"),
            logit_bytes * spec.vocab_size,
            f"{logit_bytes}·V",
            "tp",
        )
    )
    terms.append(Term(N_("loss: targets"), INDEX, "8", "none"))
    return terms
