"""The non-matmul side of a training step: element-wise ops (eager or fused), the loss and the
optimizer step, as memory traffic with a floor per kernel (docs/speed.md); and the bytes of a
serving engine's element-wise kernels (:func:`serving_op_bytes`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.estimate.expert_parallel import moe_kernels_per_layer, moe_op_bytes
from suanli.estimate.kernels import GemmModel, ServingOpBytes
from suanli.estimate.workload import TrainWork
from suanli.models.spec import ModelSpec


def serving_op_bytes(
    spec: ModelSpec, tp: Any = 1, dtype_bytes: int = 2, kernels: str = "eager"
) -> ServingOpBytes:
    """Bytes one token moves through each element-wise kernel of one layer of a serving engine,
    on one GPU of ``tp`` (an int or an array of them); ``kernels`` other than ``eager`` fuse
    each residual add into the next norm (:attr:`ServingOpBytes.residual_fused`).

    RMSNorm ``2·b·h`` and residual add ``3·b·h`` (neither split by TP); rotary on q and k in
    place ``2·b·(n_q + n_kv)·d / tp`` (MLA: the rotary part of the heads and the shared key;
    none for GPT-2 and BERT); gated activation ``3·b·I / tp`` (plain ``2·b·I / tp``), averaged
    over the layers where some are MoE (the ``k`` routed experts' widths and the shared
    expert's)."""
    b, h = dtype_bytes, spec.hidden_size
    att = spec.attention
    if spec.architecture in ("gpt2", "bert"):
        rope: Any = 0.0
    elif att.kind == "mla":
        rope = 2 * b * (att.num_heads + 1) * att.qk_rope_head_dim / tp
    else:
        rope = 2 * b * (att.num_heads + att.num_kv_heads) * att.head_dim / tp
    dense: Any = 0.0
    if spec.mlp is not None:
        dense = (3 if spec.mlp.gated else 2) * b * spec.mlp.intermediate_size / tp
    moe_layers = len(spec.moe_layers) if spec.moe is not None else 0
    activation = dense
    if spec.moe is not None and moe_layers:
        e = spec.moe.expert
        moe = (3 if e.gated else 2) * b * e.intermediate_size * spec.moe.experts_per_token / tp
        if spec.moe.shared_expert is not None:
            moe = moe + 3 * b * spec.moe.shared_expert.intermediate_size / tp
        layers = spec.num_layers
        activation = ((layers - moe_layers) * dense + moe_layers * moe) / layers
    return ServingOpBytes(
        norm=2 * b * h,
        rope=rope,
        activation=activation,
        add=3 * b * h,
        residual_fused=kernels != "eager",
    )


def training_op_bytes(spec: ModelSpec, work: TrainWork, *, fused: bool) -> dict[str, float]:
    """Forward memory traffic of one layer's non-matmul ops per token, by kind (``norm``,
    ``rope``, ``activation``, ``add``, ``scores``), eager or fused.

    Eager, counted op by op from the transformers modules (read + write of every operand):
    RMSNorm ``x.float(); pow; mean; mul rsqrt; to(dtype); mul weight`` = ``28h + 4bh``; RoPE on a
    width ``w`` (``mul cos; neg; cat; mul sin; add``) = ``10bw`` for q and k; gated activation
    ``act(gate) * up`` = ``5bI`` (plain: ``2bI``); two residual adds ``6bh``; eager attention adds
    the softmax passes over the scores (``14·n_q·s``).

    Fused (Megatron, torch.compile, Liger), each kernel reading its inputs and writing its
    output once: RMSNorm/LayerNorm ``2bh``; RoPE on q and k ``2b·w``; gated activation ``3bI``
    (read gate and up, write the product; plain ``2bI``); two residual adds ``3bh`` each; eager
    attention one fused softmax over the scores (``2b·n_q·s``). Every fused term is at most its
    eager counterpart. A complex rotary under torch.compile keeps its eager ``10bw``
    (``work.rope_kernels``): ``x.float()`` ``6bw``, the complex multiply ``8bw``, the cast back
    ``6bw`` with ``b = 2``.

    Dropout (``dropout``, where the job's dropout is above 0; docs/speed.md, "Dropout
    kernels"): ``aten::native_dropout`` reads the input and writes the output and a mask of
    ``m`` bytes (1 on CUDA), ``(2b + m)`` an element, for the two residual dropouts (width
    ``h``; fused bias-dropout-add only the mask, ``m·h``) and, with eager attention, the
    probabilities (``n_q·s``; fused attention kernels drop inside).

    MoE layers add their routing (``router``) and the copies of the routed tokens
    (``moe_permute``, one pass in backward like dropout's):
    :func:`suanli.estimate.expert_parallel.moe_op_bytes`."""
    h, b = spec.hidden_size, work.tensor_bytes
    att = spec.attention
    width = spec.mlp.intermediate_size if spec.mlp else 0
    gated = spec.mlp.gated if spec.mlp else True
    if spec.moe is not None and spec.moe_layers:
        width = spec.moe.expert.intermediate_size * spec.moe.experts_per_token
    has_rope = spec.architecture not in ("gpt2", "bert")
    rope_width = (att.num_heads + att.num_kv_heads) * att.head_dim if has_rope else 0
    softmax = work.attention == "eager"
    if fused:
        norm, act, scores = 2 * b * h, (3 if gated else 2) * b * width, 2 * b
    else:
        norm, act, scores = 28 * h + 4 * b * h, (5 if gated else 2) * b * width, 14
    if one_kernel_norm(spec):
        norm = 2 * b * h  # aten::native_layer_norm reads and writes the row once, eager or not
    # A complex rotary under torch.compile runs as eager kernels (work.rope_kernels): upcast,
    # complex multiply, cast back, the 10·b·w bytes of the real one's five ops.
    rope = (2 if fused and work.rope_kernels == work.kernels else 10) * b * rope_width
    mask = 1 if work.device == "cuda" else b
    probs_drop = (2 * b + mask) * att.num_heads * work.seq if softmax else 0
    residual_drops = residual_dropout_bytes(spec, work, fused=fused)
    return {
        **moe_op_bytes(spec, work, fused=fused),
        "dropout": residual_drops + probs_drop if residual_drops else 0.0,
        "norm": float(spec.norm.per_layer * norm),
        "rope": float(rope),
        "activation": float(act),
        "add": float(6 * b * h),
        "scores": float(scores * att.num_heads * work.seq if softmax else 0),
    }


def residual_dropout_bytes(spec: ModelSpec, work: TrainWork, *, fused: bool) -> float:
    """Forward bytes a token moves through a layer's two residual dropouts (0 without dropout):
    ``aten::native_dropout`` ``(2b + m)·h`` each, fused bias-dropout-add the mask ``m·h``."""
    if dropout_probability(spec, work) <= 0:
        return 0.0
    b = work.tensor_bytes
    mask = 1 if work.device == "cuda" else b
    return float(2 * (mask if fused else 2 * b + mask) * spec.hidden_size)


def replicated_op_bytes(
    spec: ModelSpec,
    work: TrainWork,
    *,
    fused: bool,
    op_bytes: dict[str, float] | None = None,
) -> dict[str, float]:
    """The part of :func:`training_op_bytes` (``op_bytes`` when already computed) on whole
    hidden vectors (norms, residual adds, the residual dropouts), which every tensor-parallel
    rank repeats unless sequence parallelism splits it (Korthikanti et al. 2022,
    arXiv:2205.05198, §4.2.2)."""
    found = op_bytes if op_bytes is not None else training_op_bytes(spec, work, fused=fused)
    return {
        "norm": found["norm"],
        "add": found["add"],
        "dropout": residual_dropout_bytes(spec, work, fused=fused),
    }


#: Norm kinds PyTorch runs as one kernel even in eager code (``torch.nn.LayerNorm`` and
#: ``F.layer_norm`` call ``aten::native_layer_norm``); transformers' RMSNorm and Cohere's fp32
#: LayerNorm are written op by op in Python.
ONE_KERNEL_NORMS = ("layernorm", "layernorm-nobias")


def one_kernel_norm(spec: ModelSpec) -> bool:
    """The model's norm is a LayerNorm PyTorch runs as one kernel (:data:`ONE_KERNEL_NORMS`)."""
    return spec.norm.kind in ONE_KERNEL_NORMS


def dropout_probability(spec: ModelSpec, work: TrainWork) -> float:
    """The job's dropout: the workload's, else the model config's (0 for most LLMs)."""
    return work.dropout if work.dropout is not None else spec.dropout


def eager_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """Forward memory traffic of one layer's non-matmul ops, one kernel per PyTorch op, per token
    (:func:`training_op_bytes`, eager)."""
    return sum(training_op_bytes(spec, work, fused=False).values())


def fused_bytes_per_token(spec: ModelSpec, work: TrainWork) -> float:
    """Forward memory traffic of one layer's non-matmul ops in fused kernels, per token
    (:func:`training_op_bytes`, fused): at most :func:`eager_bytes_per_token`."""
    return sum(training_op_bytes(spec, work, fused=True).values())


def elementwise_kernels_per_layer(spec: ModelSpec, work: TrainWork) -> int:
    """Non-matmul kernels of one layer's forward: eager PyTorch launches one per op (an RMSNorm
    is six, RoPE five for q and five for k, or three each when complex, the gated activation
    two, two residual adds, eager attention four softmax passes); fused code one per group
    (norm, RoPE, activation, adds), a complex RoPE under torch.compile as eager."""
    gated = spec.mlp.gated if spec.mlp else True
    has_rope = spec.architecture not in ("gpt2", "bert")
    softmax = work.attention == "eager"
    # Eager RoPE: five ops for q and five for k (real), or upcast, complex multiply and cast
    # back for each (complex); fused, one kernel.
    if not has_rope:
        rope = 0
    elif work.rope_kernels != "eager":
        rope = 1
    else:
        rope = 6 if work.rope == "complex" else 10
    # One aten::native_dropout a site: two residual dropouts (fused into bias-dropout-add in
    # fused code) and, with eager attention, the probabilities.
    drops = (2 + (1 if softmax else 0)) if dropout_probability(spec, work) > 0 else 0
    if not work.fused_kernels:
        norm_kernels = 1 if one_kernel_norm(spec) else 6
        return (
            spec.norm.per_layer * norm_kernels
            + rope
            + (2 if gated else 1)
            + 2
            + (4 if softmax else 0)
        ) + drops
    return spec.norm.per_layer + rope + 1 + 2 + (1 if softmax else 0) + (drops - 2 if drops else 0)


def elementwise_seconds(
    spec: ModelSpec,
    work: TrainWork,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    layers: Any,
    tokens: Any,
    tp: Any,
    *,
    sequence_split: Any = None,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Seconds of the non-matmul ops of one micro-batch on one GPU (all passes): their traffic
    (eager op by op, or fused; :func:`training_op_bytes`) at the achievable bandwidth, each kind
    and pass slowed by what its kernels were measured to lose against their bytes
    (``model.training_elementwise``), never below one kernel floor (``model.small_op_s``) each.

    Forward once, backward twice the forward's bytes (the gradient of each op reads its saved
    inputs and the incoming gradient, writes its own), the forward once more in checkpointed
    layers.

    The norms, residual adds and residual dropouts (:func:`replicated_op_bytes`) are split over
    ``sequence_split`` GPUs: ``tp`` with sequence parallelism, 1 without (every tensor-parallel
    rank repeats them); None takes ``work``'s ``sp``. The other kinds split over ``tp``."""
    fused = work.fused_kernels
    if sequence_split is None:
        sequence_split = tp if work.parallel.sp else 1
    # Checkpointed layers (full or per-op) re-run their element-wise ops once in backward.
    rerun = 1 / work.recompute_every if work.checkpointed else 0
    weighted = replicated_weighted = 0.0
    op_bytes = training_op_bytes(spec, work, fused=fused)
    whole = replicated_op_bytes(spec, work, fused=fused, op_bytes=op_bytes)
    for kind, nbytes in op_bytes.items():
        kernel_class = work.rope_kernels if kind == "rope" else work.kernels
        if kind == "norm" and kernel_class == "eager" and one_kernel_norm(spec):
            # aten::native_layer_norm is one hand-written kernel: measured as fused norms are.
            kernel_class = "fused"
        forward, backward = model.training_elementwise.of(kind, kernel_class)
        # A dropout's backward moves what its forward did (gradient and mask in, gradient out),
        # as does a pure copy's (token permutation: the reverse copy); the other ops' backward
        # reads their saved inputs and the gradient: twice.
        passes = 1 if kind in ("dropout", "moe_permute") else 2
        weight = forward * (1 + rerun) + passes * backward
        repeated = whole.get(kind, 0.0)
        weighted += (nbytes - repeated) * weight
        replicated_weighted += repeated * weight
    per_gpu = weighted / tp + replicated_weighted / sequence_split
    traffic_s = per_gpu * layers * tokens / bandwidth_bytes_per_s
    per_layer = elementwise_kernels_per_layer(spec, work) + moe_kernels_per_layer(spec, work)
    kernels = per_layer * (3 + rerun) * layers
    return maximum(traffic_s, kernels * model.small_op_s)


def loss_bytes(spec: ModelSpec, work: TrainWork, tokens: int) -> float:
    """Cross-entropy over the vocabulary: the fp32 upcast, log-softmax and their backward read
    and write ``(4b + 28)`` bytes per logit."""
    if not spec.is_decoder:
        return 0.0
    return tokens * spec.vocab_size / work.parallel.tp * (4 * work.tensor_bytes + 28)


#: torch.optim's multi-tensor AdamW (``_multi_tensor_adam``, decoupled weight decay, no amsgrad,
#: not capturable), pass by pass: the tensors each ``_foreach_`` kernel reads and writes, as
#: ``p`` (parameter), ``g`` (gradient), ``m``, ``v`` (moments) and ``d`` (the denominator it
#: allocates). pytorch/pytorch torch/optim/adam.py at v2.13.0 (git cf30153c): ``_foreach_mul_(p,
#: 1 - lr*wd)``, ``_foreach_lerp_(m, g, 1 - beta1)``, ``_foreach_mul_(v, beta2)``,
#: ``_foreach_addcmul_(v, g, g, 1 - beta2)``, ``d = _foreach_sqrt(v)``, ``_foreach_div_(d,
#: bias_correction2_sqrt)``, ``_foreach_add_(d, eps)``, ``_foreach_addcdiv_(p, m, d, step_size)``.
FOREACH_ADAMW_PASSES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("p",), ("p",)),
    (("m", "g"), ("m",)),
    (("v",), ("v",)),
    (("v", "g"), ("v",)),
    (("v",), ("d",)),
    (("d",), ("d",)),
    (("d",), ("d",)),
    (("p", "m", "d"), ("p",)),
)


