"""Memory per GPU to serve a model: weights in their stored format, the KV cache, the prefill
peak and the runtime overhead. Pure functions, no torch, no I/O; docs/memory.md has the formulas.
"""

from __future__ import annotations

from suanli.catalog.formats import WeightFormat, get_format
from suanli.estimate.breakdown import Line, MemoryBreakdown, assemble, runtime_overhead
from suanli.estimate.sizes import ParamSplit, param_split
from suanli.estimate.workload import InferWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

SRC_KV = N_("K and V per layer: 2·n_kv·d·bytes per token (vLLM, HF DynamicCache)")
SRC_MLA = N_("DeepSeek-V2 (arXiv:2405.04434) §2.1: MLA caches the latent c_kv and the rope key")


def kv_bytes_per_token(spec: ModelSpec, kv_dtype_bytes: float, context: int, tp: int = 1) -> float:
    """KV cache bytes for one token position, averaged over ``context`` for sliding layers.

    MHA/GQA/MQA: 2·n_kv·d per layer; KV heads split over TP (replicated when n_kv < tp).
    MLA: the latent (kv_lora_rank) and the shared rope key per layer, replicated over TP.
    A sliding-window layer holds at most ``window`` tokens.
    """
    att = spec.attention
    if not spec.is_decoder:
        return 0.0
    if att.kind == "mla":
        per_layer = (att.kv_lora_rank + att.qk_rope_head_dim) * kv_dtype_bytes
    else:
        heads = max(att.num_kv_heads / tp, 1)
        per_layer = 2 * heads * att.head_dim * kv_dtype_bytes
    window = att.sliding_window
    sliding = len(spec.sliding_window_layers) if window else 0
    full = spec.num_layers - sliding
    held = full + (sliding * min(context, window) / context if window else 0)
    return per_layer * held


def inference_memory(spec: ModelSpec, work: InferWork) -> MemoryBreakdown:
    """Per-GPU memory to serve ``batch`` sequences of ``context`` tokens."""
    fmt = get_format(work.weight_format)
    split = param_split(spec, work.tp, work.pp)
    lines: list[Line] = []
    assumptions: list[str] = []
    quantized, kept = _weight_bytes(split, fmt)
    lines.append(
        Line(
            key="weights",
            label=N_("weights ({dtype})").format(dtype=fmt.id),
            bytes=quantized + kept,
            formula=f"P_linear x {fmt.bits_per_weight:g} bits / 8 + P_other x 2 B"
            if fmt.bits_per_weight < 16
            else f"P x {fmt.bits_per_weight:g} bits / 8",
            source=fmt.source,
        )
    )
    # A pipeline stage holds the KV cache of its own layers only.
    stage_share = split.layers_on_stage / spec.num_layers
    per_token = kv_bytes_per_token(spec, work.kv_bytes, work.context, work.tp) * stage_share
    kv = per_token * work.batch * work.context
    lines.append(
        Line(
            key="kv_cache",
            label=N_("KV cache ({dtype})").format(dtype=work.kv_dtype),
            bytes=kv,
            formula=N_("batch {batch} x context {context} x {per_token:,.0f} B/token").format(
                batch=work.batch, context=work.context, per_token=per_token
            ),
            source=SRC_MLA if spec.attention.kind == "mla" else SRC_KV,
        )
    )
    lines.append(_prefill_line(spec, work))
    cpu = 0.0
    share = work.gpu_share(spec.num_layers)
    if share < 1 and work.gpu_layers is not None:
        # llama.cpp keeps the weights and KV cache of the layers it does not offload in system
        # memory (the output layer counts as one more layer there; taken as on the GPU here).
        moved = (1 - share) * (split.layer_linear * fmt.bits_per_weight / 8 + kv)
        cpu = moved
        lines.append(
            Line(
                key="weights",
                label=N_(
                    "layers left in system memory ({left} of {layers}, weights and KV cache)"
                ).format(left=spec.num_layers - work.gpu_layers, layers=spec.num_layers),
                bytes=-moved,
                formula=N_("-(1 - gpu_layers / L) x (layer weights + KV cache)"),
                source="llama.cpp --n-gpu-layers (common/common.h n_gpu_layers)",
            )
        )
        assumptions.append(
            N_("{gpu_layers} of {layers} layers on the GPU; the rest in system memory").format(
                gpu_layers=work.gpu_layers, layers=spec.num_layers
            )
        )
    lines += runtime_overhead(lines, work.overheads, work.tp * work.pp > 1, assumptions)
    assumptions.append(
        N_("weights stored as {format}; compute in {dtype}").format(
            format=fmt.name, dtype=fmt.compute_dtype
        )
    )
    if work.pp > 1:
        assumptions.append(
            N_(
                "layers split over {pp} pipeline stages: the busiest stage "
                "({layers} layers and the larger of the embeddings and LM head) is shown"
            ).format(pp=work.pp, layers=split.layers_on_stage)
        )
    if fmt.bits_per_weight < 16 and fmt.kind != "gguf":
        assumptions.append(
            N_("embeddings, LM head and norms stay in 16-bit (usual for GPTQ/AWQ/bnb)")
        )
    return assemble(lines, assumptions, tokens=work.batch * work.context, cpu_bytes=cpu)


def _weight_bytes(split: ParamSplit, fmt: WeightFormat) -> tuple[float, float]:
    if fmt.kind == "gguf" or fmt.bits_per_weight >= 16:
        return split.total * fmt.bits_per_weight / 8, 0.0
    return split.layer_linear * fmt.bits_per_weight / 8, split.other * 2


def _prefill_line(spec: ModelSpec, work: InferWork) -> Line:
    """The largest transient of a no-grad forward over the prompt (or one chunk of it).

    Live at once in the MLP of one layer: the residual stream and the normalised input
    (2·h), the gate and up outputs and their product (3·I), in the compute dtype; plus the
    last-token logits in fp32 for each sequence.
    """
    b = 2
    # Serving engines prefill under a token budget, one prompt at a time by default here;
    # --prefill-chunk sets the budget (vLLM's chunked prefill, max_num_batched_tokens).
    tokens = work.prefill_chunk or work.context
    width = spec.mlp.intermediate_size if spec.mlp else 0
    if spec.moe is not None:
        width = max(width, spec.moe.expert.intermediate_size * spec.moe.experts_per_token)
    per_token = b * (2 * spec.hidden_size + 3 * width / work.tp)
    logits = work.batch * spec.vocab_size * 4
    label = (
        N_("prefill peak (budget of {tokens:,} tokens)")
        if work.prefill_chunk
        else N_("prefill peak (one prompt of {tokens:,} tokens)")
    )
    return Line(
        key="activations",
        label=label.format(tokens=tokens),
        bytes=tokens * per_token + logits,
        formula="tokens x b·(2h + 3I) + batch x V x 4",
        source=N_("no-grad forward: one layer's MLP live"),
    )
