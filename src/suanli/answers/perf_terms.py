"""Every time term of a speed answer with its efficiency, where that efficiency comes from, and
the formula behind it (``suanli perf --explain``, the ``terms`` of the perf documents)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from suanli.catalog.formats import get_format
from suanli.estimate.casts import FP8_CAST_BYTES
from suanli.estimate.comm import OneShot
from suanli.estimate.inference import InferPerf
from suanli.estimate.perf import Device, TrainPerf
from suanli.estimate.pipeline import DUALPIPE_HIDDEN, bubble_formula
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_, join

GEMM_FORMULA = N_(
    "sum over the linear layers of (t_c^p + t_m^p)^(1/p) + launch with t_c = 2 M' N' K / (peak "
    "x e_c), t_m = operand bytes / (bandwidth x e_m), p = {p} (p = inf: max(t_c, t_m)), M' N' "
    "padded to the 128 tile (16 below one tile); forward, input gradient, weight gradient "
    "(suanli/estimate/kernels.py); fused attention at the FlashAttention-2/3 rates measured for "
    "the sequence length and head dim (catalog/data/attention.toml), eager attention at e_c"
)

COLLECTIVE_FORMULA = {
    "tensor_parallel": N_(
        "4 all-reduces per layer (6 with full recompute), ring or tree, alpha-beta "
        "(estimate/comm.py)"
    ),
    "data_parallel": N_(
        "gradient all-reduce (ZeRO 2: reduce-scatter + all-gather; FSDP: all-gathers "
        "per pass, a reduce-scatter per micro-batch, one per step with a pipeline) less what "
        "overlaps the backward pass; FSDP never hides its root unit (embeddings, LM head): "
        "gathered before each forward and backward, reduced after it"
    ),
    "pipeline_p2p": N_("2 sends of the activations per micro-batch over one NIC or NVLink"),
    "expert_all_to_all": N_(
        "dispatch and combine, forward and backward, per MoE layer: T·k·h·b/tp bytes a GPU, "
        "over NVLink inside a node; across nodes the (ep − m)/ep bound for other nodes leave "
        "through the GPU's own share of the NICs (estimate/expert_parallel.py)"
    ),
}
#: How a serving engine launches the input projections (``InferWork.projections``), as the
#: decode GEMM term says it.
PROJECTION_NAMES = {
    "fused": N_("QKV and gate/up fused"),
    "qkv": N_("QKV fused, gate and up apart"),
    "separate": N_("one GEMM per weight"),
}


@dataclass(frozen=True, kw_only=True)
class TimeTerm:
    """One term of the time: seconds, the efficiency used and where it comes from."""

    term: str
    seconds: float
    efficiency: float | None
    """Share of the datasheet rate (peak FLOP/s, bandwidth or link rate) the term runs at."""
    source: str
    formula: str


def _gemm_formula(device: Device) -> str:
    """:data:`GEMM_FORMULA` with the card's blend ``p`` (``inf``: the plain roofline)."""
    blend = device.gemm_model.blend
    return GEMM_FORMULA.format(p=f"{blend:g}" if blend > 0 else "inf")


def _pair(forward_backward: tuple[float, float]) -> str:
    """A (forward, backward) slowdown as ``1.74x / 2.19x``."""
    forward, backward = forward_backward
    return f"{forward:.2f}x / {backward:.2f}x"


