"""Workload options shared by ``mem``, ``perf``, ``plan``, ``fit`` and ``verify``: same names,
same meanings, one place. ``work_request`` turns them into the application layer's
:class:`~suanli.answers.request.WorkRequest`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from suanli.cli.types import FloatRange, IntRange
from suanli.estimate.workload import (
    ATTENTION,
    DTYPES,
    FP8_SCALING,
    KERNELS,
    KV_DTYPES,
    LORA_TARGETS,
    LOSSES,
    OPTIMIZERS,
    PRECISIONS,
    PROJECTIONS,
    RECOMPUTE,
    ROPE,
    SAVED_TENSORS,
    TASKS,
    ZERO_BUCKETS,
    InferWork,
    TrainWork,
)
from suanli.i18n import N_

if TYPE_CHECKING:
    from suanli.answers.request import WorkRequest


def _enter_revision(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Read hub ids at ``value`` for the rest of the command (the answers' loaders and the
    diffusion hub reader take it from :func:`suanli.models.hub.hub_revision`)."""
    if value is not None:
        from suanli.models.hub import hub_revision

        ctx.with_resource(hub_revision(value))


#: ``--revision REV``: the branch, tag or commit of a Hugging Face model. Not a workload option
#: (it never reaches the request): it scopes the hub reads of the command it decorates.
revision_option = click.option(
    "--revision",
    metavar="REV",
    default=None,
    expose_value=False,
    callback=_enter_revision,
    help=N_("Branch, tag or commit of a Hugging Face model id (default: main)."),
)

