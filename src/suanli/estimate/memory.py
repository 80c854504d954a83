"""Memory per GPU for training and fine-tuning: a breakdown that explains itself.

Pure functions over a :class:`ModelSpec` and a workload; no torch, no I/O. Every line of the
breakdown carries its bytes, formula and source; ``assumptions`` lists what was taken as given.
Formulas and sources are collected in docs/memory.md; serving's breakdown is
:mod:`suanli.estimate.inference_memory`.
"""

from __future__ import annotations

import math

from suanli.catalog.formats import get_format
from suanli.estimate.activations import Term, layer_terms, model_terms
from suanli.estimate.breakdown import Line, MemoryBreakdown, assemble, runtime_overhead
from suanli.estimate.checkpointing import OP_POLICY
from suanli.estimate.pipeline import SRC_DUALPIPE
from suanli.estimate.pipeline import in_flight as micro_batches_in_flight
from suanli.estimate.shapes import linear_shapes
from suanli.estimate.sizes import (
    ParamSplit,
    base_weight_bytes,
    grads_replace_activations,
    largest_tensor_params,
    layer_params,
    lora_adapter_params,
    param_split,
    sharded_params,
    zero_bucket_bytes,
)
from suanli.estimate.train_activations import (
    SRC_FUSED,
    SRC_KERNEL_CE,
    SRC_OFFLOAD,
    activation_settings,
    backward_transient_bytes_per_token,
    checkpoint_bytes_per_token,
    edge_drop,
    first_dense_layer,
    fused_loss_extra_bytes_per_token,
    layers_saved,
    logits_bytes_per_token,
    logits_text,
    offload_split,
    selective_drop,
)
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.params import count_params
from suanli.models.spec import ModelSpec

SRC_ZERO = "Rajbhandari et al. 2019, ZeRO (arXiv:1910.02054) §3-5"
SRC_KORTHIKANTI = "Korthikanti et al. 2022 (arXiv:2205.05198) §4"
SRC_AUTOGRAD = N_("PyTorch autograd saved tensors, checked against transformers (tests/estimate)")
SRC_ADAM8 = "Dettmers et al. 2021, 8-bit optimizers (arXiv:2110.02861): block-wise, 2048/block"
SRC_ADAFACTOR = "Shazeer & Stern 2018, Adafactor (arXiv:1804.04235): factored second moment"
SRC_LORA = "Hu et al. 2021, LoRA (arXiv:2106.09685): r·(d_in + d_out) per adapted matrix"
SRC_QLORA = "Dettmers et al. 2023, QLoRA (arXiv:2305.14314) §3: NF4 + double quantization"
SRC_DS_BUCKETS = (
    "deepspeedai/DeepSpeed deepspeed/runtime/zero/config.py (reduce_bucket_size, "
    "allgather_bucket_size = 5e8; overlap_comm on for stage 3); huggingface/transformers "
    "docs/source/en/deepspeed.md ('4.5x ... 5e8 ... requires 9GB')"
)
SRC_TE_CACHE = (
    "NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py: "
    "get_weight_workspace(cache_name='weight') with row-wise and column-wise usage; "
    "Megatron-LM passes is_first_microbatch"
)
SRC_SET_TO_NONE = N_(
    "torch.optim.Optimizer.zero_grad(set_to_none=True), the default since PyTorch 2.0: no "
    "gradient tensor exists until backward writes it"
)


# --- optimizer -------------------------------------------------------------------------------


def optimizer_bytes_per_param(optimizer: str, state_bytes: int) -> tuple[float, str, str]:
    """Bytes of optimizer state per trainable parameter, with formula and source."""
    if optimizer == "adamw":
        return (
            2 * state_bytes,
            N_("2 moments x {bytes} B").format(bytes=state_bytes),
            "Loshchilov & Hutter, AdamW",
        )
    if optimizer in ("adamw8bit", "paged_adamw8bit"):
        return 2 * (1 + 4 / 2048), N_("2 moments x (1 B + 4 B absmax / 2048)"), SRC_ADAM8
    if optimizer == "sgd":
        return 0.0, N_("no state"), "torch.optim.SGD (momentum=0)"
    if optimizer in ("sgd_momentum", "lion"):
        name = (
            N_("momentum")
            if optimizer == "sgd_momentum"
            else N_("Lion momentum (Chen et al. 2023)")
        )
        return float(state_bytes), N_("1 state x {bytes} B").format(bytes=state_bytes), name
    if optimizer == "adafactor":
        return 0.0, N_("factored: see the Adafactor line"), SRC_ADAFACTOR
    raise ValueError(N_("unknown optimizer {optimizer!r}").format(optimizer=optimizer))


