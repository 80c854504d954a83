"""The serving options (weight format, KV cache, how the engine launches its kernels, chunked
prefill, images, layers kept on the GPU, the engine's memory share) and the runtime memory
overheads every task shares, declared once; :data:`suanli.answers.options.OPTIONS` lists them
after the training options, in this order."""

from __future__ import annotations

from suanli.answers.option_kinds import INFER, fraction, gib
from suanli.answers.option_kinds import choice as _choice
from suanli.answers.option_type import Option, weight_format_ids
from suanli.estimate.speculative import MAX_SPEC_TOKENS, SPEC_METHODS
from suanli.estimate.workload import DISPATCHES, GQA_READS, KV_DTYPES, KV_UPDATES, PROJECTIONS
from suanli.i18n import N_
from suanli.limits import MAX_LAYERS, MAX_TOKENS

#: The serving and memory-overhead options, in the order ``--help`` lists them.
SERVING_OPTIONS: tuple[Option, ...] = (
    Option(
        name="quant",
        kind=str,
        default="bf16",
        help=N_("Inference weight format: {formats} (catalog/data/quant.toml)."),
        max_length=40,
        tasks=INFER,
        help_values=weight_format_ids,
    ),
    _choice("kv_dtype", "bf16", KV_DTYPES, N_("Inference: dtype of the KV cache."), tasks=INFER),
    _choice(
        "projections",
        "fused",
        PROJECTIONS,
        N_(
            "Inference: how the serving engine launches each layer's input projections: fused "
            "(one QKV and one gate/up GEMM: vLLM, SGLang, TensorRT-LLM), qkv (gate and up apart: "
            "gpt-fast) or separate (one GEMM per weight: transformers, llama.cpp)."
        ),
        tasks=INFER,
    ),
    _choice(
        "dispatch",
        "engine",
        DISPATCHES,
        N_(
            "Inference: who launches each step's kernels: engine (CUDA graphs or a C++ runtime: "
            "vLLM, SGLang, TensorRT-LLM, llama.cpp) or python (eager PyTorch op by op: "
            "transformers' generate(), where the CPU can set the pace)."
        ),
        tasks=INFER,
    ),
    _choice(
        "kv_update",
        "in-place",
        KV_UPDATES,
        N_(
            "Inference: how each decode step adds its token to the KV cache: in-place (a paged "
            "or static cache: serving engines) or concat (transformers' DynamicCache copies "
            "every layer's whole cache each step)."
        ),
        tasks=INFER,
    ),
    _choice(
        "gqa",
        "native",
        GQA_READS,
        N_(
            "Inference: how attention reads a grouped-query KV cache: native (each KV head once "
            "for its query heads: FlashAttention, serving engines) or repeat (the code copies "
            "each KV head per query head first: transformers before 4.48, or its eager path)."
        ),
        tasks=INFER,
    ),
    Option(
        name="spec_tokens",
        kind=int,
        default=0,
        help=N_(
            "Inference: speculative decoding, tokens a drafter proposes per sequence and step, "
            "checked in one pass of the model (0: off); needs --spec-acceptance."
        ),
        unit="tokens",
        minimum=0,
        maximum=MAX_SPEC_TOKENS,
        tasks=INFER,
    ),
    Option(
        name="spec_acceptance",
        kind=float,
        default=None,
        help=N_(
            "Speculative decoding: the probability that a drafted token is accepted (it depends "
            "on the drafter and the text: measure it on your traffic, engines report it)."
        ),
        unit="fraction",
        minimum=0,
        maximum=1,
        tasks=INFER,
    ),
    _choice(
        "spec_method",
        "ngram",
        SPEC_METHODS,
        N_(
            "Speculative decoding's drafter: ngram (prompt lookup on the CPU, no GPU cost) or "
            "eagle (a one-layer head run once per drafted token)."
        ),
        tasks=INFER,
    ),
    Option(
        name="prefix_hit",
        kind=float,
        default=0.0,
        help=N_(
            "Inference: share of each prompt already in the engine's prefix cache (vLLM "
            "--enable-prefix-caching, SGLang's RadixAttention: a shared system prompt, earlier "
            "turns of a chat); the prefill computes only the rest."
        ),
        unit="fraction",
        minimum=0,
        maximum=1,
        max_open=True,
        tasks=INFER,
    ),
    Option(
        name="prefill_chunk",
        kind=int,
        default=None,
        help=N_("Chunked prefill: tokens per forward pass."),
        unit="tokens",
        minimum=1,
        maximum=MAX_TOKENS,
        tasks=INFER,
        layout=True,
    ),
    Option(
        name="images",
        kind=int,
        default=0,
        help=N_(
            "Images per sequence for a vision-language model (LLaVA-style): each adds its "
            "image tokens to the context and the vision tower's work to the prefill."
        ),
        unit="images",
        minimum=0,
        maximum=1024,
    ),
    Option(
        name="image_size",
        kind=str,
        default=None,
        help=N_(
            "Pixels of each image for towers at native resolution (Qwen2.5-VL: one token per "
            "28x28 pixels); LLaVA-style towers resize to their own size."
        ),
        unit="pixels",
        max_length=16,
        metavar="WxH",
    ),
    Option(
        name="gpu_layers",
        kind=int,
        default=None,
        help=N_(
            "Inference: N layers on the GPU, the rest on the CPU from system memory "
            "(llama.cpp --n-gpu-layers, Ollama num_gpu)."
        ),
        unit="layers",
        minimum=0,
        maximum=MAX_LAYERS,
        tasks=INFER,
        layout=True,
        metavar="N",
    ),
    fraction(
        "gpu_memory_utilization",
        N_("A serving engine's share of GPU memory (vLLM: 0.92)."),
        tasks=INFER,
        min_open=True,
        layout=True,
    ),
    gib("cuda_context", N_("CUDA context per process in GiB (default 0.5).")),
    fraction(
        "fragmentation",
        N_("Allocator reserve as a fraction of tensors (default 0.10)."),
        max_open=True,
    ),
    gib("nccl", N_("NCCL buffers per GPU in GiB when GPUs > 1 (default 1).")),
)
