"""Training memory at scale (issue 41): what Megatron-Core's grouped experts save
for backward, and the one layer FSDP/ZeRO-3 gathers when the experts are split over an
expert-parallel group (docs/memory.md, "MoE under Megatron-Core and expert parallelism")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suanli.estimate.activations import layer_terms
from suanli.estimate.memory import training_memory
from suanli.estimate.sizes import layer_params, param_split
from suanli.estimate.train_activations import activation_settings
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.models.params import count_params
from suanli.models.resolve import load_model

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")


def _experts_term(model: str, saved_tensors: str) -> float:
    spec = load_model(model).spec
    work = TrainWork(task="pretrain", batch=1, seq=4096, saved_tensors=saved_tensors)
    terms = layer_terms(spec, activation_settings(spec, work), spec.moe_layers[0])
    return sum(t.bytes_per_token for t in terms if t.name.startswith("experts:"))


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b"])
def test_megatron_routed_copy_keeps_fc1_in_out_probability_and_fc2_input(model: str) -> None:
    """TEGroupedMLP with the weighted SwiGLU: k·(b·(h + 3I) + 4) per token; transformers keeps
    the activation output and the down output besides: k·b·(4I + 2h)."""
    spec = load_model(model).spec
    assert spec.moe is not None
    k, h, width = spec.moe.experts_per_token, spec.hidden_size, spec.moe.expert.intermediate_size
    assert _experts_term(model, "megatron") == k * (2 * (h + 3 * width) + 4)
    assert _experts_term(model, "hf") == k * 2 * (4 * width + 2 * h)
    assert _experts_term(model, "megatron") < _experts_term(model, "hf")


def test_megatron_qk_norm_keeps_input_and_rstd() -> None:
    """Qwen3's q/k norms under Megatron (TENorm): b·n·d + 4·n each, not transformers' fp32
    input, rsqrt and normalised copy."""
    spec = load_model("qwen3-235b-a22b").spec
    att = spec.attention
    work = TrainWork(task="pretrain", batch=1, seq=4096, saved_tensors="megatron")
    terms = {t.name: t for t in layer_terms(spec, activation_settings(spec, work), 0)}
    q = terms["q_norm: input and rstd (fused kernel)"]
    assert q.bytes_per_token == 2 * att.num_heads * att.head_dim + 4 * att.num_heads


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "deepseek-v3"])
@pytest.mark.parametrize("ep", [1, 8, 64])
def test_zero3_gathers_only_the_local_experts(model: str, ep: int) -> None:
    """Under ZeRO-3 with expert parallelism a GPU gathers its own E/ep experts of a layer, not
    all E: the gathered-layer line is 2·b·(dense + experts/ep)/L, and the vectorized planner
    gives the scalar path's total."""
    spec = load_model(model).spec
    counts = count_params(spec).by_component
    dense = sum(counts[k] for k in ("attention", "mlp", "shared_experts", "router"))
    assert layer_params(spec, ep) == pytest.approx(
        (dense + counts["experts"] / ep) / spec.num_layers
    )
    par = Parallelism(dp=64, ep=ep, zero=3)
    work = TrainWork(task="pretrain", batch=1, seq=4096, recompute="full", parallel=par)
    mem = training_memory(spec, work)
    (gathered,) = [ln for ln in mem.lines if ln.label.startswith("ZeRO-3 all-gathered layer")]
    assert gathered.bytes == pytest.approx(2 * 2 * layer_params(spec, ep))
    if ep > 1:
        assert gathered.bytes < 2 * 2 * layer_params(spec, 1) / 2
    lay = vector.Layouts.of(tp=[1], pp=[1], dp=[64], zero=[3], batch=[1], grad_accum=[1], sp=[0])
    assert float(vector.train_memory(spec, work, lay)[0]) == pytest.approx(
        mem.total_bytes, rel=1e-9
    )


def _layer_bytes(model: str, dtype: str, layer: int = 0) -> float:
    spec = load_model(model).spec
    work = TrainWork(task="pretrain", batch=1, seq=8192, dtype=dtype, saved_tensors="megatron")
    return sum(t.bytes_per_token for t in layer_terms(spec, activation_settings(spec, work), layer))


def test_fp8_linears_keep_their_inputs_in_fp8() -> None:
    """Transformer Engine's fp8 linears keep the QKV, fc1 and fc2 inputs in one byte instead of
    two; the output projection keeps an fp8 copy beside the attention output (bf16)."""
    spec = load_model("llama-3.1-70b").spec
    h, width = spec.hidden_size, spec.mlp.intermediate_size if spec.mlp else 0
    out = spec.attention.num_heads * spec.attention.v_head_dim
    saved = _layer_bytes("llama-3.1-70b", "bf16") - _layer_bytes("llama-3.1-70b", "fp8")
    assert saved == h + h + width - out
    assert saved > 0