def _link_source(
    device: Device, group: int, stride: int, all_reduce: bool = False
) -> tuple[float, str]:
    """The link a group's collective crosses, as efficiency and source; ``all_reduce``: the term
    runs all-reduces, so the link's in-switch NVLS all-reduce is named where it applies."""
    link = device.network.link_for(group, stride)
    source = N_(
        "{link}: {rate:,.0f} GB/s, {latency:.1f} us per step (catalog/data/interconnect.toml)"
    ).format(
        link=link.name,
        rate=link.bandwidth_bytes_per_s / 1e9,
        latency=link.latency_s * 1e6,
    )
    if link.per_peer_bytes_per_s > 0 and group > 1:
        source = N_(
            "{source}; a mesh without a switch: {group} GPUs use {peers} peer link(s) of "
            "{per_peer:,.0f} GB/s each"
        ).format(
            source=source,
            group=group,
            peers=round(link.bandwidth_bytes_per_s / link.per_peer_bytes_per_s),
            per_peer=link.per_peer_bytes_per_s / 1e9,
        )
    nvls = link.nvls
    if all_reduce and nvls is not None and group >= nvls.min_ranks:
        source = N_(
            "{source}; an all-reduce takes NCCL's in-switch NVLS where faster: {base:.0f} us + "
            "bytes / {rate:.0f} GB/s ({fit})"
        ).format(
            source=source,
            base=nvls.base_s * 1e6,
            rate=nvls.bytes_per_s / 1e9,
            fit=nvls.source,
        )
    if not all_reduce and link.gather_share != 1:
        # All-gathers and reduce-scatters run at their own measured share of this link.
        gather = link.efficiency * link.gather_share
        source = N_(
            "{source}; all-gathers and reduce-scatters reach {gather:.1%} of it, all-reduces "
            "{reduce:.1%} (measured apart)"
        ).format(source=source, gather=gather, reduce=link.efficiency)
        return gather, source
    return link.efficiency, source


def train_terms(work: TrainWork, device: Device, result: TrainPerf) -> tuple[TimeTerm, ...]:
    """The terms of a training step time."""
    gemm = device.gemm_model
    slow, kernels = gemm.training_elementwise, work.kernels
    par = work.parallel
    formula = _gemm_formula(device)
    if work.dtype == "fp8":
        formula = N_(
            "{formula} ; fp8: linear layers only, with operand casts ({scaling} scaling: "
            "{cast_bytes:g} bytes moved per element cast); attention, element-wise ops, loss, "
            "optimizer and collectives stay in bf16 (Transformer Engine, torchao float8)"
        ).format(
            formula=formula, scaling=work.fp8_scaling, cast_bytes=FP8_CAST_BYTES[work.fp8_scaling]
        )
        if work.fp8_weight_cache and work.grad_accum > 1:
            formula = N_(
                "{formula} ; the weights are cast once a step and reused by its {micro} "
                "micro-batches (Transformer Engine's fp8 weight cache, set_is_first_microbatch)"
            ).format(formula=formula, micro=work.grad_accum)
    if work.task == "qlora":
        formula = N_("{formula} ; NF4 weights dequantized before each GEMM").format(formula=formula)
    if work.attention == "sdpa" and device.sdpa_attention is not None:
        # PyTorch's SDPA defaults to its FlashAttention-2 backend even where a faster kernel
        # exists (FlashAttention-3, cuDNN on Hopper): say which rates were used.
        formula = N_(
            "{formula} ; attention by PyTorch SDPA: its FlashAttention-2 backend ({source}), "
            "not the generation's fastest kernel (cuDNN attention is opt-in; "
            "pytorch/pytorch#142132)"
        ).format(formula=formula, source=device.sdpa_attention_source)
    if work.attention == "triton" and device.triton_attention is not None:
        formula = N_(
            "{formula} ; attention by the 2023 FlashAttention kernel in Triton ({source})"
        ).format(formula=formula, source=device.triton_attention_source)
    terms = [
        TimeTerm(
            term=N_("compute (GEMMs and attention)"),
            seconds=result.breakdown_s["compute"],
            efficiency=gemm.compute_efficiency,
            source=gemm.source or device.efficiency_source,
            formula=formula,
        ),
        TimeTerm(
            term=N_("memory (element-wise ops, loss, optimizer)"),
            seconds=result.breakdown_s["memory"],
            efficiency=device.memory_efficiency,
            source=device.memory_source or device.efficiency_source,
            formula=N_(
                "max(traffic x slowdown / achievable bandwidth, kernels x {floor:.1f} us) per "
                "pass ({kernels} kernels, estimate/elementwise.py; slowdowns measured on "
                "Liger-Kernel's benchmarks, forward / backward: norm {norm}, rotary {rope}, "
                "activation {act}); optimizer step bytes / bandwidth"
            ).format(
                floor=gemm.small_op_s * 1e6,
                kernels=work.kernels,
                norm=_pair(slow.of("norm", kernels)),
                rope=_pair(slow.of("rope", work.rope_kernels)),
                act=_pair(slow.of("activation", kernels)),
            ),
        ),
    ]
    if work.dtype == "fp8":
        memory = terms[1]
        terms[1] = replace(
            memory,
            formula=N_(
                "{formula} ; fp8 training: these ops read and write bf16, as a bf16 run's do"
            ).format(formula=memory.formula),
        )
    if work.rope_kernels != work.kernels:
        memory = terms[1]
        terms[1] = replace(
            memory,
            formula=N_(
                "{formula} ; complex rotary (--rope complex): torch.compile cannot generate code "
                "for complex operators, so it runs as eager kernels"
            ).format(formula=memory.formula),
        )
    groups = {
        "tensor_parallel": (par.tp, 1),
        "data_parallel": (par.dp, par.tp * par.pp),
        "pipeline_p2p": (par.pp, par.tp),
        "expert_all_to_all": (par.ep, par.expert_tp),
    }
    # Which terms run all-reduces (estimate/perf.py): tensor parallelism without sequence
    # parallelism, and data parallelism below ZeRO 2 (reduce-scatter and all-gather above).
    all_reduces = {"tensor_parallel": not par.sp, "data_parallel": par.zero < 2}
    for kind, seconds in result.comm_detail_s.items():
        if kind == "straggler_wait":
            terms.append(_straggler_term(seconds, par.gpus))
            continue
        group, stride = groups.get(kind, (2, 1))
        efficiency, source = _link_source(device, group, stride, all_reduces.get(kind, False))
        formula = COLLECTIVE_FORMULA.get(kind, N_("alpha-beta (estimate/comm.py)"))
        if par.pp_schedule == "dualpipe" and kind in ("pipeline_p2p", "expert_all_to_all"):
            formula = N_("{formula}; exposed: {hidden}").format(
                formula=formula, hidden=DUALPIPE_HIDDEN
            )
        terms.append(
            TimeTerm(
                term=N_("communication: {kind}").format(kind=kind),
                seconds=seconds,
                efficiency=efficiency,
                source=source,
                formula=formula,
            )
        )
    if result.breakdown_s.get("bubble"):
        bubble_formula_text, bubble_source = bubble_formula(par.pp_schedule)
        terms.append(
            TimeTerm(
                term=N_("pipeline bubble"),
                seconds=result.breakdown_s["bubble"],
                efficiency=None,
                source=bubble_source,
                formula=bubble_formula_text,
            )
        )
    return tuple(terms)