def adafactor_state_elements(spec: ModelSpec, trainable_fraction: float = 1.0) -> float:
    """Adafactor keeps a row and a column accumulator per matrix (no first moment by default)."""
    total = 0.0
    for shape in linear_shapes(spec):
        total += (shape.n_in + shape.n_out) * shape.count
    counts = count_params(spec).by_component
    total += 2 * spec.vocab_size + 2 * spec.hidden_size  # embedding and LM head matrices
    total += counts["norms"]  # vectors keep a full second moment
    return total * trainable_fraction


# --- training --------------------------------------------------------------------------------


def _sharded(term: Term, tp: int, sp: bool) -> float:
    if term.shardable == "tp" or (term.shardable == "sp" and sp):
        return term.bytes_per_token / tp
    return term.bytes_per_token


def activation_bytes(spec: ModelSpec, work: TrainWork) -> tuple[list[Line], tuple[Term, ...]]:
    """Saved activations of the busiest pipeline stage for the in-flight micro-batches (on the
    GPU; offloaded bytes are in :func:`offloaded_activation_bytes`)."""
    lines, per_layer, _cpu = _activations(spec, work)
    return lines, per_layer


def offloaded_activation_bytes(spec: ModelSpec, work: TrainWork) -> float:
    """Activation bytes that wait in CPU memory (``activation_offload``), per GPU and step."""
    return _activations(spec, work)[2]


