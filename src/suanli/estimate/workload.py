"""What the user wants to run: frozen, validated workload descriptions.

Every field has a unit or a closed set of values; a bad value raises ``ValueError`` with one
sentence that says what to change (the CLI turns it into exit code 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.i18n import N_

TASKS = ("pretrain", "full", "lora", "qlora", "infer")
TRAIN_TASKS = ("pretrain", "full", "lora", "qlora")
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
PRECISIONS = ("mixed", "pure")
OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw8bit", "sgd", "sgd_momentum", "adafactor", "lion")
RECOMPUTE = ("none", "selective", "op", "full")
#: How the loss meets the vocabulary: every token's fp32 logits at once (transformers), the fp32
#: upcast one chunk at a time (torchtune), or fused with the LM head (Liger, Unsloth).
LOSSES = ("full", "chunked", "fused")
#: Chunks of torchtune's CEWithChunkedOutputLoss (num_output_chunks).
LOSS_CHUNKS = 8
#: Whose kernels' saved tensors count: transformers' modules or Megatron-LM's fused kernels.
SAVED_TENSORS = ("hf", "megatron")
#: Communication buckets a sharding implementation keeps: none counted, or DeepSpeed ZeRO's.
ZERO_BUCKETS = ("none", "deepspeed")
ATTENTION = ("eager", "sdpa", "flash")
KERNELS = ("eager", "fused")
#: fp8 scaling recipes: ``delayed`` takes each tensor's scale from its amax history and casts in
#: one pass (Transformer Engine's DelayedScaling, Megatron's default ``--fp8-recipe delayed``);
#: ``dynamic`` reads each tensor for its amax before casting it (torchao float8, torchtitan;
#: Megatron's ``--fp8-recipe tensorwise``).
FP8_SCALING = ("delayed", "dynamic")
DEVICES = ("cuda", "cpu")
KV_DTYPES = ("fp16", "bf16", "fp8", "int8", "fp32")
#: How a serving engine launches a layer's input projections: ``fused`` (one QKV GEMM and one
#: gate/up GEMM: vLLM, SGLang, TensorRT-LLM's PyTorch backend), ``qkv`` (QKV fused, gate and up
#: apart: gpt-fast, TensorRT-LLM engines built without ``--use_fused_mlp``), ``separate`` (one GEMM
#: per weight: transformers, llama.cpp).
PROJECTIONS = ("fused", "qkv", "separate")
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")

#: Bytes per element in memory; tf32 is fp32 storage multiplied on TF32 tensor cores.
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def check_tensor_parallel(num_heads: int, tp: int, model_name: str) -> None:
    """Tensor parallelism splits attention by heads, so ``tp`` must divide the head count."""
    if num_heads % tp:
        fits = [d for d in range(1, min(num_heads, 64) + 1) if num_heads % d == 0]
        raise ValueError(
            N_(
                "--tp {tp} does not divide the {heads} attention heads of {model}; "
                "use one of {fits}"
            ).format(tp=tp, heads=num_heads, model=model_name, fits=", ".join(map(str, fits)))
        )


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(
            N_("--{option} {value!r} is not one of {allowed}").format(
                option=name.replace("_", "-"), value=value, allowed=", ".join(allowed)
            )
        )


def _positive(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            N_("--{option} must be an integer >= {minimum}, got {value!r}").format(
                option=name.replace("_", "-"), minimum=minimum, value=value
            )
        )


@dataclass(frozen=True)
class Parallelism:
    """How one model replica is split, and how many replicas there are."""

    dp: int = 1
    """Data-parallel replicas (ZeRO/FSDP shard over these)."""
    tp: int = 1
    """Tensor-parallel degree (Megatron-style column/row splits of attention and MLP)."""
    pp: int = 1
    """Pipeline stages (1F1B schedule)."""
    vpp: int = 1
    """Virtual stages per pipeline rank (interleaved 1F1B)."""
    sp: bool = False
    """Sequence parallelism: shards norm and dropout activations over the TP group."""
    ep: int = 1
    """Expert-parallel degree for MoE layers (experts split over this many GPUs)."""
    zero: int = 0
    """ZeRO stage 0-3 over ``dp`` (3 is FSDP full sharding)."""
    shard: int = 0
    """ZeRO/FSDP shards over groups of this many data-parallel ranks and replicates across the
    groups (HSDP, DeepSpeed hpZ/MiCS; usually a node's GPUs); 0: over all of ``dp``."""

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "vpp", "ep"):
            _positive(name, getattr(self, name))
        _positive("shard", self.shard, minimum=0)
        if self.shard and self.dp > self.shard and self.dp % self.shard:
            raise ValueError(
                N_("--shard-group {shard} does not divide the {dp} data-parallel ranks").format(
                    shard=self.shard, dp=self.dp
                )
            )
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(N_("--zero must be 0, 1, 2 or 3, got {zero!r}").format(zero=self.zero))
        if self.sp and self.tp == 1:
            raise ValueError(N_("--sp (sequence parallel) needs --tp > 1"))

    @property
    def gpus(self) -> int:
        """GPUs in the whole job."""
        return self.dp * self.tp * self.pp

    @property
    def zero_group(self) -> int:
        """Ranks the ZeRO/FSDP states are sharded over (``dp``, or the HSDP shard group)."""
        return min(self.dp, self.shard) if self.shard else self.dp