def _straggler_term(seconds: float, gpus: int) -> TimeTerm:
    """The explain line of the wait for the job's slowest GPU (estimate/stragglers.py)."""
    from suanli.estimate.stragglers import SOURCE, slowest_share

    return TimeTerm(
        term=N_("communication: {kind}").format(kind="straggler_wait"),
        seconds=seconds,
        efficiency=None,
        source=SOURCE,
        formula=N_(
            "busy time x {share:.1%}: the expected slowest of {gpus} GPUs whose speeds spread "
            "with sigma 1.5% around the median card, capped at 4% (outliers drained)"
        ).format(share=slowest_share(gpus), gpus=gpus),
    )


def _custom_all_reduce_note(shot: OneShot) -> str:
    """The explain line of the serving engines' custom all-reduce: its formula and source."""
    values = {
        "max_kib": shot.max_bytes // 1024,
        "base": shot.base_s * 1e6,
        "step": shot.step_s * 1e6,
        "rate": shot.bytes_per_s / 1e9,
        "source": shot.source,
    }
    if shot.per_peer:
        return N_(
            "each all-reduce of at most {max_kib:,} KiB the faster of NCCL and the serving "
            "engines' custom all-reduce, whose bandwidth grows with the peers of the mesh: "
            "{base:.2f} + {step:.2f} x log2(tp) us + bytes / (tp x {rate:.1f} GB/s) ({source})"
        ).format(**values)
    return N_(
        "each all-reduce of at most {max_kib:,} KiB the faster of NCCL and the serving "
        "engines' one-shot kernel: {base:.2f} + {step:.2f} x log2(tp) us + (tp - 1) / "
        "tp x bytes / {rate:.1f} GB/s ({source})"
    ).format(**values)


