"""The building blocks of a layer's saved activations, as transformers' modules save them:
norms (RMSNorm with its fp32 upcast, LayerNorm), dropout masks, the attention core by kernel,
and plain and gated MLPs. :mod:`suanli.estimate.activations` assembles them into layers; the
autograd rules they follow are in its docstring."""

from __future__ import annotations

from suanli.estimate.saved_terms import FP32, ActivationSettings, Term
from suanli.i18n import N_
from suanli.models.spec import ModelSpec


def trainable(st: ActivationSettings, module: str) -> bool:
    """Whether a linear's input is saved: trainable weight, adapter, or a 4-bit base layer."""
    return st.train_weights or st.frozen_linear_saves_input or module in st.lora_targets


def rms_norm_terms(h: int, st: ActivationSettings, name: str, gemma: bool = False) -> list[Term]:
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
                name=N_("{name}: input and rstd (fused kernel)").format(name=name),
                bytes_per_token=b * h + FP32,
                formula="b·h + 4",
                shardable="sp",
            )
        ]
    terms = [
        Term(
            name=N_("{name}: fp32 input and rsqrt").format(name=name),
            bytes_per_token=FP32 * h + FP32,
            formula="4h + 4",
            shardable="sp",
        )
    ]
    if st.train_weights:
        width = FP32 if gemma else b
        terms.append(
            Term(
                name=N_("{name}: normalised (for the weight's gradient)").format(name=name),
                bytes_per_token=width * h,
                formula=f"{width}h",
                shardable="sp",
            )
        )
    return terms


def layer_norm_terms(h: int, st: ActivationSettings, name: str) -> list[Term]:
    """LayerNorm (native kernel): saves its input plus mean and rstd per token."""
    b = st.dtype_bytes
    return [
        Term(
            name=N_("{name}: input, mean, rstd").format(name=name),
            bytes_per_token=b * h + 2 * b,
            formula="b·h + 2b",
            shardable="sp",
        )
    ]


def dropout_terms(width: float, st: ActivationSettings, name: str) -> list[Term]:
    """The mask a dropout of ``width`` elements per token saves (none without dropout)."""
    if st.dropout <= 0:
        return []
    return [
        Term(
            name=N_("{name}: dropout mask").format(name=name),
            bytes_per_token=st.mask_bytes * width,
            formula="mask·width",
            shardable="sp",
        )
    ]


def attention_core_terms(
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
                name=N_("attention: q, k, v (k and v repeated to all heads)"),
                bytes_per_token=q_storage + b * (k_width + v_width),
                formula="b·(n_q·d) + b·n_q·(d + d_v)",
            )
        )
        scores = FP32 * nh * s + (b * nh * s if b != FP32 else 0)
        terms.append(
            Term(
                name=N_("attention: softmax (fp32) and its copy in dtype"),
                bytes_per_token=scores,
                formula="4·n_q·s + b·n_q·s",
                shardable="tp",
            )
        )
        if spec.attn_logit_softcap:
            terms.append(
                Term(
                    name=N_("attention: tanh soft-cap output"),
                    bytes_per_token=b * nh * s,
                    formula="b·n_q·s",
                )
            )
        if spec.architecture == "xglm":
            # XGLM clamps the masked scores with torch.max against the dtype's minimum, in fp32.
            terms.append(
                Term(
                    name=N_("attention: clamped scores (fp32)"),
                    bytes_per_token=FP32 * nh * s,
                    formula="4·n_q·s",
                )
            )
        if st.dropout > 0:
            terms.append(
                Term(
                    name=N_("attention: dropout mask and dropped probabilities"),
                    bytes_per_token=st.mask_bytes * nh * s + b * nh * s,
                    formula="(mask + b)·n_q·s",
                )
            )
        if trainable(st, "o"):
            terms.append(
                Term(
                    name=N_("attention: output copy for o_proj"),
                    bytes_per_token=b * nh * dv,
                    formula="b·n_q·d_v",
                )
            )
        return terms
    terms.append(
        Term(
            name=N_("attention: q, k, v (saved by the kernel)"),
            bytes_per_token=q_storage + kv_storage,
            formula="b·(n_q·d + 2·n_kv·d)",
        )
    )
    terms.append(
        Term(name=N_("attention: output"), bytes_per_token=b * nh * dv, formula="b·n_q·d_v")
    )
    terms.append(
        Term(name=N_("attention: log-sum-exp (fp32)"), bytes_per_token=FP32 * nh, formula="4·n_q")
    )
    if out_copy:
        terms.append(
            Term(
                name=N_("attention: merged-heads copy for the output projection"),
                bytes_per_token=b * nh * dv,
                formula="b·n_q·d_v",
            )
        )
    return terms


def norm_terms(spec: ModelSpec, st: ActivationSettings, name: str, gemma: bool) -> list[Term]:
    """The family's norm: transformers' RMSNorm, or LayerNorm (with or without parameters)."""
    if spec.norm.kind == "layernorm-fp32":
        # Cohere: x.float(); mean; (x - mean).pow(2).mean(); (x - mean) * rsqrt(var); w * that.
        # Each subtraction makes its own fp32 tensor; the weight's product saves the normalised.
        h = spec.hidden_size
        kept = 3 if st.train_weights else 2
        return [
            Term(
                name=N_("{name}: fp32 centred input (twice), normalised, rsqrt").format(name=name),
                bytes_per_token=kept * FP32 * h + FP32,
                formula="3·4h + 4 (frozen weight: 2·4h + 4)",
                shardable="sp",
            )
        ]
    if spec.norm.kind in ("layernorm", "layernorm-nobias", "none"):
        return layer_norm_terms(spec.hidden_size, st, name)
    return rms_norm_terms(spec.hidden_size, st, name, gemma)