@dataclass(frozen=True)
class Overheads:
    """Runtime overheads; ``None`` takes the bundled default (catalog/data/overhead.toml)."""

    cuda_context_bytes: float | None = None
    """CUDA context and kernel images per process (default 512 MiB)."""
    fragmentation: float | None = None
    """Caching-allocator reserve as a fraction of allocated bytes (default 0.10)."""
    nccl_bytes: float | None = None
    """NCCL communicator buffers per GPU when more than one GPU works together (default 1 GiB)."""

    def __post_init__(self) -> None:
        for name in ("cuda_context_bytes", "nccl_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(
                    N_("--{option} must be >= 0").format(
                        option=name.replace("_bytes", "").replace("_", "-")
                    )
                )
        if self.fragmentation is not None and not 0 <= self.fragmentation < 1:
            raise ValueError(
                N_("--fragmentation must be in [0, 1), got {value}").format(
                    value=self.fragmentation
                )
            )


@dataclass(frozen=True)
class TrainWork:
    """A training or fine-tuning step, per GPU."""

    task: str = "full"
    """``pretrain``, ``full``, ``lora`` or ``qlora``."""
    batch: int = 1
    """Micro-batch per GPU, in sequences."""
    seq: int = 2048
    """Sequence length in tokens."""
    grad_accum: int = 1
    """Micro-batches accumulated per optimizer step."""
    dtype: str = "bf16"
    """Compute and weight dtype."""
    precision: str = "mixed"
    """``mixed``: fp32 master weights and fp32 optimizer states beside ``dtype`` weights
    (Megatron, DeepSpeed: 16 bytes/param with Adam); ``pure``: everything in ``dtype``."""
    optimizer: str = "adamw"
    recompute: str = "none"
    """Activation recomputation: none, selective (attention core), op (torchtitan's per-op
    selective checkpointing: every other matmul output kept), full (layer inputs only)."""
    recompute_every: int = 1
    """With ``op`` or ``full``: checkpoint every K-th layer only; the others keep everything
    (torchtitan's layer SAC, ``selective_ac_option = "K"``)."""
    activation_offload: bool = False
    """Saved activations wait in pinned CPU memory between forward and backward, copied on a
    side stream (torchtune ``enable_activation_offloading``, Unsloth's offloaded checkpointing)."""
    loss: str = "full"
    """``full``: fp32 logits of every token at once; ``chunked``: the fp32 upcast 1/8 at a time
    (torchtune CEWithChunkedOutputLoss); ``fused``: LM head and loss fused, no logits kept."""
    saved_tensors: str = "hf"
    """What the layers save for backward: ``hf`` (transformers' modules, checked op by op on the
    CPU) or ``megatron`` (Megatron-LM's fused kernels, Korthikanti et al. 2022 §4)."""
    main_grads_fp32: bool = False
    """Gradients accumulate in an fp32 buffer (Megatron's ``main_grad`` with bf16 and its
    distributed optimizer): 4 bytes per trainable parameter instead of the dtype's."""
    zero_buckets: str = "none"
    """``deepspeed``: ZeRO's reduce and all-gather buckets (5e8 elements each; 4.5 times their
    sum with overlap_comm, on for stage 3) take GPU memory."""
    optimizer_in_backward: bool = False
    """Each parameter steps as soon as its gradient is ready and frees it (torchtune
    ``optimizer_in_bwd``): one tensor's gradient lives at a time."""
    attention: str = "sdpa"
    """``eager`` materialises the s x s scores; ``sdpa``/``flash`` do not."""
    parallel: Parallelism = field(default_factory=Parallelism)
    offload_optimizer: bool = False
    """Optimizer states (and master weights) live in CPU memory (ZeRO-Offload)."""
    offload_params: bool = False
    """Parameters and their gradients live in CPU memory and come to the GPU one layer at a
    time (ZeRO-Infinity offload_param, FSDP CPUOffload(offload_params=True))."""
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = ("q", "k", "v", "o")
    """Modules that get adapters (``q k v o gate up down``)."""
    dropout: float | None = None
    """Dropout probability; ``None`` takes the model config's value (0 for most LLMs)."""
    logits_fp32: bool = True
    """The loss upcasts logits to fp32 (transformers, torchtune); False for chunked/fused loss."""
    device: str = "cuda"
    """``cuda`` (dropout masks are 1-byte bools) or ``cpu`` (masks in ``dtype``)."""
    overheads: Overheads = field(default_factory=Overheads)
    kernels: str = "eager"
    """``eager``: one kernel per PyTorch op (Hugging Face, torchtune without compile);
    ``fused``: fused norms, activations and RoPE (Megatron, torch.compile, Liger). Changes the
    memory traffic of the non-matmul ops, and what the norms and SwiGLU keep for backward."""
    fp8_scaling: str = "delayed"
    """How fp8 training scales its casts (:data:`FP8_SCALING`); only read when ``dtype`` is fp8."""

    def __post_init__(self) -> None:
        _choice("task", self.task, TRAIN_TASKS)
        _choice("kernels", self.kernels, KERNELS)
        _choice("fp8_scaling", self.fp8_scaling, FP8_SCALING)
        _positive("batch", self.batch)
        _positive("seq", self.seq)
        _positive("grad_accum", self.grad_accum)
        _choice("dtype", self.dtype, DTYPES)
        _choice("precision", self.precision, PRECISIONS)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("recompute", self.recompute, RECOMPUTE)
        _positive("recompute_every", self.recompute_every)
        if self.recompute_every > 1 and self.recompute not in ("op", "full"):
            raise ValueError(N_("--recompute-every needs --recompute op or full"))
        _choice("loss", self.loss, LOSSES)
        if self.offload_params and self.task in ("lora", "qlora"):
            raise ValueError(
                N_(
                    "--offload-params applies to full fine-tuning and pre-training; LoRA's frozen "
                    "base stays on the GPU"
                )
            )
        _choice("saved_tensors", self.saved_tensors, SAVED_TENSORS)
        _choice("zero_buckets", self.zero_buckets, ZERO_BUCKETS)
        _choice("attention", self.attention, ATTENTION)
        _choice("device", self.device, DEVICES)
        _positive("lora_rank", self.lora_rank)
        for target in self.lora_targets:
            _choice("lora_targets", target, LORA_TARGETS)
        if self.dropout is not None and not 0 <= self.dropout < 1:
            raise ValueError(
                N_("--dropout must be in [0, 1), got {value}").format(value=self.dropout)
            )

    @property
    def fp32_storage(self) -> bool:
        """Weights and activations kept in fp32 (``fp32``, or ``tf32``: fp32 multiplied on the
        TF32 tensor cores of Ampere and later, PyTorch's ``allow_tf32``)."""
        return self.dtype in ("fp32", "tf32")

    @property
    def dtype_bytes(self) -> int:
        """Bytes per element of the compute dtype."""
        return DTYPE_BYTES[self.dtype]

    @property
    def checkpointed(self) -> bool:
        """Layers run under activation checkpointing (``op`` or ``full``)."""
        return self.recompute in ("op", "full")

    @property
    def is_lora(self) -> bool:
        """LoRA or QLoRA: the base weights are frozen."""
        return self.task in ("lora", "qlora")