def test_fp8_routed_copies_keep_fc1_and_fc2_inputs_in_fp8() -> None:
    spec = load_model("qwen3-30b-a3b").spec
    assert spec.moe is not None
    k, h, width = spec.moe.experts_per_token, spec.hidden_size, spec.moe.expert.intermediate_size
    layer = spec.moe_layers[0]
    terms = {}
    for dtype in ("bf16", "fp8"):
        work = TrainWork(task="pretrain", batch=1, seq=4096, dtype=dtype, saved_tensors="megatron")
        terms[dtype] = sum(
            t.bytes_per_token
            for t in layer_terms(spec, activation_settings(spec, work), layer)
            if t.name.startswith("experts:")
        )
    assert terms["bf16"] - terms["fp8"] == k * (h + width)


def test_fp8_inputs_only_under_transformer_engine() -> None:
    """transformers' modules (torchao's fp8) keep the bf16 count."""
    spec = load_model("llama-3.1-8b").spec
    for dtype in ("bf16", "fp8"):
        work = TrainWork(task="pretrain", batch=1, seq=4096, dtype=dtype)
        assert not activation_settings(spec, work).fp8_inputs
    work = TrainWork(task="pretrain", batch=1, seq=4096, dtype="fp8", saved_tensors="megatron")
    assert activation_settings(spec, work).fp8_inputs


def test_kernel_loss_keeps_logits_and_gradient_in_the_dtype() -> None:
    """flash-attn's cross-entropy kernel (llm-foundry's default): the bf16 logits it saves and
    the bf16 gradient it writes, 2·b·V per token, an fp32 log-sum-exp and loss beside; no fp32
    log-softmax (transformers' full loss keeps (b + 4)·V and 4·V). The vectorized planner
    agrees."""
    spec = load_model("mpt-7b").spec
    tokens = 8192
    par = Parallelism(dp=8, zero=3)
    full = TrainWork(task="pretrain", batch=1, seq=tokens, recompute="full", parallel=par)
    kernel = TrainWork(
        task="pretrain", batch=1, seq=tokens, recompute="full", parallel=par, loss="kernel"
    )
    lines = {w.loss: training_memory(spec, w) for w in (full, kernel)}
    (logits,) = [ln for ln in lines["kernel"].lines if ln.key == "logits"]
    assert logits.bytes == tokens * spec.vocab_size * 4
    saved = lines["full"].total_bytes - lines["kernel"].total_bytes
    # (b + 4 + 4 - 2b)·V per token less, minus 8 bytes of log-sum-exp and loss, plus the 10%
    # allocator reserve on it.
    assert saved == pytest.approx(1.1 * tokens * (6 * spec.vocab_size - 8), rel=1e-3)
    lay = vector.Layouts.of(tp=[1], pp=[1], dp=[8], zero=[3], batch=[1], grad_accum=[1], sp=[0])
    assert float(vector.train_memory(spec, kernel, lay)[0]) == pytest.approx(
        lines["kernel"].total_bytes, rel=1e-9
    )


def test_megatron_cross_entropy_keeps_the_fp32_softmax_and_a_dtype_gradient() -> None:
    """Megatron's vocab-parallel cross-entropy keeps only its fp32 softmax (4·V, with the
    activations) and, at backward start, the gradient's dtype copy (b·V): 6·V per token over
    the tensor-parallel group, where transformers' loss keeps 10·V."""
    spec = load_model("llama-3.1-8b").spec
    par = Parallelism(tp=2, dp=4, zero=1, sp=True)
    tokens = 8192
    totals = {}
    for saved in ("hf", "megatron"):
        work = TrainWork(task="pretrain", batch=1, seq=tokens, saved_tensors=saved, parallel=par)
        mem = training_memory(spec, work)
        (logits,) = [ln for ln in mem.lines if ln.key == "logits"]
        totals[saved] = logits.bytes
    assert totals["megatron"] == tokens * spec.vocab_size * 2 / 2
    assert totals["hf"] == tokens * spec.vocab_size * 6 / 2