def _prefill_formula(device: Device) -> str:
    """The prefill term's formula: the GEMMs, and the attention kernel the engine was measured to
    run where it was."""
    formula = N_("{formula}; never below the roofline of the whole pass").format(
        formula=_gemm_formula(device)
    )
    measured = device.gemm_model.prefill_attention
    if measured is None:
        return formula
    return N_(
        "{formula}; instead of those rates, attention per layer as the serving engine's prefill "
        "kernel was measured: "
        "{floor:.1f} us + FLOPs / ({rate:.0f} TFLOP/s x s / (s + {half:.0f})) for s prompt "
        "tokens ({source})"
    ).format(
        formula=formula,
        floor=measured.floor_s * 1e6,
        rate=measured.rate_flops / 1e12,
        half=measured.half_tokens,
        source=measured.source,
    )


def _decode_gemm_formula(work: InferWork, device: Device) -> str:
    """The decode GEMMs' formula, with the activation cast of fp8 (W8A8) weights."""
    gemm = device.gemm_model
    formula = N_(
        "per GEMM the engine launches ({projections}): (t_c^p + t_m^p)^(1/p) + launch, "
        "t_m = weight bytes in {weights} / (bandwidth x e_m), p = {p}; MoE: the experts "
        "the batch touches"
    ).format(
        projections=PROJECTION_NAMES[work.projections],
        weights=work.weight_format,
        p=f"{gemm.blend:g}" if gemm.blend > 0 else "inf",
    )
    if get_format(work.weight_format).gemm_dtype != "fp8":
        return formula
    return N_(
        "{formula}; fp8 (W8A8): each GEMM first quantizes its input, an amax pass and a cast of "
        "{cast:g} bytes an element, at least two element-wise kernels (the cost the kernel "
        "benchmark adds to score measured fp8 Linear layers)"
    ).format(formula=formula, cast=FP8_CAST_BYTES["dynamic"])


