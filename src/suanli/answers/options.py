"""Every workload option, declared once: name, type, unit, default, bounds, choices, help, the
tasks it applies to and how the command line spells it.

:class:`~suanli.answers.request.WorkRequest` takes its defaults from :data:`WORK_OPTIONS`; the
command line's options (``cli/options.py``) and the web's request bodies (``web/schemas.py``)
are generated from it, so ``--help``, the OpenAPI document and the Python API cannot disagree on
a default or a bound (``tests/test_options_declared.py``). The help is English marked with
``N_`` (the message catalog gives the Chinese); a help that lists catalog data (frameworks,
weight formats) names it with a ``{placeholder}`` filled on first use, so reading the catalog
costs nothing to a command that never shows it.

The bounds are those of a real job, shared by every front-end: tensor and pipeline degrees up to
1,024, GPU counts up to :data:`suanli.limits.MAX_GPUS`, tokens up to
:data:`suanli.limits.MAX_TOKENS` (docs/security.md: no request asks for unbounded work).
"""

from __future__ import annotations

from typing import Any

from suanli.answers.option_kinds import (
    ADAPTERS,
    INFER,
    MAX_DEGREE,
    MAX_SEQUENCES,
    RECOMPUTE_AUTO,
    choice,
    degree,
    fraction,
    lora_targets,
    switch,
    tokens,
)
from suanli.answers.option_type import (
    ALL_TASKS,
    Option,
    framework_ids,
)
from suanli.answers.options_serving import SERVING_OPTIONS
from suanli.estimate.workload import (
    ATTENTION,
    DTYPES,
    EP_DISPATCHERS,
    FP8_SCALING,
    KERNELS,
    LOSSES,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PP_SCHEDULES,
    PRECISIONS,
    RECOMPUTE,
    RECOMPUTE_MODULES,
    ROPE,
    SAVED_TENSORS,
    TASKS,
    TRAIN_TASKS,
    ZERO_BUCKETS,
)
from suanli.i18n import N_
from suanli.limits import MAX_GPUS