def _activations(spec: ModelSpec, work: TrainWork) -> tuple[list[Line], tuple[Term, ...], float]:
    par = work.parallel
    st = activation_settings(spec, work)
    tokens = work.batch * work.seq
    layers = math.ceil(spec.num_layers / par.pp)
    lines: list[Line] = []
    first_layer = layer_terms(spec, st, spec.moe_layers[0] if spec.moe_layers else 0)
    # The first stage holds layers 0..layers-1: group them into dense and MoE layers.
    n_moe = sum(1 for i in spec.moe_layers if i < layers)
    kinds = [
        (layers - n_moe, first_dense_layer(spec)),
        (n_moe, spec.moe_layers[0] if n_moe else -1),
    ]
    drop = selective_drop(work)
    full_total = kept_total = recompute_peak = 0.0
    for count, index in kinds:
        if not count:
            continue
        terms = layer_terms(spec, st, index)
        full = sum(_sharded(t, par.tp, par.sp) for t in terms) * tokens
        recompute_peak = max(recompute_peak, full)
        kept = [t for t in terms if not any(d in t.name for d in drop)]
        full_total += count * full
        kept_total += count * sum(_sharded(t, par.tp, par.sp) for t in kept) * tokens
    ckpt = checkpoint_bytes_per_token(spec, work, par.tp, par.tp if par.sp else 1) * tokens
    saved = layers_saved(work, layers, full_total / layers, kept_total / layers, ckpt)
    if work.checkpointed:
        recompute_peak += backward_transient_bytes_per_token(spec, work, par.tp) * tokens
        full_input = work.recompute == "full"
        if work.recompute_every > 1:
            template = (
                N_(
                    "{layers} layers, every {every}th layer: checkpointed input "
                    "(b·h per token and more)"
                )
                if full_input
                else N_(
                    "{layers} layers, every {every}th layer: checkpointed input and saved op "
                    "outputs (b·h per token and more)"
                )
            )
        else:
            template = (
                N_("{layers} layers, checkpointed input (b·h per token and more)")
                if full_input
                else N_(
                    "{layers} layers, checkpointed input and saved op outputs "
                    "(b·h per token and more)"
                )
            )
        formula_layers = template.format(layers=layers, every=work.recompute_every)
    else:
        recompute_peak = 0.0
        formula_layers = N_(
            "{layers} layers x sum of the per-layer terms (--explain) x tokens"
        ).format(layers=layers)
    # 1F1B: the first stage holds up to pp micro-batches in flight (Narayanan et al. 2021);
    # interleaving adds (pp-1)/(pp·vpp) (Korthikanti et al. 2022, §4.2.3); DualPipe pp + 1
    # (estimate/pipeline.py).
    in_flight = 1.0
    if par.pp > 1:
        in_flight = micro_batches_in_flight(par.pp_schedule, par.pp, par.vpp, work.grad_accum)
    on_gpu, on_cpu = offload_split(work, saved * in_flight, layers * in_flight)
    source = SRC_AUTOGRAD if work.recompute == "none" else SRC_KORTHIKANTI
    if work.recompute == "op":
        source = OP_POLICY
    if in_flight != 1 and on_cpu:
        formula = N_(
            "{formula} x {in_flight:g} micro-batches in flight on the GPU: 2 layers' worth"
        )
    elif in_flight != 1:
        formula = N_("{formula} x {in_flight:g} micro-batches in flight")
    elif on_cpu:
        formula = N_("{formula} on the GPU: 2 layers' worth")
    else:
        formula = ""  # the layers' formula as it is (a sentence, kept whole)
    lines.append(
        Line(
            key="activations",
            label=N_("saved by the layers (the layers in flight; the rest on the CPU)")
            if on_cpu
            else N_("saved by the layers"),
            bytes=on_gpu,
            formula=formula.format(formula=formula_layers, in_flight=in_flight)
            if formula
            else formula_layers,
            source=SRC_OFFLOAD if on_cpu else source,
        )
    )
    if recompute_peak:
        lines.append(
            Line(
                key="activations",
                label=N_("one layer recomputed during backward"),
                bytes=recompute_peak,
                formula=N_(
                    "the largest layer's saved terms + its MLP's gradients in flight "
                    "(3·b·I; fused b·I)"
                ),
                source=SRC_KORTHIKANTI,
            )
        )
    kept_edge = [
        t for t in model_terms(spec, st, work.batch) if not t.name.startswith(edge_drop(work))
    ]
    edge = sum(_sharded(t, par.tp, par.sp) for t in kept_edge) * tokens
    edge += fused_loss_extra_bytes_per_token(spec, work) * tokens
    lines.append(
        Line(
            key="activations",
            label=N_("embeddings, final norm, log-softmax of the loss"),
            bytes=edge,
            formula={
                "fused": N_(
                    "token ids, rotary tables, final norm, the hidden-state gradient (b·h)"
                ),
                "kernel": N_("token ids, rotary tables, final norm, fp32 log-sum-exp and loss"),
            }.get(
                work.loss,
                N_("token ids, rotary tables, final norm, fp32 log-softmax (4·V per token)"),
            ),
            source={"fused": SRC_FUSED, "kernel": SRC_KERNEL_CE}.get(work.loss, SRC_AUTOGRAD),
        )
    )
    return lines, tuple(first_layer), on_cpu


