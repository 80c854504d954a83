"""Saved activations with Megatron-LM's fused kernels (``--framework megatron``).

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, §4.1) count what a Megatron GPT layer keeps for the backward pass, in bytes per
token with 2-byte activations and 1-byte dropout masks:

- attention, ``11h + 5as``: the QKV input 2h, Q and K 4h, V 2h, the projection input 2h, the
  output dropout mask h; unfused softmax output 2as, its dropout mask as and dropped output 2as;
- MLP, ``19h``: fc1 input 2h, the GeLU input 8h and output (fc2 input) 8h, the dropout mask h;
- layer norms, ``4h``: two inputs of 2h.

Under t-way tensor parallelism the 10h of norms, masks and the first linears' inputs stay whole
(Eq. 2: ``10 + 24/t + 5as/(ht)``) unless sequence parallelism splits them too (Eq. 4); selective
recomputation drops the 5as (§5, Eq. 6). The terms below are those, generalised to grouped-query
attention (K and V as wide as the KV heads), gated MLPs (Megatron's fused SwiGLU keeps the fc1
output, 2I, and the fc2 input, I) and fused attention kernels (FlashAttention keeps its fp32
log-sum-exp instead of the a·s softmax), and without dropout masks when the model has no dropout.

Under fp8 (Transformer Engine's linears) the inputs kept only for a weight gradient are fp8, one
byte an element: the QKV and fc1 inputs (the LayerNormLinear's normalised output) and the fc2
input; the output projection's input is the attention output, which the attention kernel keeps
in bf16 for its own backward, so the linear's fp8 copy comes on top (TransformerEngine
``transformer_engine/pytorch/module/linear.py`` and ``layernorm_linear.py``: the input
quantizer with column-wise usage, the row-wise data dropped before ``save_for_backward``).
"""

from __future__ import annotations

from suanli.estimate.saved_terms import FP32, INDEX, ActivationSettings, Term
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

SOURCE = "Korthikanti et al. 2022 (arXiv:2205.05198) §4.1, Table 2 (Megatron fused kernels)"


def megatron_layer_terms(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """Bytes per token one Megatron layer saves, as named terms (shardable like Table 2)."""
    h, b = spec.hidden_size, st.dtype_bytes
    att = spec.attention
    q_dim = att.num_heads * att.head_dim
    kv_dim = att.num_kv_heads * att.head_dim
    v_dim = att.num_kv_heads * att.v_head_dim
    out_dim = att.num_heads * att.v_head_dim
    mask = st.mask_bytes if st.dropout > 0 else 0
    li = 1 if st.fp8_inputs else b  # a linear's input kept for its weight gradient
    terms = [
        Term(
            name=N_("layer norms: inputs (2 norms)"),
            bytes_per_token=2 * b * h,
            formula="2·2h",
            shardable="sp",
        ),
        Term(
            name=N_("QKV projection input"),
            bytes_per_token=li * h,
            formula="h (fp8)" if st.fp8_inputs else "2h",
            shardable="sp",
        ),
        Term(
            name=N_("attention: Q and K"),
            bytes_per_token=b * (q_dim + kv_dim),
            formula="b·(d_q + d_k) (4h with MHA)",
        ),
        Term(name=N_("attention: V"), bytes_per_token=b * v_dim, formula="b·d_v (2h with MHA)"),
    ]
    if st.attention == "eager":
        a, s = att.num_heads, st.seq
        terms.append(
            Term(name=N_("attention: softmax output"), bytes_per_token=b * a * s, formula="2as")
        )
        if st.dropout > 0:
            terms.append(
                Term(
                    name=N_("attention: softmax dropout mask and dropped probabilities"),
                    bytes_per_token=(st.mask_bytes + b) * a * s,
                    formula="as + 2as",
                )
            )
    else:
        terms.append(
            Term(
                name=N_("attention: log-sum-exp (fp32)"),
                bytes_per_token=FP32 * att.num_heads,
                formula="4a",
            )
        )
    terms.append(
        Term(
            name=N_("attention: output projection input"),
            bytes_per_token=(b + 1) * out_dim if st.fp8_inputs else b * out_dim,
            formula="2h + h (fp8 copy)" if st.fp8_inputs else "2h",
        )
    )
    if mask:
        terms.append(
            Term(
                name=N_("attention output: dropout mask"),
                bytes_per_token=mask * h,
                formula="h",
                shardable="sp",
            )
        )
    terms.append(
        Term(
            name=N_("MLP: fc1 input"),
            bytes_per_token=li * h,
            formula="h (fp8)" if st.fp8_inputs else "2h",
            shardable="sp",
        )
    )
    if spec.mlp is not None and spec.mlp.gated:
        width = spec.mlp.intermediate_size
        terms.append(
            Term(
                name=N_("MLP: fc1 output (gate and up, fused SwiGLU input)"),
                bytes_per_token=2 * b * width,
                formula="4I",
            )
        )
        terms.append(
            Term(
                name=N_("MLP: fc2 input (SwiGLU output)"),
                bytes_per_token=li * width,
                formula="I (fp8)" if st.fp8_inputs else "2I",
            )
        )
    else:
        width = spec.mlp.intermediate_size if spec.mlp is not None else 4 * h
        terms.append(
            Term(
                name=N_("MLP: GeLU input (fc1 output)"),
                bytes_per_token=b * width,
                formula="8h (2I)",
            )
        )
        terms.append(
            Term(
                name=N_("MLP: fc2 input (GeLU output)"),
                bytes_per_token=li * width,
                formula="4h (I, fp8)" if st.fp8_inputs else "8h (2I)",
            )
        )
    if mask:
        terms.append(
            Term(
                name=N_("MLP output: dropout mask"),
                bytes_per_token=mask * h,
                formula="h",
                shardable="sp",
            )
        )
    return terms


def megatron_model_terms(spec: ModelSpec, st: ActivationSettings) -> list[Term]:
    """Outside the layers (§4.3): token ids, the embedding dropout mask, the final norm's and
    the output layer's inputs (2h each, split with sequence parallelism) and the fp32 logits of
    the vocabulary-parallel cross-entropy (4v, split over the tensor-parallel group)."""
    h, b = spec.hidden_size, st.dtype_bytes
    terms = [
        Term(
            name=N_("token ids (embedding lookup)"),
            bytes_per_token=INDEX,
            formula="8",
            shardable="none",
        )
    ]
    if st.dropout > 0:
        terms.append(
            Term(
                name=N_("embedding: dropout mask"),
                bytes_per_token=st.mask_bytes * h,
                formula="h",
                shardable="sp",
            )
        )
    terms.append(
        Term(name=N_("final norm input"), bytes_per_token=b * h, formula="2h", shardable="sp")
    )
    terms.append(
        Term(name=N_("output layer input"), bytes_per_token=b * h, formula="2h", shardable="sp")
    )
    terms.append(
        Term(
            name=N_("loss: log-softmax over the vocabulary"),
            bytes_per_token=FP32 * spec.vocab_size,
            formula="4v (fp32)",
            shardable="tp",
        )
    )
    return terms