def foreach_adamw_bytes(param: int, grad: int, state: int) -> int:
    """Bytes per parameter of :data:`FOREACH_ADAMW_PASSES` with ``param``-, ``grad``- and
    ``state``-byte elements (the denominator has the second moment's width): ``4p + 14s + 2g``;
    ``addcmul(v, g, g)`` reads the gradient once from memory though it names it twice."""
    width = {"p": param, "g": grad, "m": state, "v": state, "d": state}
    return sum(width[t] for reads, writes in FOREACH_ADAMW_PASSES for t in (*reads, *writes))


def optimizer_step_bytes(work: TrainWork, trainable: float) -> float:
    """Memory traffic of one optimizer step over ``trainable`` parameters on this GPU.

    Fused AdamW (``work.optimizer_impl == "fused"``: torch ``fused=True``, Apex/Transformer
    Engine/DeepSpeed FusedAdam, and DeepSpeed's CPU Adam when the optimizer is offloaded) reads
    the gradient, parameter and both moments once and writes them back: in mixed precision ``b``
    (grad) + 3 x 4 read and 3 x 4 + ``b`` written (fp32 master, moments, then the dtype copy);
    in pure precision ``7b``.

    torch.optim's foreach AdamW (``"foreach"``, its CUDA default when neither ``fused`` nor
    ``foreach`` is given: torch/optim/adam.py ``adam()`` calls ``_default_to_fused_or_foreach(...,
    use_fused=False)``) runs the eight ``_foreach_`` kernels of :data:`FOREACH_ADAMW_PASSES`,
    each over whole state tensors: ``4p + 14s + 2g`` (:func:`foreach_adamw_bytes`). Mixed
    precision: every tensor fp32, the gradient too (autograd gives a parameter a gradient of
    its own dtype, and ``_group_tensors_by_device_and_dtype`` groups them by it), 80 bytes, then
    one cast of the fp32 parameter to the compute dtype, ``4 + b``: ``84 + b`` (86 with bf16,
    3.1x the fused 28). Pure precision ``20b`` (2.9x ``7b``). The per-parameter for-loop
    (``foreach=False``) moves the same bytes in eight kernels per tensor.

    Only AdamW has a foreach count; one state (SGD momentum, Lion) saves a third of the fused
    count; 8-bit and factored optimizers are single fused kernels.
    """
    b = work.tensor_bytes
    mixed = work.precision == "mixed" and not work.fp32_storage
    per_param = float(2 * b + 24) if mixed else float(7 * b)
    if work.optimizer in ("sgd",):
        per_param = float(3 * b)
    elif work.optimizer in ("sgd_momentum", "lion"):
        per_param *= 2 / 3
    elif work.optimizer in ("adamw8bit", "paged_adamw8bit", "adafactor"):
        per_param = float(3 * b + 4)
    elif work.optimizer_impl == "foreach" and not work.offload_optimizer:
        per_param = float(
            foreach_adamw_bytes(4, 4, 4) + 4 + b if mixed else foreach_adamw_bytes(b, b, b)
        )
    return trainable * per_param