def training_memory(spec: ModelSpec, work: TrainWork) -> MemoryBreakdown:
    """Per-GPU memory of one training step (peak at the start of the backward pass)."""
    par = work.parallel
    b = work.tensor_bytes  # fp8 training holds its tensors in bf16
    stored = work.storage_dtype
    split = param_split(spec, par.tp, par.pp, par.ep)
    assumptions: list[str] = []
    lines: list[Line] = []
    mixed = work.precision == "mixed" and not work.fp32_storage
    state_bytes = 4 if (mixed or work.fp32_storage) else b
    params_cpu = 0.0
    stage_frac = split.layers_on_stage / spec.num_layers

    def kept(stage: int) -> float:  # dense over the ZeRO group, routed experts over edp
        return float(
            sharded_params(spec, work, split.total, stage_frac, par.tp, par.dp, par.zero, stage)
        )

    if work.is_lora:
        trainable, adapter_lines, params_cpu = _lora_params(spec, work, split)
        lines += adapter_lines
    else:
        trainable = split.total
        shard = par.zero_group if par.zero >= 3 else 1
        weights_bytes = kept(3) * b
        lines.append(
            Line(
                key="weights",
                label=(
                    N_("weights ({dtype}) in CPU memory")
                    if work.offload_params
                    else N_("weights ({dtype})")
                ).format(dtype=stored),
                bytes=0.0 if work.offload_params else weights_bytes,
                formula=f"P x {b} B" + (f" / {shard} (ZeRO-3)" if shard > 1 else ""),
                source=SRC_ZERO,
            )
        )
        if work.offload_params:
            params_cpu = weights_bytes
    trainable_bytes = 4 if (work.is_lora and mixed) or work.main_grads_fp32 else b
    if work.is_lora:
        assumptions.append(
            N_(
                "LoRA adapters (rank {rank} on {targets}) are {dtype}; base weights are frozen"
            ).format(
                rank=work.lora_rank,
                targets=", ".join(work.lora_targets),
                dtype="fp32" if mixed else stored,
            )
        )
    if work.fp8_weight_cache_bytes_per_param:
        cache = work.fp8_weight_cache_bytes_per_param
        lines.append(
            Line(
                key="weights",
                label=N_("fp8 copies of the linear weights, kept for the whole step"),
                bytes=split.layer_linear * cache,
                formula=N_("P_linear x {bytes} B (fp8 weight and its transpose)").format(
                    bytes=cache
                ),
                source=SRC_TE_CACHE,
            )
        )
        assumptions.append(
            N_(
                "Transformer Engine's fp8 weight cache: each linear weight is cast once a step "
                "and kept, with its transpose, for every micro-batch"
            )
        )
    # Gradients shard with ZeRO-2 and up; adapters' gradients shard with FSDP too.
    grad_shard = par.zero_group if par.zero >= 2 else 1
    grad_bytes = (trainable / grad_shard if work.is_lora else kept(2)) * trainable_bytes
    grad_formula = N_("P_train x {formula}").format(
        formula=f"{trainable_bytes} B" + (f" / {grad_shard} (ZeRO-2)" if grad_shard > 1 else "")
    )
    if work.optimizer_in_backward:
        # Each gradient is applied and freed as soon as it is ready: the largest one at a time.
        largest = largest_tensor_params(spec, work) / par.tp
        grad_bytes = min(grad_bytes, largest * trainable_bytes)
        grad_formula = N_("largest trainable tensor x {bytes} B (optimizer in backward)").format(
            bytes=trainable_bytes
        )
    lines.append(
        Line(
            key="gradients",
            label={
                (False, False): N_("gradients of trainable parameters"),
                (True, False): N_("gradients of trainable parameters (fp32 main-grad buffer)"),
                (False, True): N_("gradients of trainable parameters in CPU memory"),
                (True, True): N_(
                    "gradients of trainable parameters (fp32 main-grad buffer) in CPU memory"
                ),
            }[(work.main_grads_fp32, work.offload_params)],
            bytes=0.0 if work.offload_params else grad_bytes,
            formula=grad_formula,
            source=SRC_ZERO,
        )
    )
    if work.offload_params:
        params_cpu += grad_bytes
        grad_bytes = 0.0
    opt_shard = par.zero_group if par.zero >= 1 else 1
    # The states' parameters before the ZeRO-1 division below (the experts' own group applied).
    states = trainable if work.is_lora else kept(1) * opt_shard
    per_param, formula, source = optimizer_bytes_per_param(work.optimizer, state_bytes)
    if work.optimizer == "adafactor":
        frac = trainable / max(split.total, 1)
        elems = adafactor_state_elements(spec, frac) / (par.tp * par.pp)
        opt = elems * 4
        formula = N_("(rows + cols) per matrix x 4 B")
    else:
        opt = states * per_param
    master = states * 4 if (mixed and not work.is_lora) else 0.0
    on_cpu = work.offload_optimizer
    where = "CPU" if on_cpu else "GPU"
    if master:
        lines.append(
            Line(
                key="master_weights",
                label=N_("fp32 master weights ({where})").format(where=where),
                bytes=0.0 if on_cpu else master / opt_shard,
                formula="P x 4 B" + (f" / {opt_shard} (ZeRO-1)" if opt_shard > 1 else ""),
                source=SRC_ZERO,
            )
        )
    lines.append(
        Line(
            key="optimizer",
            label=N_("{optimizer} states ({where})").format(optimizer=work.optimizer, where=where),
            bytes=0.0 if on_cpu else opt / opt_shard,
            formula=(
                N_("P_train x {formula} / {shard} (ZeRO-1)")
                if opt_shard > 1
                else N_("P_train x {formula}")
            ).format(formula=formula, shard=opt_shard),
            source=source,
        )
    )
    if par.pp_schedule == "dualpipe":
        lines += _second_copy(spec, work, lines)
    cpu = (opt + master) / opt_shard if on_cpu else 0.0
    cpu += params_cpu
    cpu += offloaded_activation_bytes(spec, work)
    if work.activation_offload:
        assumptions.append(N_("saved activations are offloaded to CPU memory between passes"))
    if on_cpu:
        assumptions.append(N_("optimizer states and master weights are offloaded to CPU memory"))
    if work.optimizer == "paged_adamw8bit":
        assumptions.append(
            N_("paged optimizer: states can spill to CPU under pressure (bitsandbytes)")
        )
    if (par.zero >= 3 or work.offload_params) and not work.is_lora:
        gather = 2 * layer_params(spec, par.ep) * b / par.tp
        lines.append(
            Line(
                key="weights",
                label=N_("ZeRO-3 all-gathered layer (current + prefetch)"),
                bytes=gather,
                formula=N_("2 x params of one layer x b"),
                source=SRC_ZERO,
            )
        )

    buckets = zero_bucket_bytes(work, split.total)
    if buckets:
        lines.append(
            Line(
                key="overhead",
                label=N_("DeepSpeed ZeRO communication buckets"),
                bytes=buckets,
                formula=N_(
                    "(reduce + all-gather bucket, 5e8 elements each) x b "
                    "x 4.5 (overlap_comm, stage 3)"
                )
                if par.zero >= 3
                else N_("(reduce + all-gather bucket, 5e8 elements each) x b"),
                source=SRC_DS_BUCKETS,
            )
        )
    act_lines, per_layer = activation_bytes(spec, work)
    lines += act_lines
    tokens = work.batch * work.seq
    if spec.is_decoder:
        label, formula, source = logits_text(work)
        lines.append(
            Line(
                key="logits",
                label=label,
                bytes=tokens * logits_bytes_per_token(spec, work) / par.tp,
                formula=formula,
                source=source,
            )
        )
    if grads_replace_activations(work):
        freed = sum(ln.bytes for ln in lines if ln.key in ("activations", "logits"))
        lines.append(
            Line(
                key="overlap",
                label=N_(
                    "gradients fill as backward frees the activations (one GPU, no accumulation)"
                ),
                bytes=-min(freed, grad_bytes),
                formula=N_(
                    "-min(activations + logits, gradients): peak = max of the two, not their sum"
                ),
                source=SRC_SET_TO_NONE,
            )
        )
    lines += runtime_overhead(lines, work.overheads, par.gpus > 1, assumptions)
    if work.is_lora:
        precision = N_(
            "frozen base in {dtype}; adapters, their gradients and optimizer states "
            "in {adapter_dtype}"
        ).format(dtype=stored, adapter_dtype="fp32" if mixed else stored)
    elif mixed:
        precision = N_(
            "mixed precision: {dtype} weights, fp32 master weights and optimizer states"
        ).format(dtype=stored)
    else:
        precision = N_("pure {dtype}: weights, gradients and optimizer states").format(dtype=stored)
    if work.dtype == "fp8":
        assumptions.append(
            N_(
                "fp8 training under Transformer Engine: the linear layers keep their inputs for "
                "the weight gradient in fp8; weights, gradients and the other saved activations "
                "are held in bf16"
            )
            if activation_settings(spec, work).fp8_inputs
            else N_(
                "fp8 training casts only the linear layers' operands to fp8: weights, gradients "
                "and saved activations are held in bf16 (an upper bound for the activations, "
                "as Transformer Engine saves some linear inputs in fp8)"
            )
        )
    assumptions += [
        precision,
        N_("attention kernel: {attention}; recomputation: {recompute}").format(
            attention=work.attention, recompute=work.recompute
        ),
        N_("dropout {dropout:g}").format(dropout=activation_settings(spec, work).dropout),
    ]
    return assemble(lines, assumptions, per_layer=per_layer, cpu_bytes=cpu, tokens=tokens)