_OPTIONS: list[Callable[[Any], Any]] = [
    revision_option,
    click.option(
        "--framework",
        default="hf",
        show_default=True,
        help=N_(
            "Training or serving framework whose defaults fill the options you do not set: "
            "hf, megatron, deepspeed, torchtitan, torchtune, unsloth, llama-factory, vllm, sglang, "
            "tensorrt-llm, llama.cpp, ollama (suanli frameworks)."
        ),
    ),
    click.option(
        "--task",
        type=click.Choice((*TASKS, "generate-image")),
        default="lora",
        show_default=True,
        help=N_(
            "pretrain, full (fine-tune), lora, qlora, infer, or generate-image (text-to-image "
            "pipelines with perf and mem)."
        ),
    ),
    click.option(
        "--batch",
        type=IntRange(min=1),
        default=None,
        help=N_(
            "Micro-batch per GPU (training; default 1) or concurrent sequences "
            "(inference; default 1)."
        ),
    ),
    click.option(
        "--global-batch",
        type=IntRange(min=1),
        default=None,
        help=N_("Sequences per optimizer step; sets gradient accumulation."),
    ),
    click.option(
        "--grad-accum",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help=N_("Micro-batches per optimizer step."),
    ),
    click.option(
        "--seq",
        type=IntRange(min=1),
        default=2048,
        show_default=True,
        help=N_("Training sequence length in tokens."),
    ),
    click.option(
        "--context",
        type=IntRange(min=1),
        default=4096,
        show_default=True,
        help=N_("Inference: tokens per sequence held in the KV cache."),
    ),
    click.option(
        "--dtype",
        type=click.Choice(DTYPES),
        default="bf16",
        show_default=True,
        help=N_("Compute and weight dtype."),
    ),
    click.option(
        "--precision",
        type=click.Choice(PRECISIONS),
        default="mixed",
        show_default=True,
        help=N_("mixed: fp32 master weights and states; pure: all in --dtype (bf16 under fp8)."),
    ),
    click.option("--optimizer", type=click.Choice(OPTIMIZERS), default="adamw", show_default=True),
    click.option(
        "--recompute",
        type=click.Choice(RECOMPUTE),
        default="none",
        show_default=True,
        help=N_("Activation recomputation (checkpointing)."),
    ),
    click.option(
        "--recompute-every",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        metavar="K",
        help=N_("With --recompute op or full: checkpoint every K-th layer only."),
    ),
    click.option(
        "--activation-offload",
        is_flag=True,
        help=N_(
            "Saved activations wait in CPU memory between forward and backward "
            "(torchtune, Unsloth); costs PCIe time when the copies outlast the matmuls."
        ),
    ),
    click.option(
        "--loss",
        type=click.Choice(LOSSES),
        default="full",
        show_default=True,
        help=N_(
            "Cross-entropy: full (fp32 logits at once), chunked (torchtune, 8 chunks) or fused "
            "with the LM head (Liger, Unsloth)."
        ),
    ),
    click.option(
        "--saved-tensors",
        type=click.Choice(SAVED_TENSORS),
        default="hf",
        show_default=True,
        help=N_(
            "What the layers save for backward: hf (transformers' modules) or megatron "
            "(Megatron-LM's fused kernels, Korthikanti et al. 2022)."
        ),
    ),
    click.option(
        "--zero-buckets",
        type=click.Choice(ZERO_BUCKETS),
        default="none",
        show_default=True,
        help=N_(
            "deepspeed: count ZeRO's reduce and all-gather buckets (5e8 elements each, 4.5x "
            "with overlap_comm at stage 3)."
        ),
    ),
    click.option(
        "--main-grads-fp32",
        is_flag=True,
        help=N_("Gradients accumulate in an fp32 buffer (Megatron)."),
    ),
    click.option(
        "--optimizer-in-backward",
        is_flag=True,
        help=N_("Step each parameter in the backward pass and free its gradient (torchtune)."),
    ),
    click.option(
        "--attention",
        type=click.Choice(ATTENTION),
        default="sdpa",
        show_default=True,
        help=N_(
            "eager materialises the s x s scores; sdpa: PyTorch's scaled_dot_product_attention "
            "(FlashAttention-2 kernels); flash: the generation's fastest fused kernel "
            "(FlashAttention-3, or cuDNN through Transformer Engine, on Hopper)."
        ),
    ),
    click.option(
        "--kernels",
        type=click.Choice(KERNELS),
        default="eager",
        show_default=True,
        help=N_(
            "eager: one kernel per op (HF, torchtune); fused: hand-fused kernels (Megatron, "
            "Transformer Engine, Liger, Unsloth); compiled: torch.compile's (fewer kernels, and "
            "fused norms and SwiGLU keep fewer tensors). Inference: fused (vLLM, SGLang) and "
            "compiled (gpt-fast) run each residual add inside the next norm."
        ),
    ),
    click.option(
        "--fp8-scaling",
        type=click.Choice(FP8_SCALING),
        default="delayed",
        show_default=True,
        help=N_(
            "With --dtype fp8: delayed scales from the amax history, one pass per cast "
            "(Transformer Engine, Megatron); dynamic reads each tensor for its amax first "
            "(torchao float8, torchtitan)."
        ),
    ),
    click.option(
        "--rope",
        type=click.Choice(ROPE),
        default="real",
        show_default=True,
        help=N_(
            "The model code's rotary embedding: real (transformers, torchtune, Megatron) or "
            "complex (torchtitan), which torch.compile cannot fuse: with --kernels compiled it "
            "stays eager."
        ),
    ),
    click.option(
        "--zero",
        type=IntRange(0, 3),
        default=0,
        show_default=True,
        help=N_("ZeRO stage over --dp (3 = FSDP full shard)."),
    ),
    click.option(
        "--tp",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help=N_("Tensor parallel degree."),
    ),
    click.option(
        "--pp",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help=N_(
            "Pipeline stages (training: 1F1B; inference: layers split over GPUs that run "
            "in turn, as llama.cpp's layer split)."
        ),
    ),
    click.option(
        "--vpp",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help=N_("Interleaved virtual stages per pipeline rank."),
    ),
    click.option(
        "--dp",
        type=IntRange(min=1),
        default=None,
        help=N_("Data-parallel replicas (default: --gpus / (tp x pp))."),
    ),
    click.option(
        "--ep",
        type=IntRange(min=1),
        default=1,
        show_default=True,
        help=N_("Expert parallel degree (MoE)."),
    ),
    click.option("--sp", is_flag=True, help=N_("Sequence parallelism (needs --tp > 1).")),
    click.option(
        "--shard-group",
        type=IntRange(min=0),
        default=0,
        show_default=True,
        metavar="N",
        help=N_(
            "Shard ZeRO/FSDP states over groups of N data-parallel ranks and replicate across "
            "groups (HSDP; usually the GPUs of a node); 0: over all of them."
        ),
    ),
    click.option(
        "--gpus",
        type=IntRange(min=1),
        default=None,
        help=N_(
            "GPUs in the job (training: dp x tp x pp; inference: tensor parallel, or tp x pp "
            "with --pp)."
        ),
    ),
    click.option(
        "--offload-optimizer",
        is_flag=True,
        help=N_("Optimizer states and master weights in CPU memory."),
    ),
    click.option(
        "--offload-params",
        is_flag=True,
        help=N_(
            "Parameters and gradients in CPU memory, one layer on the GPU at a time "
            "(ZeRO-Infinity, FSDP CPU offload; with LoRA/QLoRA the frozen base too); costs PCIe "
            "time."
        ),
    ),
    click.option("--lora-rank", type=IntRange(min=1), default=16, show_default=True),
    click.option(
        "--lora-targets",
        default="q,k,v,o",
        show_default=True,
        help=N_("Comma-separated modules with adapters: {targets}.").format(
            targets=",".join(LORA_TARGETS)
        ),
    ),
    click.option(
        "--dropout",
        type=FloatRange(0, 1, max_open=True),
        default=None,
        help=N_("Dropout probability (default: the model config's, 0 for most LLMs)."),
    ),
    click.option(
        "--quant",
        default="bf16",
        show_default=True,
        help=N_(
            "Inference weight format: bf16, fp8, int8, gptq-4bit-g128, "
            "awq-4bit-g128, nf4-dq, gguf-q4_k_m, ... (catalog/data/quant.toml)."
        ),
    ),
    click.option("--kv-dtype", type=click.Choice(KV_DTYPES), default="bf16", show_default=True),
    click.option(
        "--projections",
        type=click.Choice(PROJECTIONS),
        default="fused",
        show_default=True,
        help=N_(
            "Inference: how the serving engine launches each layer's input projections: fused "
            "(one QKV and one gate/up GEMM: vLLM, SGLang, TensorRT-LLM), qkv (gate and up apart: "
            "gpt-fast) or separate (one GEMM per weight: transformers, llama.cpp)."
        ),
    ),
    click.option(
        "--prefill-chunk",
        type=IntRange(min=1),
        default=None,
        help=N_("Chunked prefill: tokens per forward pass."),
    ),
    click.option(
        "--images",
        type=IntRange(0, 1024),
        default=0,
        show_default=True,
        help=N_(
            "Images per sequence for a vision-language model (LLaVA-style): each adds its "
            "image tokens to the context and the vision tower's work to the prefill."
        ),
    ),
    click.option(
        "--image-size",
        default=None,
        metavar="WxH",
        help=N_(
            "Pixels of each image for towers at native resolution (Qwen2.5-VL: one token per "
            "28x28 pixels); LLaVA-style towers resize to their own size."
        ),
    ),
    click.option(
        "--gpu-layers",
        type=IntRange(min=0),
        default=None,
        metavar="N",
        help=N_(
            "Inference: N layers on the GPU, the rest on the CPU from system memory "
            "(llama.cpp --n-gpu-layers, Ollama num_gpu)."
        ),
    ),
    click.option(
        "--gpu-memory-utilization",
        type=FloatRange(0, 1, min_open=True),
        default=None,
        help=N_("A serving engine's share of GPU memory (vLLM: 0.92)."),
    ),
    click.option(
        "--cuda-context",
        type=FloatRange(min=0),
        default=None,
        metavar="GIB",
        help=N_("CUDA context per process in GiB (default 0.5)."),
    ),
    click.option(
        "--fragmentation",
        type=FloatRange(0, 1, max_open=True),
        default=None,
        help=N_("Allocator reserve as a fraction of tensors (default 0.10)."),
    ),
    click.option(
        "--nccl",
        type=FloatRange(min=0),
        default=None,
        metavar="GIB",
        help=N_("NCCL buffers per GPU in GiB when GPUs > 1 (default 1)."),
    ),
]