def _dense_and_experts(model: str, pp: int) -> tuple[float, float]:
    """Parameters of the first pipeline stage at tp 1, without and with the routed experts'."""
    spec = load_model(model).spec
    counts = count_params(spec).by_component
    frac = -(-spec.num_layers // pp) / spec.num_layers
    total = param_split(spec, 1, pp, 1).total
    return total - counts["experts"] * frac, counts["experts"] * frac


def test_fsdp_shards_the_experts_over_dp_over_ep() -> None:
    """FSDP 256 with EP 64 (NeMo Automodel's DeepSeek-V3): the experts' weights shard over the
    4 ranks that hold the same experts, not over all 256."""
    spec = load_model("deepseek-v3").spec
    dense, experts = _dense_and_experts("deepseek-v3", 4)
    par = Parallelism(pp=4, dp=256, ep=64, zero=3)
    work = TrainWork(task="pretrain", batch=1, seq=4096, recompute="full", parallel=par)
    (weights,) = [ln for ln in training_memory(spec, work).lines if ln.label == "weights (bf16)"]
    assert weights.bytes == pytest.approx(2 * (dense / 256 + experts / 64 / 4))


@pytest.mark.parametrize("etp", [0, 1])
def test_distributed_optimizer_shards_expert_states_over_the_expert_data_parallel_group(
    etp: int,
) -> None:
    """Megatron: edp = dp·tp/(ep·etp). TP 2, DP 16, EP 32: edp 1 whether ETP is 2 or 1, so the
    experts' fp32 master weights are whole on every GPU; with ETP 1 each GPU holds its experts
    unsplit."""
    spec = load_model("qwen3-235b-a22b").spec
    par = Parallelism(tp=2, pp=8, dp=16, ep=32, etp=etp, zero=1, sp=True)
    work = TrainWork(task="pretrain", batch=1, seq=4096, parallel=par, saved_tensors="megatron")
    counts = count_params(spec).by_component
    frac = -(-spec.num_layers // 8) / spec.num_layers
    experts = counts["experts"] * frac / 32
    dense = param_split(spec, 2, 8, 32).total - experts / 2
    e_tp = 2 if etp == 0 else 1
    (master,) = [ln for ln in training_memory(spec, work).lines if ln.key == "master_weights"]
    assert master.bytes == pytest.approx(4 * (dense / 16 + experts / e_tp))


@pytest.mark.parametrize("etp", [0, 1, 2])
def test_expert_sharding_vector_equals_scalar(etp: int) -> None:
    spec = load_model("qwen3-30b-a3b").spec
    tps, dps, zeros = [1, 2, 4, 2, 1], [64, 32, 16, 8, 8], [1, 3, 2, 0, 3]
    lay = vector.Layouts.of(
        tp=tps, pp=[2] * 5, dp=dps, zero=zeros, batch=[1] * 5, grad_accum=[4] * 5, sp=[0] * 5
    )
    base = Parallelism(pp=2, ep=8, etp=etp)
    work = TrainWork(task="pretrain", batch=1, seq=4096, grad_accum=4, parallel=base)
    got = vector.train_memory(spec, work, lay)
    for i, (tp, dp, zero) in enumerate(zip(tps, dps, zeros, strict=True)):
        par = Parallelism(tp=tp, pp=2, dp=dp, ep=8, etp=etp, zero=zero)
        want = training_memory(spec, replace(work, parallel=par)).total_bytes
        assert float(got[i]) == pytest.approx(want, rel=1e-9)


def _saved(modules: tuple[str, ...], recompute: str = "selective") -> float:
    spec = load_model("qwen3-235b-a22b").spec
    par = Parallelism(tp=2, pp=8, dp=16, ep=32, etp=1, zero=1, sp=True)
    work = TrainWork(
        task="pretrain",
        batch=1,
        seq=4096,
        grad_accum=128,
        parallel=par,
        saved_tensors="megatron",
        recompute=recompute,
        recompute_modules=modules,
    )
    mem = training_memory(spec, work)
    (layers,) = [ln for ln in mem.lines if ln.label == "saved by the layers"]
    lay = vector.Layouts.of(tp=[2], pp=[8], dp=[16], zero=[1], batch=[1], grad_accum=[128], sp=[1])
    assert float(vector.train_memory(spec, work, lay)[0]) == pytest.approx(
        mem.total_bytes, rel=1e-9
    )
    return layers.bytes


def test_recompute_modules_moe_act_and_layernorm() -> None:
    """Megatron's --recompute-modules: moe_act drops each routed copy's fc2 input (k·b·I a
    token), layernorm the pre-MLP norm's output the router keeps (b·h, split by sequence
    parallelism); core_attn alone is the default selective recomputation."""
    spec = load_model("qwen3-235b-a22b").spec
    assert spec.moe is not None
    k, h, width = spec.moe.experts_per_token, spec.hidden_size, spec.moe.expert.intermediate_size
    base = _saved(("core_attn",))
    # With flash attention the attention core keeps no scores: nothing for core_attn to drop,
    # and the router's fp32 softmax is not the attention's.
    assert base == _saved(("core_attn",), recompute="none")
    act = base - _saved(("core_attn", "moe_act"))
    norm = base - _saved(("core_attn", "layernorm"))
    both = base - _saved(("moe_act", "layernorm"))
    # Per token and layer: k·b·I / tp (the experts' rows split over TP with SP) and b·h / tp.
    assert act / norm == pytest.approx((k * 2 * width / 2) / (2 * h / 2))
    assert both == pytest.approx(act + norm)
    assert act > 0 and norm > 0


def test_recompute_modules_option_reaches_the_work() -> None:
    from suanli.answers.request import WorkRequest, build_work

    work = build_work(
        WorkRequest(task="pretrain", recompute="selective", recompute_modules="moe_act, layernorm")
    )
    assert isinstance(work, TrainWork)
    assert work.recompute_modules == ("moe_act", "layernorm")
    with pytest.raises(ValueError, match="recompute-modules"):
        TrainWork(task="pretrain", recompute="selective", recompute_modules=("mlp",))
