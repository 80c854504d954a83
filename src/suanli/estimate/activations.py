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

from suanli.estimate.activation_blocks import (
    attention_core_terms,
    dropout_terms,
    gated_mlp_terms,
    layer_norm_terms,
    norm_terms,
    plain_mlp_terms,
    rms_norm_terms,
    routed_copies_term,
    trainable,
)
from suanli.estimate.saved_terms import FP32, INDEX, ActivationSettings, Term
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

__all__ = ["FP32", "INDEX", "ActivationSettings", "Term", "layer_terms", "model_terms"]


def _decoder_layer(spec: ModelSpec, st: ActivationSettings, moe_layer: bool) -> list[Term]:
    """A pre-norm rotary decoder layer (Llama, Mistral, Qwen, Gemma, Phi-3, Mixtral, DeepSeek)."""
    h = spec.hidden_size
    b = st.dtype_bytes
    att = spec.attention
    gemma = spec.architecture.startswith("gemma")
    terms = norm_terms(spec, st, N_("attention norm"), gemma)
    if any(trainable(st, m) for m in ("q", "k", "v")):
        terms.append(
            Term(
                name=N_("q/k/v projection input"),
                bytes_per_token=b * h,
                formula="b·h",
                shardable="sp",
            )
        )
    nh, nkv, d = att.num_heads, att.num_kv_heads, att.head_dim
    if att.kind == "mla":
        # DeepSeek MLA: low-rank query and KV latents, their norms, then per-head q, k, v.
        qr, kr, rope = att.q_lora_rank, att.kv_lora_rank, att.qk_rope_head_dim
        latent = (FP32 * (qr + kr) + 2 * FP32) + b * (qr + kr)
        terms.append(
            Term(
                name=N_("MLA: q/kv latents (fp32 norm inputs, normalised)"),
                bytes_per_token=latent,
                formula="4(r_q + r_kv) + b(r_q + r_kv)",
            )
        )
        terms.append(Term(name=N_("MLA: rope key"), bytes_per_token=b * rope, formula="b·d_rope"))
        kv_storage = b * nh * (d + att.v_head_dim)
        terms += attention_core_terms(spec, st, b * nh * d, kv_storage, out_copy=False)
    else:
        if att.qk_norm:
            for part, heads in (("q", nh), ("k", nkv)):
                if st.saved_tensors == "megatron":
                    # Megatron's q/k layernorm is the backend's norm (TENorm): its input and the
                    # fp32 rstd (gpt_layer_specs.py, q_layernorm/k_layernorm, at d98e8a64).
                    width = b * heads * d + FP32 * heads
                    formula = "b·n·d + 4·n"
                elif spec.norm.kind == "layernorm-fp32":  # Cohere's per-head LayerNorm
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
                label = (
                    N_("{name}: input and rstd (fused kernel)").format(name=f"{part}_norm")
                    if st.saved_tensors == "megatron"
                    else N_("{part}_norm: fp32 input, rsqrt, normalised").format(part=part)
                )
                terms.append(
                    Term(
                        name=label,
                        bytes_per_token=width,
                        formula=formula,
                    )
                )
        terms += attention_core_terms(spec, st, b * nh * d, b * 2 * nkv * d, out_copy=False)
    if spec.architecture == "bitnet":
        # BitNet normalises the attention output before o_proj (attn_sub_norm).
        terms += rms_norm_terms(h, st, N_("attention sub-norm"))
    terms += dropout_terms(h, st, N_("attention residual"))
    # Sandwich norms outside Gemma (GLM-4): a norm on each block's output before the residual.
    sandwich = spec.norm.per_layer >= 4 and not gemma
    if sandwich:
        terms += norm_terms(spec, st, N_("post-attention norm"), gemma)
    if spec.architecture.startswith(("gemma2", "gemma3")):
        terms.append(
            Term(
                name=N_("post-attention norm: fp32 input and rsqrt"),
                bytes_per_token=FP32 * h + FP32 + (FP32 * h if st.train_weights else 0),
                formula="4h + 4 (+4h)",
                shardable="sp",
            )
        )
    if not spec.parallel_block:
        terms += norm_terms(spec, st, N_("MLP norm"), gemma)
    elif spec.norm.per_layer > 1:
        # Two norms on the same input (Falcon's new decoder): the input is saved once.
        terms += [
            t
            for t in norm_terms(spec, st, N_("MLP norm"), gemma)
            if spec.norm.kind not in ("layernorm", "layernorm-nobias", "none")
        ] or [
            Term(
                name=N_("MLP norm: mean and rstd (input shared)"),
                bytes_per_token=2 * FP32,
                formula="8",
                shardable="sp",
            )
        ]
    # A parallel block with one norm (GPT-J, Phi-2, Cohere) feeds attention and MLP from it.
    if moe_layer and spec.moe is not None:
        mlp = _moe_terms(spec, st)
    else:
        assert spec.mlp is not None
        if spec.mlp.gated:
            mlp = gated_mlp_terms(spec.mlp.intermediate_size, h, st, "MLP")
        else:
            mlp = plain_mlp_terms(spec.mlp.intermediate_size, h, spec.mlp.activation, st)
    if spec.architecture == "bitnet" and spec.mlp is not None:
        # ...and the MLP's act(gate) * up before down_proj (ffn_sub_norm, I wide).
        mlp += rms_norm_terms(spec.mlp.intermediate_size, st, N_("MLP sub-norm"))
    if (
        spec.parallel_block
        and spec.norm.per_layer <= 1
        and any(trainable(st, m) for m in ("q", "k", "v"))
    ):
        # One normalised input feeds q/k/v and the MLP: autograd saves that tensor once.
        mlp = [t for t in mlp if t.name not in ("MLP: up-projection input", "MLP: gate/up input")]
    terms += mlp
    if sandwich:
        terms += norm_terms(spec, st, N_("post-MLP norm"), gemma)
    terms += dropout_terms(h, st, N_("MLP residual"))
    if st.lora_targets and st.lora_rank:
        # lora_B saves lora_A's output: r values per token for each adapted matrix.
        adapted = sum(1 for t in st.lora_targets if t in ("q", "k", "v", "o", "gate", "up", "down"))
        terms.append(
            Term(
                name=N_("LoRA: adapter hidden (A output) per adapted matrix"),
                bytes_per_token=b * st.lora_rank * adapted,
                formula="b·r per adapted matrix",
            )
        )
    if spec.architecture.startswith(("gemma2", "gemma3")):
        terms.append(
            Term(
                name=N_("post-MLP norm: fp32 input and rsqrt"),
                bytes_per_token=FP32 * h + FP32 + (FP32 * h if st.train_weights else 0),
                formula="4h + 4 (+4h)",
                shardable="sp",
            )
        )
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
    # transformers' Llama 4 runs every expert on every token (inputs scaled by the router's
    # sigmoid scores) and keeps E copies, not k.
    copies = e if spec.architecture == "llama4_text" else k
    # gpt-oss's clamped SwiGLU keeps five I-wide tensors besides the fused gate/up output (the
    # clamped gate, sigmoid(gate·alpha), their product, up + 1 and the down input), where a
    # plain SwiGLU keeps two (act(gate) and the down input).
    act_tensors = 7 if spec.architecture == "gpt_oss" else 4
    terms = [
        Term(
            name=N_("router: input"),
            bytes_per_token=b * h if st.train_weights else 0,
            formula="b·h",
            shardable="sp",
        ),
        Term(
            name=N_("router: fp32 softmax, top-k indices and weights"),
            bytes_per_token=FP32 * e + 40 * k + FP32,
            formula="4E + 40k + 4",
            shardable="none",
        ),
        *routed_copies_term(spec, st, copies, act_tensors),
    ]
    if moe.shared_expert is not None:
        terms += gated_mlp_terms(moe.shared_expert.intermediate_size, h, st, N_("shared expert"))
    return terms