@dataclass(frozen=True)
class InferWork:
    """Serving a model: weights, KV cache and the prefill peak, per GPU."""

    batch: int = 1
    """Concurrent sequences."""
    context: int = 4096
    """Tokens per sequence held in the KV cache (prompt + generated)."""
    weight_format: str = "bf16"
    """A format id from catalog/data/quant.toml (``bf16``, ``fp8``, ``gguf-q4_k_m``...)."""
    kv_dtype: str = "bf16"
    tp: int = 1
    """Tensor-parallel degree: weights and KV heads split over this many GPUs."""
    pp: int = 1
    """Pipeline stages: the layers split over this many GPU groups that run in turn for each
    token (llama.cpp's default ``--split-mode layer``, vLLM's ``--pipeline-parallel-size``)."""
    prefill_chunk: int | None = None
    """Chunked prefill: tokens per chunk (``None`` prefills the whole prompt at once)."""
    gpu_layers: int | None = None
    """Layers on the GPU; the others stay in system memory and run on the CPU (llama.cpp
    ``--n-gpu-layers``, Ollama ``num_gpu``). ``None``: every layer on the GPU."""
    gpu_memory_utilization: float | None = None
    """A serving engine's reservation (vLLM: 0.9): the engine takes this share of the GPU."""
    overheads: Overheads = field(default_factory=Overheads)
    projections: str = "fused"
    """How the engine launches each layer's input projections (:data:`PROJECTIONS`)."""

    def __post_init__(self) -> None:
        _positive("batch", self.batch)
        _positive("context", self.context)
        _positive("tp", self.tp)
        _positive("pp", self.pp)
        _choice("kv_dtype", self.kv_dtype, KV_DTYPES)
        _choice("projections", self.projections, PROJECTIONS)
        if self.prefill_chunk is not None:
            _positive("prefill_chunk", self.prefill_chunk)
        if self.gpu_layers is not None:
            _positive("gpu_layers", self.gpu_layers, minimum=0)
        util = self.gpu_memory_utilization
        if util is not None and not 0 < util <= 1:
            raise ValueError(
                N_("--gpu-memory-utilization must be in (0, 1], got {value}").format(value=util)
            )

    def gpu_share(self, num_layers: int) -> float:
        """Share of the model's layers on the GPU (1.0 without partial offload)."""
        if self.gpu_layers is None or num_layers <= 0:
            return 1.0
        return min(self.gpu_layers, num_layers) / num_layers

    @property
    def kv_bytes(self) -> float:
        """Bytes per element of the KV cache."""
        return {"fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "fp32": 4}[self.kv_dtype]