#: What an ungated MLP's activation keeps, in I-wide tensors besides the down projection's input:
#: GELU and SiLU keep their input; tanh-GELU written out in Python (transformers'
#: NewGELUActivation) keeps four intermediates; ReLU keeps its output (the down input itself);
#: ReLU² keeps the ReLU output for the square.
PLAIN_ACTIVATION_SAVES = {
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


def plain_mlp_terms(width: int, h: int, activation: str, st: ActivationSettings) -> list[Term]:
    """up -> activation -> down (GPT-J, Falcon, StarCoder2, BLOOM, OPT, Phi-2, Arcee)."""
    b = st.dtype_bytes
    terms = []
    if trainable(st, "up"):
        terms.append(
            Term(
                name=N_("MLP: up-projection input"),
                bytes_per_token=b * h,
                formula="b·h",
                shardable="sp",
            )
        )
    keeps = PLAIN_ACTIVATION_SAVES.get(activation, 1)
    if keeps:
        terms.append(
            Term(
                name=N_("MLP: {activation} saved tensors").format(activation=activation),
                bytes_per_token=keeps * b * width,
                formula=f"{keeps}·b·I",
            )
        )
    if activation == "xielu":  # torch.where's condition x > 0
        terms.append(
            Term(name=N_("MLP: xIELU branch mask (bool)"), bytes_per_token=width, formula="I")
        )
    terms.append(
        Term(
            name=N_("MLP: down-projection input (activation output)"),
            bytes_per_token=b * width,
            formula="b·I",
        )
    )
    return terms


def gated_mlp_terms(width: int, h: int, st: ActivationSettings, name: str) -> list[Term]:
    """gate and up read the normalised input; act(gate) * up feeds down."""
    b = st.dtype_bytes
    terms = []
    if trainable(st, "gate") or trainable(st, "up"):
        terms.append(
            Term(
                name=N_("{name}: gate/up input").format(name=name),
                bytes_per_token=b * h,
                formula="b·h",
                shardable="sp",
            )
        )
    if st.fused:
        # A fused SwiGLU (Liger's, Megatron's, Inductor's) keeps gate and up and recomputes
        # act(gate) in the backward pass.
        terms.append(
            Term(
                name=N_("{name}: gate and up outputs (fused SwiGLU)").format(name=name),
                bytes_per_token=2 * b * width,
                formula="2·b·I",
            )
        )
    else:
        terms.append(
            Term(
                name=N_("{name}: gate output, activation output, up output").format(name=name),
                bytes_per_token=3 * b * width,
                formula="3·b·I",
            )
        )
    if trainable(st, "down"):
        terms.append(
            Term(
                name=N_("{name}: down-projection input").format(name=name),
                bytes_per_token=b * width,
                formula="b·I",
            )
        )
    return terms


def routed_copies_term(
    spec: ModelSpec, st: ActivationSettings, copies: int, act_tensors: int
) -> list[Term]:
    """What each routed copy of a token saves in the experts. transformers: the gathered input,
    the gate/up output, the activation, the down input and the down output (which the routing
    weight multiplies). Megatron-Core's TEGroupedMLP with a gated SiLU expert
    (``--saved-tensors megatron``): the fc1 input (TE's grouped linear), the fc1 output and the
    fp32 routing probability (``WeightedSwiGLUFunction``, which folds the probability into the
    activation) and the fc2 input; the unpermute then carries no probabilities and saves
    nothing token-sized (megatron/core/transformer/moe/experts.py, token_dispatcher.py and
    fusions/fused_bias_swiglu.py at d98e8a64). Under fp8 the grouped linears keep their inputs
    in fp8 (Transformer Engine's GroupedLinear, as its Linear)."""
    moe = spec.moe
    assert moe is not None
    h, b, k = spec.hidden_size, st.dtype_bytes, moe.experts_per_token
    width = moe.expert.intermediate_size
    if st.saved_tensors == "megatron" and moe.expert.gated and copies == k:
        # Under fp8 the grouped linears keep their inputs (fc1's h, fc2's I) in fp8.
        li = 1 if st.fp8_inputs else b
        return [
            Term(
                name=N_("experts: per routed copy (fc1 input, fc1 output, probability)"),
                bytes_per_token=k * (li * h + b * 2 * width + FP32),
                formula="k·(h + 2·b·I + 4) (fp8 input)" if st.fp8_inputs else "k·(b·(h + 2I) + 4)",
            ),
            Term(
                name=N_("experts: fc2 input per routed copy (the activation's output)"),
                bytes_per_token=k * li * width,
                formula="k·I (fp8)" if st.fp8_inputs else "k·b·I",
            ),
        ]
    return [
        Term(
            name=N_("experts: per routed copy (input, gate/up, act, down in/out)"),
            bytes_per_token=b * copies * (act_tensors * width + 2 * h),
            formula=f"k·b·({act_tensors}I + 2h)"
            if copies == k
            else N_("E·b·(4I + 2h) (every expert)"),
        )
    ]