def _gpt2_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """GPT-2: LayerNorm, fused Conv1D QKV (one storage), tanh-GELU, plain MLP with biases."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    nh = spec.attention.num_heads
    terms = layer_norm_terms(h, st, "ln_1")
    terms.append(
        Term(name=N_("c_attn input"), bytes_per_token=b * h, formula="b·h", shardable="sp")
    )
    if st.attention == "eager" or st.dropout > 0:
        # The eager path: matmul(q, kᵀ), softmax in dtype, matmul(probs, v). With one sequence
        # q stays a view of the fused qkv output (whose storage is then saved) and k, v are
        # copied; with more, q, k and v are all copied to batched 3-D layouts.
        if st.batch == 1:
            terms.append(
                Term(
                    name=N_("attention: fused qkv output, k and v copies"),
                    bytes_per_token=5 * b * h,
                    formula="5·b·h",
                )
            )
        else:
            terms.append(
                Term(
                    name=N_("attention: q, k, v copies"), bytes_per_token=3 * b * h, formula="3·b·h"
                )
            )
        terms.append(
            Term(
                name=N_("attention: softmax output"),
                bytes_per_token=b * nh * st.seq,
                formula="b·n_q·s",
            )
        )
        if st.dropout > 0:
            terms.append(
                Term(
                    name=N_("attention: dropout mask and dropped probabilities"),
                    bytes_per_token=(st.mask_bytes + b) * nh * st.seq,
                    formula="(mask + b)·n_q·s",
                )
            )
    else:
        terms.append(
            Term(
                name=N_("attention: fused qkv output, k and v copies"),
                bytes_per_token=b * 5 * h,
                formula="5·b·h",
            )
        )
        terms.append(
            Term(
                name=N_("attention: log-sum-exp (fp32)"), bytes_per_token=FP32 * nh, formula="4·n_q"
            )
        )
    terms.append(Term(name=N_("c_proj input (merged heads)"), bytes_per_token=b * h, formula="b·h"))
    terms += dropout_terms(h, st, N_("attention residual"))
    terms += layer_norm_terms(h, st, "ln_2")
    terms.append(Term(name=N_("c_fc input"), bytes_per_token=b * h, formula="b·h", shardable="sp"))
    terms.append(
        Term(
            name=N_("gelu_new: x, 0.5x, tanh, 1 + tanh, output"),
            bytes_per_token=5 * b * width,
            formula="5·b·I",
        )
    )
    terms += dropout_terms(h, st, N_("MLP residual"))
    return terms


def _neox_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """GPT-NeoX / Pythia: parallel attention and MLP reading one input, LayerNorm, exact GELU."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    nh = spec.attention.num_heads
    terms = [
        Term(
            name=N_("layer input (read by both LayerNorms), means and rstds"),
            bytes_per_token=b * h + 4 * b,
            formula="b·h + 4b",
            shardable="sp",
        ),
        Term(name=N_("qkv input"), bytes_per_token=b * h, formula="b·h", shardable="sp"),
    ]
    if st.attention == "eager":
        terms.append(
            Term(
                name=N_("attention: q, k, v after rotary"),
                bytes_per_token=3 * b * h,
                formula="3·b·h",
            )
        )
        terms.append(
            Term(
                name=N_("attention: softmax (fp32) and its copy in dtype"),
                bytes_per_token=FP32 * nh * st.seq + (b * nh * st.seq if b != FP32 else 0),
                formula="4·n_q·s + b·n_q·s",
            )
        )
    else:
        terms.append(
            Term(
                name=N_("attention: q, k, v after rotary, output"),
                bytes_per_token=4 * b * h,
                formula="4·b·h",
            )
        )
        terms.append(
            Term(
                name=N_("attention: log-sum-exp (fp32)"), bytes_per_token=FP32 * nh, formula="4·n_q"
            )
        )
    terms.append(Term(name=N_("dense input (merged heads)"), bytes_per_token=b * h, formula="b·h"))
    terms.append(Term(name=N_("MLP input"), bytes_per_token=b * h, formula="b·h", shardable="sp"))
    terms.append(
        Term(name=N_("MLP: GELU input and output"), bytes_per_token=2 * b * width, formula="2·b·I")
    )
    return terms