#: The workload options, in the order ``--help`` lists them.
OPTIONS: tuple[Option, ...] = (
    Option(
        name="framework",
        kind=str,
        default="hf",
        help=N_(
            "Training or serving framework whose defaults fill the options you do not set: "
            "{frameworks} (suanli frameworks)."
        ),
        max_length=40,
        help_values=framework_ids,
    ),
    choice(
        "task",
        "lora",
        TASKS,
        N_(
            "pretrain, full (fine-tune), lora, qlora, infer, or generate-image (text-to-image "
            "pipelines with perf and mem)."
        ),
        cli_choices=("generate-image",),
    ),
    Option(
        name="batch",
        kind=int,
        default=None,
        help=N_(
            "Micro-batch per GPU (training; default 1) or concurrent sequences "
            "(inference; default 1)."
        ),
        unit="sequences",
        minimum=1,
        maximum=MAX_SEQUENCES,
        layout=True,
    ),
    Option(
        name="global_batch",
        kind=int,
        default=None,
        help=N_("Sequences per optimizer step; sets gradient accumulation."),
        unit="sequences",
        minimum=1,
        maximum=MAX_SEQUENCES,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    Option(
        name="grad_accum",
        kind=int,
        default=1,
        help=N_("Micro-batches per optimizer step."),
        unit="micro-batches",
        minimum=1,
        maximum=MAX_SEQUENCES,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    tokens("seq", 2048, N_("Training sequence length in tokens."), TRAIN_TASKS),
    tokens("context", 4096, N_("Inference: tokens per sequence held in the KV cache."), INFER),
    choice("dtype", "bf16", DTYPES, N_("Compute and weight dtype."), tasks=TRAIN_TASKS),
    choice(
        "precision",
        "mixed",
        PRECISIONS,
        N_("mixed: fp32 master weights and states; pure: all in --dtype (bf16 under fp8)."),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "optimizer",
        "adamw",
        OPTIMIZERS,
        N_("Optimizer; its states take memory for every trainable parameter."),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "optimizer_impl",
        "fused",
        OPTIMIZER_IMPLS,
        N_(
            "How AdamW steps on the GPU: fused (one kernel reads and writes each state once: "
            "torch fused=True, the transformers default with torch >= 2.8, Megatron, DeepSpeed) "
            "or foreach (torch.optim's CUDA default: one kernel per arithmetic step, about 3x "
            "the bytes); docs/speed.md."
        ),
        tasks=TRAIN_TASKS,
    ),
    # A task-aware default (--recompute auto, answers/recompute.py) is set here and only here,
    # with "auto" among the choices; TrainWork keeps "none" (ESTIMATOR_OWN in the test).
    choice(
        "recompute",
        RECOMPUTE_AUTO,
        (RECOMPUTE_AUTO, *RECOMPUTE),
        N_(
            "Activation recomputation (checkpointing); auto: the lightest that fits the card "
            "(none without --gpu)."
        ),
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    Option(
        name="recompute_modules",
        kind=str,
        default="core_attn",
        help=N_(
            "With --recompute selective: what is recomputed, comma-separated (Megatron-Core's "
            "--recompute-modules): {modules}."
        ),
        max_length=100,
        tasks=TRAIN_TASKS,
        layout=True,
        help_values=lambda: {"modules": ",".join(RECOMPUTE_MODULES)},
    ),
    Option(
        name="recompute_every",
        kind=int,
        default=1,
        help=N_("With --recompute op or full: checkpoint every K-th layer only."),
        unit="layers",
        minimum=1,
        maximum=MAX_DEGREE,
        tasks=TRAIN_TASKS,
        layout=True,
        metavar="K",
    ),
    switch(
        "activation_offload",
        N_(
            "Saved activations wait in CPU memory between forward and backward "
            "(torchtune, Unsloth); costs PCIe time when the copies outlast the matmuls."
        ),
    ),
    choice(
        "loss",
        "full",
        LOSSES,
        N_(
            "Cross-entropy: full (fp32 logits at once), chunked (torchtune, 8 chunks), fused "
            "with the LM head (Liger, Unsloth) or kernel (one kernel over the logits in their "
            "dtype: flash-attn's, llm-foundry's default)."
        ),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "saved_tensors",
        "hf",
        SAVED_TENSORS,
        N_(
            "What the layers save for backward: hf (transformers' modules) or megatron "
            "(Megatron-LM's fused kernels, Korthikanti et al. 2022)."
        ),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "zero_buckets",
        "none",
        ZERO_BUCKETS,
        N_(
            "deepspeed: count ZeRO's reduce and all-gather buckets (5e8 elements each, 4.5x "
            "with overlap_comm at stage 3)."
        ),
        tasks=TRAIN_TASKS,
    ),
    switch("main_grads_fp32", N_("Gradients accumulate in an fp32 buffer (Megatron).")),
    switch(
        "blocking_grad_reduce",
        N_(
            "The data-parallel gradient reduction blocks the backward pass instead of "
            "overlapping it (DeepSpeed below ZeRO 3: overlap_comm is off by default)."
        ),
    ),
    switch(
        "optimizer_in_backward",
        N_("Step each parameter in the backward pass and free its gradient (torchtune)."),
    ),
    choice(
        "attention",
        "sdpa",
        ATTENTION,
        N_(
            "eager materialises the s x s scores; sdpa: PyTorch's scaled_dot_product_attention "
            "(FlashAttention-2 kernels); flash: the generation's fastest fused kernel "
            "(FlashAttention-3, or cuDNN through Transformer Engine, on Hopper); triton: the 2023 "
            "FlashAttention kernel written in Triton (llm-foundry's attn_impl triton), slower "
            "than FlashAttention-2, above all in the backward pass."
        ),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "kernels",
        "eager",
        KERNELS,
        N_(
            "eager: one kernel per op (HF, torchtune); fused: hand-fused kernels (Megatron, "
            "Transformer Engine, Liger, Unsloth); compiled: torch.compile's (fewer kernels, and "
            "fused norms and SwiGLU keep fewer tensors). Inference: fused (vLLM, SGLang) and "
            "compiled (gpt-fast) run each residual add inside the next norm."
        ),
    ),
    choice(
        "fp8_scaling",
        "delayed",
        FP8_SCALING,
        N_(
            "With --dtype fp8: delayed scales from the amax history, one pass per cast "
            "(Transformer Engine, Megatron); dynamic reads each tensor for its amax first "
            "(torchao float8, torchtitan)."
        ),
        tasks=TRAIN_TASKS,
    ),
    choice(
        "rope",
        "real",
        ROPE,
        N_(
            "The model code's rotary embedding: real (transformers, torchtune, Megatron) or "
            "complex (torchtitan), which torch.compile cannot fuse: with --kernels compiled it "
            "stays eager."
        ),
        tasks=TRAIN_TASKS,
    ),
    Option(
        name="zero",
        kind=int,
        default=0,
        help=N_("ZeRO stage over --dp (3 = FSDP full shard)."),
        unit="stage",
        minimum=0,
        maximum=3,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    degree("tp", N_("Tensor parallel degree."), ALL_TASKS),
    degree(
        "pp",
        N_(
            "Pipeline stages (training: 1F1B; inference: layers split over GPUs that run "
            "in turn, as llama.cpp's layer split)."
        ),
        ALL_TASKS,
    ),
    Option(
        name="vpp",
        kind=int,
        default=1,
        help=N_("Interleaved virtual stages per pipeline rank."),
        unit="stages",
        minimum=1,
        maximum=64,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    choice(
        "pp_schedule",
        "1f1b",
        PP_SCHEDULES,
        N_(
            "Pipeline schedule: 1f1b (interleaved with --vpp > 1), zb-h1 (zero-bubble, the "
            "backward split into input and weight gradients) or dualpipe (DeepSeek-V3's "
            "bidirectional schedule: even --pp, two copies of the weights); docs/speed.md."
        ),
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    Option(
        name="dp",
        kind=int,
        default=None,
        help=N_("Data-parallel replicas (default: --gpus / (tp x pp))."),
        unit="GPUs",
        minimum=1,
        maximum=MAX_GPUS,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    degree("ep", N_("Expert parallel degree (MoE).")),
    Option(
        name="etp",
        kind=int,
        default=0,
        help=N_(
            "Expert tensor parallel degree (MoE; Megatron's --expert-tensor-parallel-size): "
            "each routed expert split over this many GPUs, a divisor of --tp; 1 keeps experts "
            "whole and the expert-parallel ranks adjacent; 0: as --tp."
        ),
        unit="GPUs",
        minimum=0,
        maximum=MAX_DEGREE,
        tasks=TRAIN_TASKS,
        layout=True,
    ),
    choice(
        "ep_dispatcher",
        "alltoall",
        EP_DISPATCHERS,
        N_(
            "How MoE tokens cross nodes: alltoall (each routed copy on its own: Megatron-Core's "
            "all-to-all dispatcher) or deepep (one copy per destination node, forwarded over "
            "NVLink: DeepEP, DeepSeek-V3); docs/speed.md."
        ),
        tasks=TRAIN_TASKS,
    ),
    switch("sp", N_("Sequence parallelism (needs --tp > 1)."), layout=True),
    Option(
        name="shard_group",
        kind=int,
        default=0,
        help=N_(
            "Shard ZeRO/FSDP states over groups of N data-parallel ranks and replicate across "
            "groups (HSDP; usually the GPUs of a node); 0: over all of them."
        ),
        unit="GPUs",
        minimum=0,
        maximum=MAX_GPUS,
        tasks=TRAIN_TASKS,
        layout=True,
        metavar="N",
    ),
    Option(
        name="gpus",
        kind=int,
        default=None,
        help=N_(
            "GPUs in the job (training: dp x tp x pp; inference: tensor parallel, or tp x pp "
            "with --pp)."
        ),
        unit="GPUs",
        minimum=1,
        maximum=MAX_GPUS,
        layout=True,
    ),
    switch(
        "offload_optimizer",
        N_("Optimizer states and master weights in CPU memory."),
        layout=True,
    ),
    switch(
        "offload_params",
        N_(
            "Parameters and gradients in CPU memory, one layer on the GPU at a time "
            "(ZeRO-Infinity, FSDP CPU offload; with LoRA/QLoRA the frozen base too); costs PCIe "
            "time."
        ),
        layout=True,
    ),
    Option(
        name="lora_rank",
        kind=int,
        default=16,
        help=N_("LoRA adapter rank."),
        unit="",
        minimum=1,
        maximum=4096,
        tasks=ADAPTERS,
    ),
    Option(
        name="lora_targets",
        kind=str,
        default="q,k,v,o",
        help=N_("Comma-separated modules with adapters: {targets}."),
        max_length=100,
        tasks=ADAPTERS,
        help_values=lora_targets,
    ),
    fraction(
        "dropout",
        N_("Dropout probability (default: the model config's, 0 for most LLMs)."),
        tasks=TRAIN_TASKS,
        max_open=True,
    ),
    *SERVING_OPTIONS,
)

#: Every workload option by name (WorkRequest's fields but ``explicit``).
WORK_OPTIONS: dict[str, Option] = {option.name: option for option in OPTIONS}

#: Data-centre power usage effectiveness for energy (``perf --pue``, the web's ``pue``): the
#: Uptime Institute's 2024 global average is 1.56 (see catalog docs).
PUE = Option(
    name="pue",
    kind=float,
    default=1.5,
    help=N_("Data-centre power usage effectiveness for energy."),
    unit="ratio",
    minimum=1,
    maximum=10,
    tasks=TRAIN_TASKS,
)

#: The fields that describe the layout rather than the work (``plan`` searches them).
LAYOUT_FIELDS = tuple(o.name for o in OPTIONS if o.layout)
#: The fields that describe the work itself (``plan`` takes only these).
SHAPE_FIELDS = tuple(o.name for o in OPTIONS if not o.layout)
#: Options that only mean something for inference (a training framework never sets them).
INFER_ONLY_OPTIONS = frozenset(o.name for o in OPTIONS if o.tasks == INFER)
#: Options an inference answer reads (the only ones a serving framework may set).
INFER_OPTIONS = frozenset(o.name for o in OPTIONS if "infer" in o.tasks)


def declared(name: str) -> Any:
    """The declared default of workload option ``name`` (for WorkRequest's fields)."""
    return WORK_OPTIONS[name].default