def workload_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with every shared workload option."""
    for option in reversed(_OPTIONS):
        func = option(func)
    return func


#: The options that describe the work itself (not its layout), for ``plan``, which searches the
#: layout and would otherwise have to ignore --tp, --batch and the like.
SHAPE_OPTIONS = (
    "revision",
    "framework",
    "images",
    "image_size",
    "task",
    "activation_offload",
    "loss",
    "main_grads_fp32",
    "saved_tensors",
    "zero_buckets",
    "optimizer_in_backward",
    "seq",
    "context",
    "dtype",
    "precision",
    "optimizer",
    "attention",
    "kernels",
    "fp8_scaling",
    "rope",
    "lora_rank",
    "lora_targets",
    "dropout",
    "quant",
    "kv_dtype",
    "projections",
    "cuda_context",
    "fragmentation",
    "nccl",
)


def shape_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with the workload-shape options only."""
    for option in reversed(_OPTIONS):
        probe = option(lambda **kw: None)
        params = getattr(probe, "__click_params__", [])
        if params and params[0].name in SHAPE_OPTIONS:
            func = option(func)
    return func


def work_request(opts: dict[str, Any]) -> WorkRequest:
    """The request the shared workload options describe (other keys of ``opts`` are ignored)."""
    from suanli.answers.request import WorkRequest

    return WorkRequest.from_options({**opts, "explicit": given_options(opts)})


def given_options(opts: dict[str, Any]) -> tuple[str, ...] | None:
    """The options given on the command line (a framework's defaults never override them);
    None outside a click command."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    given = []
    for name in opts:
        source = ctx.get_parameter_source(name)
        if source in (
            ParameterSource.COMMANDLINE,
            ParameterSource.ENVIRONMENT,
        ):
            given.append(name)
    return tuple(sorted(given))


def work_from_options(opts: dict[str, Any]) -> TrainWork | InferWork:
    """Build the workload the options describe; raises ValueError on inconsistent values."""
    from suanli.answers.request import build_work

    return build_work(work_request(opts))
