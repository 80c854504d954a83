"""The KV-cache bytes a decode step moves beyond the attention's own read (``--kv-update``,
``--gqa``; docs/speed.md, "The cache that is copied every step"): counted in transformers' real
code, and what the estimate charges for them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from suanli import InferPerfAnswer, PerfRequest, WorkRequest, perf
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.main import cli as main
from suanli.estimate import kv_traffic, vector
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.inference_memory import kv_bytes_per_token
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model
from tests.web_parity import infer_tpot_by_option

from ..scripts import load_script

bench = load_script("benchmarks/host_dispatch.py")

CONTEXT = 64  # tokens already in the cache before the counted step
HEADS, KV_HEADS, HEAD_DIM, LAYERS = 4, 2, 16, 2


def _written_bytes(attention: str) -> dict[str, list[int]]:
    """Bytes each op writes in one decode step of a tiny bf16 Qwen 2 (4 query heads over 2 KV
    heads) after a ``CONTEXT``-token prefill, by op name."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    model = bench._model("qwen2", LAYERS, torch.bfloat16)
    model.config._attn_implementation = attention
    ids = torch.arange(1, CONTEXT + 1).reshape(1, CONTEXT)
    written: dict[str, list[int]] = {}

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if isinstance(out, torch.Tensor) and name not in bench.VIEW_OPS:
                nbytes = out.numel() * out.element_size()
                written.setdefault(name, []).append(nbytes)
            return out

    with torch.no_grad():
        cache = model(ids, use_cache=True).cache
        with Count():
            model(ids[:, -1:], cache=cache, use_cache=True)
    return written


def _layer_cache_bytes(tokens: int, heads: int = KV_HEADS) -> int:
    """One layer's keys (or values) for ``tokens`` tokens in bf16."""
    return tokens * heads * HEAD_DIM * 2


def test_dynamic_cache_rewrites_the_whole_cache_every_step() -> None:
    """transformers' DynamicCache appends with torch.cat: each step writes every layer's whole
    keys and values anew (and so reads them): the 2 x cache of ``kv_update = "concat"``."""
    written = _written_bytes("sdpa")
    whole = _layer_cache_bytes(CONTEXT + 1)
    cats = sorted(written.get("cat", []))
    # Keys and values of each layer, each the whole grown cache.
    assert cats[-2 * LAYERS :] == [whole] * (2 * LAYERS)


def test_sdpa_reads_the_grouped_cache_without_copying_it() -> None:
    """transformers 5's SDPA path passes the grouped heads to the kernel (``enable_gqa``): no op
    writes the cache repeated per query head, so the hf preset keeps ``gqa = "native"``."""
    written = _written_bytes("sdpa")
    repeated = _layer_cache_bytes(CONTEXT + 1, HEADS)
    assert all(n < repeated for ops in written.values() for n in ops)


def test_the_eager_path_repeats_the_kv_heads() -> None:
    """The eager attention path copies each KV head once per query head (``repeat_kv``): the
    ``g`` copies of ``gqa = "repeat"``, keys and values of every layer."""
    written = _written_bytes("eager")
    repeated = _layer_cache_bytes(CONTEXT + 1, HEADS)
    assert sum(n == repeated for ops in written.values() for n in ops) >= 2 * LAYERS


def _work(**options: Any) -> InferWork:
    return InferWork(batch=4, context=32768 + 256, **options)


def _tpot(model: str, gpu: str, prompt: int, **options: Any) -> float:
    spec = load_model(model).spec
    device = device_for(find_gpu(gpu, bundled_gpus()), "bf16")
    return inference_perf(spec, _work(**options), device, prompt, 256).tpot_s


def test_concat_costs_at_least_the_copy_at_full_bandwidth() -> None:
    """A physical floor: the concatenating update adds at least 2 x the cache at the card's peak
    bandwidth, and at most what the element-wise floors and the measured copy share allow."""
    spec = load_model("qwen2.5-7b").spec
    gpu = find_gpu("a100-sxm-80gb", bundled_gpus())
    device = device_for(gpu, "bf16")
    prompt = 32768
    context = prompt + 256 / 2
    cache = kv_bytes_per_token(spec, 2, int(context), 1) * context * 4
    added = _tpot("qwen2.5-7b", "a100-sxm-80gb", prompt, kv_update="concat") - _tpot(
        "qwen2.5-7b", "a100-sxm-80gb", prompt
    )
    assert added >= 2 * cache / gpu.memory_bandwidth_bytes_per_s
    share = device.gemm_model.elementwise_efficiency().add
    floors = 2 * spec.num_layers * device.gemm_model.small_op_s
    assert added <= 2 * cache / (gpu.memory_bandwidth_bytes_per_s * share) + floors


