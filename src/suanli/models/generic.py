"""The generic transformer path: any decoder ``config.json`` suanli has no family reader for.

It reads the standard fields in their common spellings (hidden size, layers, heads, KV heads,
head dim, MLP width, vocabulary, tied embeddings, activation and gating, norm type, biases, learned
positions, experts), builds a Llama-style spec from them, and says so: the spec's notes list every
assumption and every config field the reader did not understand, so nothing is silently guessed.
Families with exact readers (:mod:`suanli.models.config`, :mod:`suanli.models.families`) never
come here.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from suanli.i18n import N_
from suanli.models.families import FamilyConfigError, build, get_bool, get_int
from suanli.models.spec import MLPSpec, ModelSpec, MoESpec

#: Architectures that are not stacks of attention + MLP blocks: suanli refuses them by name.
NOT_TRANSFORMERS = {
    "mamba": N_("state-space (Mamba) layers"),
    "mamba2": N_("state-space (Mamba-2) layers"),
    "jamba": N_("Mamba layers between its attention layers"),
    "zamba": N_("Mamba layers with shared attention"),
    "zamba2": N_("Mamba layers with shared attention"),
    "falcon_h1": N_("parallel Mamba-2 and attention heads"),
    "falcon_mamba": N_("state-space (Mamba) layers"),
    "lfm2": N_("short convolution layers between its attention layers"),
    "minimax": N_("lightning (linear) attention layers"),
    "qwen3_next": N_("gated DeltaNet (linear attention) layers"),
    "rwkv": N_("RWKV recurrent layers"),
    "recurrent_gemma": N_("recurrent (Griffin) layers"),
    "xlstm": N_("xLSTM recurrent layers"),
}

#: Fields that do not change the architecture's shape (ids, training knobs, rope scaling...).
_BENIGN = {
    "architectures",
    "auto_map",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "sep_token_id",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "initializer_range",
    "init_std",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rotary_pct",
    "rotary_emb_base",
    "partial_rotary_factor",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "norm_eps",
    "attention_dropout",
    "hidden_dropout",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "dropout",
    "classifier_dropout",
    "model_type",
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "is_encoder_decoder",
    "tie_word_embeddings",
    "vocab_size",
    "hidden_size",
    "n_embd",
    "d_model",
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_attention_heads",
    "n_head",
    "n_heads",
    "num_key_value_heads",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "ffn_dim",
    "n_inner",
    "ffn_hidden_size",
    "hidden_act",
    "activation_function",
    "hidden_activation",
    "attention_bias",
    "mlp_bias",
    "use_bias",
    "bias",
    "quantization_config",
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    "layer_types",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "chunk_size_feed_forward",
    "problem_type",
    "id2label",
    "label2id",
    "task_specific_params",
    "tokenizer_class",
    "prefix",
    "name_or_path",
    "_name_or_path",
    "pretraining_tp",
    "attn_implementation",
    "use_flash_attention_2",
    "router_aux_loss_coef",
    "output_router_logits",
    "norm_topk_prob",
    "add_cross_attention",
    "tp_plan",
    "base_model_tp_plan",
    "base_model_pp_plan",
    "logits_scaling",
    "embedding_multiplier",
    "residual_multiplier",
    "attention_multiplier",
    "position_embedding_type",
}


def generic_spec(name: str, cfg: Any) -> ModelSpec:
    """A spec for a decoder of an unknown family, with every assumption in its notes."""
    model_type = str(cfg.get("model_type"))
    if model_type in NOT_TRANSFORMERS:
        raise FamilyConfigError(
            N_(
                "model_type {model_type!r} has {what}, which suanli does not "
                "model yet; its estimates would be wrong, so none is given"
            ).format(model_type=model_type, what=NOT_TRANSFORMERS[model_type])
        )
    if get_bool(cfg, ("is_encoder_decoder",), False):
        raise FamilyConfigError(
            N_(
                "model_type {model_type!r} is an encoder-decoder model, which suanli does not "
                "model yet (decoders and BERT-style encoders are supported)"
            ).format(model_type=model_type)
        )
    hidden = get_int(cfg, ("hidden_size", "n_embd", "d_model"))
    heads = get_int(cfg, ("num_attention_heads", "n_head", "n_heads"))
    layers = get_int(cfg, ("num_hidden_layers", "n_layer", "n_layers"))
    kv = get_int(cfg, ("num_key_value_heads", "num_kv_heads"), heads)
    head_dim = get_int(cfg, ("head_dim",), hidden // heads if hidden % heads == 0 else None)
    act = next(
        (
            str(cfg[k])
            for k in ("hidden_act", "activation_function", "hidden_activation")
            if isinstance(cfg.get(k), str)
        ),
        "silu",
    )
    gated = (
        act in ("silu", "swish", "swiglu", "geglu", "gelu_pytorch_tanh")
        and cfg.get("layer_norm_eps") is None
    )
    inter = get_int(
        cfg,
        ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"),
        None if gated else 4 * hidden,
    )
    rms = cfg.get("rms_norm_eps") is not None or cfg.get("layer_norm_eps") is None
    bias = get_bool(cfg, ("attention_bias", "use_bias", "bias"), False)
    experts = next(
        (
            cfg[k]
            for k in ("num_experts", "num_local_experts", "n_routed_experts")
            if isinstance(cfg.get(k), int) and cfg[k] > 0
        ),
        0,
    )
    moe = None
    moe_layers: tuple[int, ...] = ()
    if experts:
        width = get_int(cfg, ("moe_intermediate_size",), inter)
        moe = MoESpec(
            num_experts=experts,
            experts_per_token=get_int(cfg, ("num_experts_per_tok",), 2),
            expert=MLPSpec(width, gated=gated, activation=act),
        )
        moe_layers = tuple(range(layers))
    learned = (
        get_int(cfg, ("max_position_embeddings", "n_positions"))
        if cfg.get("position_embedding_type") == "absolute"
        else 0
    )
    unknown = sorted(k for k in cfg if k not in _BENIGN and not k.startswith("_"))
    mlp = (
        N_("gated {act} MLP of width {width}") if gated else N_("plain {act} MLP of width {width}")
    ).format(act=act, width=inter)
    embeddings = (
        N_("tied embeddings")
        if get_bool(cfg, ("tie_word_embeddings",), False)
        else N_("untied embeddings")
    )
    if bias and experts:
        layout = N_(
            "{model_type!r} read by the generic transformer path (no exact reader for this "
            "family): "
            "pre-norm blocks, {norm}, {mlp}, biases on the attention linears, {embeddings}, "
            "{experts} experts in every layer"
        )
    elif bias:
        layout = N_(
            "{model_type!r} read by the generic transformer path (no exact reader for this "
            "family): "
            "pre-norm blocks, {norm}, {mlp}, biases on the attention linears, {embeddings}"
        )
    elif experts:
        layout = N_(
            "{model_type!r} read by the generic transformer path (no exact reader for this "
            "family): "
            "pre-norm blocks, {norm}, {mlp}, {embeddings}, {experts} experts in every layer"
        )
    else:
        layout = N_(
            "{model_type!r} read by the generic transformer path (no exact reader for this "
            "family): "
            "pre-norm blocks, {norm}, {mlp}, {embeddings}"
        )
    notes = [
        layout.format(
            model_type=model_type,
            norm="RMSNorm" if rms else "LayerNorm",
            mlp=mlp,
            embeddings=embeddings,
            experts=experts,
        )
    ]
    if unknown:
        notes.append(
            N_(
                "config fields not understood (check they do not change the shape): {fields}"
            ).format(fields=", ".join(unknown))
        )
    spec = build(
        name,
        cfg,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=inter,
        gated=gated,
        norm_kind="rmsnorm" if rms else "layernorm",
        norms_per_layer=2,
        tie=get_bool(cfg, ("tie_word_embeddings",), False),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=get_bool(cfg, ("mlp_bias",), False),
        activation=act,
        learned_positions=learned,
        moe=moe,
        moe_layers=moe_layers,
        notes=tuple(notes),
    )
    return _with_traced_count(spec, cfg)


def _with_traced_count(spec: ModelSpec, cfg: Any) -> ModelSpec:
    """Where torch and transformers can build the model on the meta device, its exact parameter
    count replaces the generic guess (the difference is booked with the embeddings) and the notes
    say so; otherwise the spec is unchanged."""
    if os.environ.get("SUANLI_NO_TRACE") == "1" or not isinstance(cfg, dict):
        return spec
    from suanli.models.params import count_params
    from suanli.models.traced import traced_profile

    profile = traced_profile(cfg)
    if profile is None:
        return spec
    guessed = count_params(spec).total
    exact = int(profile["params"])
    if exact != guessed:
        note = N_(
            "parameters counted exactly on the meta device (transformers {transformers}, "
            "torch {torch}): {exact:,} (the generic reading gave {guessed:,})"
        ).format(
            transformers=profile["transformers"],
            torch=profile["torch"],
            exact=exact,
            guessed=guessed,
        )
    else:
        note = N_(
            "parameters counted exactly on the meta device (transformers {transformers}, "
            "torch {torch}): {exact:,}"
        ).format(transformers=profile["transformers"], torch=profile["torch"], exact=exact)
    notes = [note]
    saved = profile.get("saved_layer_bytes")
    traced_bytes = None
    if isinstance(saved, list) and len(saved) == 2:
        traced_bytes = (float(saved[0]), float(saved[1]))
        notes.append(
            N_(
                "one layer saves {fixed:,.0f} + {per_seq:,.0f}·seq bytes per token "
                "for backward (bf16, eager attention; traced with saved-tensor hooks on meta)"
            ).format(fixed=traced_bytes[0], per_seq=traced_bytes[1])
        )
    if profile.get("train_flops_per_token"):
        notes.append(
            N_(
                "one training step: {flops:,.0f} FLOPs per token "
                "(FlopCounterMode, forward and backward)"
            ).format(flops=float(profile["train_flops_per_token"]))
        )
    return replace(
        spec,
        embedding_extra=spec.embedding_extra + exact - guessed,
        traced_layer_bytes=traced_bytes,
        notes=(*spec.notes, *notes),
    )