def infer_terms(
    work: InferWork, device: Device, result: InferPerf, average_context: int
) -> tuple[TimeTerm, ...]:
    """The terms of TTFT and TPOT (``average_context``: the KV length of a mean decode step)."""
    gemm = device.gemm_model
    b = result.breakdown_s
    if device.decode_attention is not None:
        kv_efficiency: float | None = device.decode_attention(
            work.batch, average_context, result.kv_token_bytes
        )
        kv_source = N_(
            "paged decode attention measured by FlashInfer (blog 2024-02-02) and Flash-Decoding, "
            "catalog/data/decode_attention.toml"
        )
    else:
        kv_efficiency, kv_source = gemm.memory_efficiency, gemm.source or device.efficiency_source
    ew = gemm.elementwise_efficiency()
    terms = [
        TimeTerm(
            term=N_("prefill (TTFT), kernel by kernel"),
            seconds=b.get("prefill_kernels", 0.0),
            efficiency=gemm.compute_efficiency,
            source=gemm.source or device.efficiency_source,
            formula=_prefill_formula(device),
        ),
        TimeTerm(
            term=N_("decode: GEMMs (weights streamed)"),
            seconds=b.get("decode_gemms", 0.0),
            efficiency=gemm.memory_efficiency,
            source=gemm.source or device.efficiency_source,
            formula=_decode_gemm_formula(work, device),
        ),
        TimeTerm(
            term=N_("decode: attention (KV cache read)"),
            seconds=b.get("decode_attention", 0.0),
            efficiency=kv_efficiency,
            source=kv_source,
            formula=N_(
                "KV bytes of the batch at the average context / (peak bandwidth x the measured "
                "utilization of paged decode attention at this batch, read at the context that "
                "streams as many bytes per sequence in the measured kernel's head layout)"
            ),
        ),
        TimeTerm(
            term=N_("decode: element-wise kernels"),
            seconds=b.get("decode_small_ops", 0.0),
            efficiency=None,
            source=N_("{floor:.1f} us per kernel, measured small ops ({source})").format(
                floor=gemm.small_op_s * 1e6, source=gemm.source
            ),
            formula=(
                N_(
                    "4 kernels per layer (each residual add fused into the next norm, rotary, "
                    "activation), each max(floor, bytes / (peak bandwidth x its kind's measured "
                    "share: norm {norm:.0%}, rotary {rope:.0%}, activation {act:.0%}, add "
                    "{add:.0%}))"
                )
                if work.fused_kernels
                else N_(
                    "6 kernels per layer (norms, rotary, activation, adds), each max(floor, "
                    "bytes / (peak bandwidth x its kind's measured share: norm {norm:.0%}, "
                    "rotary {rope:.0%}, activation {act:.0%}, add {add:.0%}))"
                )
            ).format(norm=ew.norm, rope=ew.rope, act=ew.activation, add=ew.add),
        ),
    ]
    fmt = get_format(work.weight_format)
    if fmt.dequant_efficiency < 1:
        decode = terms[1]  # the decode GEMMs
        terms[1] = replace(
            decode,
            formula=N_(
                "{formula} ; {weights} weights stream at {share:.0%} of the 16-bit rate, the "
                "kernel dequantizing them ({source})"
            ).format(
                formula=decode.formula,
                weights=fmt.id,
                share=fmt.dequant_efficiency,
                source=fmt.dequant_source,
            ),
        )
    if b.get("communication"):
        parts = []
        if work.tp > 1:
            parts.append(N_("2 all-reduces per layer per forward (prefill and each decode step)"))
        if work.pp > 1:
            parts.append(
                N_(
                    "{sends} activation sends per forward between pipeline stages, which run "
                    "in turn (no micro-batch overlap)"
                ).format(sends=work.pp - 1)
            )
        group, stride = (work.tp, 1) if work.tp > 1 else (work.pp, work.tp)
        efficiency, source = _link_source(device, group, stride, all_reduce=work.tp > 1)
        shot = device.network.link_for(group, stride).oneshot if work.tp > 1 else None
        if shot is not None and shot.covers(work.tp):
            parts.append(_custom_all_reduce_note(shot))
        terms.append(
            TimeTerm(
                term=N_("communication: {kind}").format(
                    kind=" + ".join(
                        name
                        for name, on in (
                            ("tensor_parallel", work.tp > 1),
                            ("pipeline", work.pp > 1),
                        )
                        if on
                    )
                ),
                seconds=b["communication"],
                efficiency=efficiency,
                source=source,
                formula=join(parts, N_("; ")),
            )
        )
    if work.prefix_hit:
        prefill = terms[0]  # the prefill, kernel by kernel
        terms[0] = replace(
            prefill,
            formula=N_(
                "{formula} ; prefix cache: {hit:.0%} of each prompt cached, so the linear layers "
                "run on the rest and their attention is (p^2 - c^2) / p^2 of the whole prompt's "
                "(c cached of p tokens; the last token always computed)"
            ).format(formula=prefill.formula, hit=work.prefix_hit),
        )
    if work.spec_tokens:
        terms.append(_speculative_term(b.get("spec_draft", 0.0), work))
    if b.get("decode_cache_copy"):
        terms.append(_cache_copy_term(b["decode_cache_copy"], work, ew.add))
    if b.get("decode_kv_dequant"):
        terms.append(_kv_dequant_term(b["decode_kv_dequant"], device.name, work))
    if b.get("host_dispatch"):
        terms.append(_host_term(b["host_dispatch"]))
    return tuple(terms)


def _speculative_term(draft_s: float, work: InferWork) -> TimeTerm:
    """Speculative decoding: the drafter's time per pass and how many tokens a pass yields."""
    from suanli.estimate.speculative import accepted_tokens

    acceptance = work.spec_acceptance or 0.0
    per_pass = accepted_tokens(work.spec_tokens, acceptance)
    return TimeTerm(
        term=N_("decode: speculative drafter ({method}), per verify pass").format(
            method=work.spec_method
        ),
        seconds=draft_s,
        efficiency=None,
        source=N_(
            "Leviathan, Kalman and Matias, ICML 2023, eq. 1 (tokens a pass yields); EAGLE: Li "
            "et al. 2024, arXiv:2401.15077 (a one-layer draft head); acceptance as given"
        ),
        formula=N_(
            "TPOT = (one pass of {verify} tokens per sequence + the drafter) / {tokens:.2f} "
            "tokens a pass, (1 - a^(k+1)) / (1 - a) with k = {k}, a = {a:g}; ngram drafts on "
            "the CPU (no GPU time), eagle runs a one-layer model of this one per drafted token"
        ).format(
            verify=work.spec_tokens + 1,
            tokens=per_pass,
            k=work.spec_tokens,
            a=acceptance,
        ),
    )