def _second_copy(spec: ModelSpec, work: TrainWork, lines: list[Line]) -> list[Line]:
    """DualPipe's second stage on each rank: the parameter lines so far once more, key by key
    (weights and adapters, master weights, gradients, optimizer states), less the one gathered
    layer that FSDP shares between the stages (DeepSeek-V3 report, Table 2: 2x parameters)."""
    par = work.parallel
    labels = {
        "weights": N_("DualPipe's second stage: its weights"),
        "master_weights": N_("DualPipe's second stage: its fp32 master weights"),
        "gradients": N_("DualPipe's second stage: its gradients"),
        "optimizer": N_("DualPipe's second stage: its optimizer states"),
    }
    held = {key: sum(ln.bytes for ln in lines if ln.key == key) for key in labels}
    if work.is_lora and (par.zero >= 3 or work.offload_params):
        held["weights"] -= 2 * layer_params(spec, par.ep) * work.tensor_bytes / par.tp
    return [
        Line(
            key=key,
            label=label,
            bytes=held[key],
            formula=N_("2 x parameters per GPU (stages i and pp-1-i)"),
            source=SRC_DUALPIPE,
        )
        for key, label in labels.items()
        if held[key]
    ]


def _lora_params(
    spec: ModelSpec, work: TrainWork, split: ParamSplit
) -> tuple[float, list[Line], float]:
    """Frozen base (bf16, or NF4 for QLoRA) plus the adapters; FSDP (ZeRO-3) shards both, and
    FSDP's CPU offload (``offload_params``) keeps both in CPU memory, one layer on the GPU at a
    time. Returns the adapters' parameters, the lines and the bytes in CPU memory."""
    par = work.parallel
    shard = par.zero_group if par.zero >= 3 else 1
    note = f" / {shard} (FSDP)" if shard > 1 else ""
    offload = work.offload_params
    lines: list[Line] = []
    base = base_weight_bytes(work, split.layer_linear, split.other)
    if work.task == "qlora":
        bits = get_format("nf4-dq").bits_per_weight
        label = (
            N_("frozen base in CPU memory: NF4 linears + bf16 embeddings and norms")
            if offload
            else N_("frozen base: NF4 linears + bf16 embeddings and norms")
        )
        formula, source = f"P_linear x {bits:.3f} bits / 8 + P_other x 2 B" + note, SRC_QLORA
    else:
        label = (
            N_("frozen base weights ({dtype}) in CPU memory")
            if offload
            else N_("frozen base weights ({dtype})")
        ).format(dtype=work.storage_dtype)
        formula, source = f"P x {work.tensor_bytes} B" + note, SRC_LORA
    lines.append(
        Line(
            key="weights",
            label=label,
            bytes=0.0 if offload else base / shard,
            formula=formula,
            source=source,
        )
    )
    stage = split.layers_on_stage / spec.num_layers
    adapters = lora_adapter_params(spec, work) * stage / par.tp
    mixed = work.precision == "mixed" and not work.fp32_storage
    adapter_bytes = 4 if mixed else work.tensor_bytes
    lines.append(
        Line(
            key="weights",
            label=N_("LoRA adapters in CPU memory") if offload else N_("LoRA adapters"),
            bytes=0.0 if offload else adapters * adapter_bytes / shard,
            formula=(
                N_("r x (d_in + d_out) per adapted matrix / {shard} (FSDP)")
                if shard > 1
                else N_("r x (d_in + d_out) per adapted matrix")
            ).format(shard=shard),
            source=SRC_LORA,
        )
    )
    if shard > 1 or offload:
        gather = 2 * layer_params(spec, par.ep) * work.tensor_bytes / par.tp
        lines.append(
            Line(
                key="weights",
                label=N_("FSDP all-gathered layer (current + prefetch)"),
                bytes=gather,
                formula=N_("2 x params of one layer x b"),
                source=SRC_ZERO,
            )
        )
    cpu = (base + adapters * adapter_bytes) / shard if offload else 0.0
    return adapters, lines, cpu