def _bert_layer(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """BERT (post-norm): q/k/v from the layer input, LayerNorms after each residual add."""
    h, b = spec.hidden_size, st.dtype_bytes
    assert spec.mlp is not None
    width = spec.mlp.intermediate_size
    terms = [
        Term(
            name=N_("layer input (q/k/v projections)"),
            bytes_per_token=b * h,
            formula="b·h",
            shardable="sp",
        )
    ]
    if st.attention == "eager" or st.dropout > 0:
        nh = spec.attention.num_heads
        terms.append(
            Term(name=N_("attention: q, k, v"), bytes_per_token=3 * b * h, formula="3·b·h")
        )
        terms.append(
            Term(
                name=N_("attention: softmax output"),
                bytes_per_token=b * nh * st.seq,
                formula="b·n_q·s",
            )
        )
        if st.dropout > 0:
            terms.append(
                Term(
                    name=N_("attention: dropout mask and dropped probabilities"),
                    bytes_per_token=(st.mask_bytes + b) * nh * st.seq,
                    formula="(mask + b)·n_q·s",
                )
            )
    else:
        terms.append(
            Term(name=N_("attention: q, k, v"), bytes_per_token=3 * b * h, formula="3·b·h")
        )
        terms.append(
            Term(
                name=N_("attention: log-sum-exp (fp32)"),
                bytes_per_token=FP32 * spec.attention.num_heads,
                formula="4·n_q",
            )
        )
    terms.append(
        Term(name=N_("attention output (dense input)"), bytes_per_token=b * h, formula="b·h")
    )
    terms += dropout_terms(h, st, N_("attention output"))
    terms += layer_norm_terms(h, st, N_("attention LayerNorm"))
    terms.append(
        Term(name=N_("intermediate input"), bytes_per_token=b * h, formula="b·h", shardable="sp")
    )
    terms.append(
        Term(name=N_("GELU input and output"), bytes_per_token=2 * b * width, formula="2·b·I")
    )
    terms += dropout_terms(h, st, "output")
    terms += layer_norm_terms(h, st, N_("output LayerNorm"))
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
            Term(
                name=N_("layer (traced on meta, eager attention)"),
                bytes_per_token=a + per_seq * st.seq,
                formula="a + b·s",
            )
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
            name=N_("layer (traced on meta, fused attention)"),
            bytes_per_token=fused,
            formula="a - b·n_q·d + 2·b·n_kv·d + b·n_q·d_v + 4·n_q",
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
    terms = [
        Term(
            name=N_("token ids (embedding lookup)"),
            bytes_per_token=INDEX,
            formula="8",
            shardable="none",
        )
    ]
    if spec.architecture == "gpt2":
        terms.append(
            Term(
                name=N_("position ids"),
                bytes_per_token=INDEX / batch,
                formula="8/batch",
                shardable="none",
            )
        )
    if spec.architecture not in ("gpt2", "bert"):
        d = spec.attention.qk_rope_head_dim or spec.attention.head_dim
        terms.append(
            Term(
                name=N_("rotary cos and sin"),
                bytes_per_token=2 * d * b / batch,
                formula="2·d·b/batch",
                shardable="none",
            )
        )
    terms += dropout_terms(h, st, "embedding")
    if spec.architecture == "bert":
        terms += layer_norm_terms(h, st, N_("embedding LayerNorm"))
        # The pooler's dense layer saves hidden[:, 0], a view that keeps the whole last hidden
        # state alive; its tanh saves one h-vector per sequence.
        terms.append(
            Term(
                name=N_("pooler: last hidden state (viewed)"),
                bytes_per_token=b * h,
                formula="b·h",
                shardable="none",
            )
        )
        terms.append(
            Term(
                name=N_("pooler: tanh output"),
                bytes_per_token=b * h / st.seq,
                formula="b·h/s",
                shardable="none",
            )
        )
        return terms
    if spec.architecture in ("gpt2", "gpt_neox"):
        terms += layer_norm_terms(h, st, N_("final LayerNorm"))
    elif spec.norm.final:
        terms += norm_terms(spec, st, N_("final norm"), spec.architecture.startswith("gemma"))
    head_width = h
    if spec.embedding_extra and spec.architecture == "opt" and st.train_weights:
        # OPT-350m's project_in / project_out (no bias): word embeddings of width p. The spec
        # books 2·p·h + V·(p - h)·(1 tied, 2 untied) extra parameters; solved here for p.
        k = 1 if spec.tie_word_embeddings else 2
        v = spec.vocab_size
        head_width = round((spec.embedding_extra + v * h * k) / (2 * h + v * k))
        terms.append(
            Term(
                name=N_("project_in input (embeddings)"),
                bytes_per_token=b * head_width,
                formula="b·p",
                shardable="none",
            )
        )
        terms.append(
            Term(name=N_("project_out input"), bytes_per_token=b * h, formula="b·h", shardable="sp")
        )
    if st.train_weights or "lm_head" in st.lora_targets:
        terms.append(
            Term(
                name=N_("LM head input"),
                bytes_per_token=b * head_width,
                formula="b·h",
                shardable="sp",
            )
        )
    if spec.final_logit_softcap:
        terms.append(
            Term(
                name=N_("logits: tanh soft-cap output"),
                bytes_per_token=b * spec.vocab_size,
                formula="b·V",
                shardable="tp",
            )
        )
    logit_bytes = FP32 if st.logits_fp32 else b
    # Split over tensor parallelism like the logits (vocabulary-parallel cross-entropy:
    # Megatron, torchtitan's loss_parallel).
    terms.append(
        Term(
            name=N_("loss: log-softmax over the vocabulary"),
            bytes_per_token=logit_bytes * spec.vocab_size,
            formula=f"{logit_bytes}·V",
            shardable="tp",
        )
    )
    terms.append(
        Term(name=N_("loss: targets"), bytes_per_token=INDEX, formula="8", shardable="none")
    )
    return terms