def _kv_dequant_term(seconds: float, gpu_id: str, work: InferWork) -> TimeTerm:
    """The fp8 KV cache's conversion to 16 bits in the engine's decode attention."""
    from suanli.catalog.kv_dequant import SOURCE, fp8_kv_rate

    measured = fp8_kv_rate(gpu_id, work.engine)
    assert measured is not None  # the term exists only where a rate was measured
    return TimeTerm(
        term=N_("decode: fp8 KV cache converted to 16 bits"),
        seconds=seconds,
        efficiency=None,
        source=N_("{engine} {version} ({kernel}) on {gpu}: {source}").format(
            engine=measured.engine,
            version=measured.version,
            kernel=measured.kernel,
            gpu=gpu_id,
            source=SOURCE,
        ),
        formula=N_(
            "KV elements the step reads / {rate:.3g} elements/s (t_fp8 = t_bf16 / 2 + elements / "
            "rate, measured kernel by kernel)"
        ).format(rate=measured.elements_per_s),
    )


def _cache_copy_term(seconds: float, work: InferWork, add_share: float) -> TimeTerm:
    """The KV cache's copies each decode step (transformers' concatenating update, repeated KV
    heads): :mod:`suanli.estimate.kv_traffic`."""
    parts = []
    if work.kv_update == "concat":
        parts.append(
            N_("2 x the cache (torch.cat reads and rewrites every layer's keys and values)")
        )
    if work.gqa == "repeat":
        parts.append(
            N_(
                "(1 + g) x the cache (repeat_kv copies each KV head for its g query heads; the "
                "attention then reads g x the cache)"
            )
        )
    return TimeTerm(
        term=N_("decode: KV cache copies"),
        seconds=seconds,
        efficiency=add_share,
        source=N_(
            "transformers' code (cache_utils.py DynamicLayer.update; repeat_kv), bytes counted "
            "in a real generate() step; streaming at the measured share of the residual add"
        ),
        formula=N_(
            "{parts}, at {share:.0%} of the peak bandwidth, {kernels} kernels a layer each at "
            "least one element-wise floor"
        ).format(parts=join(parts, N_(" + ")), share=add_share, kernels=2 * len(parts)),
    )


def _host_term(seconds: float) -> TimeTerm:
    """The host's floor under each forward pass where Python dispatches every op."""
    from suanli.estimate import host_dispatch as hd

    # The figures both texts quote (each text takes the ones it names).
    figures = {
        "layer_us": hd.LAYER_CPU_S * 1e6,
        "step_us": hd.STEP_CPU_S * 1e6,
        "launch": hd.LAUNCH_EXTRA_S * 1e6,
        "kernel": hd.KERNEL_OP_HOST_S * 1e6,
        "layer": hd.LAYER_KERNEL_OPS,
        "step": hd.STEP_KERNEL_OPS,
    }
    return TimeTerm(
        term=N_("host: Python dispatch per forward pass (a floor under TTFT and TPOT)"),
        seconds=seconds,
        efficiency=None,
        source=N_(
            "transformers' decode step timed on a CPU ({layer_us:.0f} us a layer, {step_us:.0f} us "
            "around the layers; benchmarks/host_dispatch.py, 2026-12-07) plus {launch:.1f} us per "
            "kernel launch (Torch-FL PR #27: {kernel:.0f} us per CUDA op, A100 server)"
        ).format(**figures),
        formula=N_(
            "{layer_us:.0f} us x layers + {step_us:.0f} us + kernel ops x {launch:.1f} us per pass "
            "({layer} kernel ops a layer, 8 more per extra norm, {step} outside the layers; ops "
            "beyond the measured layer cost its average op); each step takes max(GPU time, this)"
        ).format(**figures),
    )