def test_the_copies_grow_with_the_context_not_the_weights() -> None:
    short = _tpot("llama-3.1-8b", "h100", 128, kv_update="concat") / _tpot(
        "llama-3.1-8b", "h100", 128
    )
    long = _tpot("llama-3.1-8b", "h100", 32768, kv_update="concat") / _tpot(
        "llama-3.1-8b", "h100", 32768
    )
    # Short: only the copies' kernel floors (two per layer) against a step of weights.
    assert short < 1.06
    assert long > 1.3


def test_repeated_heads_cost_more_the_more_query_heads_share_one() -> None:
    """Llama 3.1 8B shares each KV head among 4 query heads, Qwen 2.5 7B among 7: repeating
    costs the second relatively more; a multi-head model (Llama 2 7B) copies nothing."""
    ratio = {
        m: _tpot(m, "a100-sxm-80gb", 32768, gqa="repeat") / _tpot(m, "a100-sxm-80gb", 32768)
        for m in ("llama-3.1-8b", "qwen2.5-7b", "llama-2-7b")
    }
    assert ratio["llama-2-7b"] == pytest.approx(1.0, rel=1e-12)
    assert 1.0 < ratio["llama-3.1-8b"] < ratio["qwen2.5-7b"]
    spec = load_model("qwen2.5-7b").spec
    assert kv_traffic.query_groups(spec) == 7
    assert kv_traffic.copy_factor(spec, InferWork(gqa="repeat", kv_update="concat")) == 2 + 1 + 7


def test_mla_caches_are_never_repeated() -> None:
    spec = load_model("deepseek-v3").spec
    assert kv_traffic.query_groups(spec) == 1
    assert kv_traffic.copy_kernels(spec, InferWork(gqa="repeat")) == 0


def test_vectorized_planner_equals_the_scalar_path() -> None:
    spec = load_model("qwen2.5-7b").spec
    device = device_for(find_gpu("a100-sxm-80gb", bundled_gpus()), "bf16")
    batch, tp = [1, 8, 64], [1, 2, 4]
    for update, gqa in (("concat", "native"), ("in-place", "repeat"), ("concat", "repeat")):
        result = vector.infer_speed(
            spec,
            "bf16",
            2,
            batch,
            tp,
            8192,
            512,
            device,
            "separate",
            "eager",
            "python",
            options=InferWork(kv_update=update, gqa=gqa),
        )
        for i, (bval, tval) in enumerate(zip(batch, tp, strict=True)):
            work = InferWork(
                batch=bval,
                tp=tval,
                context=8192 + 512,
                projections="separate",
                dispatch="python",
                kv_update=update,
                gqa=gqa,
            )
            scalar = inference_perf(spec, work, device, 8192, 512)
            assert result["tpot_s"][i] == pytest.approx(scalar.tpot_s, rel=1e-9)
            assert result["ttft_s"][i] == pytest.approx(scalar.ttft_s, rel=1e-9)
    assert np.all(np.isfinite(result["tpot_s"]))


def test_the_hf_framework_concatenates_and_says_why() -> None:
    req = PerfRequest(
        "qwen2.5-7b", WorkRequest(task="infer", framework="hf", batch=8), gpu="a100", prompt=32768
    )
    answer = perf(req)
    assert isinstance(answer, InferPerfAnswer)
    engine = perf(
        replace(
            req,
            work=WorkRequest(
                task="infer", framework="hf", kv_update="in-place", explicit=("task", "kv_update")
            ),
        )
    )
    assert isinstance(engine, InferPerfAnswer)
    assert answer.tpot_s > engine.tpot_s
    assert any("torch.cat" in a for a in answer.assumptions)
    assert answer.breakdown_s["decode_cache_copy"] > 0
    assert engine.breakdown_s["decode_cache_copy"] == 0


@pytest.mark.parametrize("option", ["--kv-update", "--gqa"])
def test_a_bad_value_is_one_sentence_and_exit_2(option: str) -> None:
    result = CliRunner().invoke(main, ["perf", "llama-3.1-8b", "--task", "infer", option, "x"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert option in result.output


def test_the_page_answers_each_value_as_the_library_does() -> None:
    tpot, bad = infer_tpot_by_option("kv_update", ("in-place", "concat"), "sideways")
    assert tpot["concat"] > tpot["in-place"]
    assert bad.status_code in (400, 422)
    tpot, bad = infer_tpot_by_option("gqa", ("native", "repeat"), "twice")
    assert tpot["repeat"] > tpot["native"]
    assert bad.status_code in (400, 422)


def test_a_step_the_engine_launches_keeps_its_cache_in_place() -> None:
    """The hf preset concatenates only where Python dispatches the step: a CUDA graph or a C++
    runtime needs fixed shapes; a --kv-update the user sets still wins."""
    from suanli.answers.request import apply_framework

    def applied(**options: Any) -> str:
        work = WorkRequest(task="infer", framework="hf", explicit=("task", *options), **options)
        return apply_framework(work).kv_update

    assert applied() == "concat"
    assert applied(dispatch="engine") == "in-place"
    assert applied(dispatch="engine", kv_update="concat") == "concat"
