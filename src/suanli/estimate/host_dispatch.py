"""The CPU's share of a decode step when Python dispatches every op (docs/speed.md, "When the
CPU sets the pace").

Hugging Face ``generate()`` runs the model eagerly: each step, Python calls every module, and
each call goes through PyTorch's dispatcher to one kernel launch (or to a view, which launches
nothing). The GPU cannot run ahead of the launches, so a step takes at least the host's time to
issue them, however small the kernels are. Serving engines (vLLM, SGLang, TensorRT-LLM,
llama.cpp, gpt-fast under ``torch.compile``) replay the step as CUDA graphs or launch it from
C++, and are not limited this way (``dispatch = "engine"``).

Model (first principles on counted ops and a measured per-op cost, nothing fitted to an
end-to-end run):

- the ops one step dispatches are counted from transformers' own code: a tiny model of the
  architecture runs ``generate()`` on the CPU under a ``TorchDispatchMode`` that counts every
  ATen op (tests/estimate/test_host_dispatch.py recounts them; transformers 5.25): a pre-norm
  decoder layer with RMSNorm, RoPE and a gated MLP (Llama, Mistral, Qwen 2) dispatches 40 ops
  that launch a kernel (RMSNorm alone is 8: two casts, pow, mean, add, rsqrt, two muls) and 36
  views; each further RMSNorm in a layer (Qwen 3's query and key norms, Gemma's extra two) 8 more
  kernels; outside the layers, the embedding, final norm, LM head, rotary tables, the causal
  mask and ``generate()``'s own bookkeeping (argmax, stopping criteria, cache positions) 50
  kernels and 15 views per step;
- the host's time of the real code on a CPU, with no CUDA launch in it, is measured:
  ``benchmarks/host_dispatch.py`` times transformers' decode step of a tiny bf16 Qwen 2 on this
  project's CPU (an AMD EPYC server core, one thread; medians of five runs, 2026-12-07): about
  490 us a decoder layer (a 10-layer model against a 2-layer one), 400 us for the rest of the
  forward, and 220 us that ``generate()`` adds per token around it. Most of it is Python around
  the ops (module calls, the attention interface, the cache's bookkeeping): the layer's 76 ops
  cost about 1.6 us each through torch's bindings (``torch.add``, same CPU);
- on a GPU each op that launches a kernel pays the CUDA path instead of the CPU's: 8 us for an
  ``add`` submitted back to back on an A100 server with one synchronisation at the end
  (flagos-ai/Torch-FL pull request #27, 2026-07-28, "cuda_sub" of ``add[512^2]``), against
  1.6 us for the CPU path measured above, so 6.4 us more per kernel; a view launches nothing
  and costs the same on either device;
- the step takes ``max(GPU time, host time)``: the host issues launches while earlier kernels
  run, and ``generate()`` synchronises once per token.

- a MoE layer adds its routing and grouped expert GEMMs (18 kernels, 2 views; a shared expert
  8 and 4 more), counted likewise: transformers 5 runs the experts as one grouped GEMM, so the
  count does not grow with the experts a token picks.

Until 2026-12-07 the Python around the ops was put at 17% of the host's time, from a replay of
the recorded ATen ops against the real code; replaying through ``OpOverload`` objects costs
about 5 us an op in Python itself, three times an op through torch's bindings, so the replay
hid most of that Python (docs/speed.md, "When the CPU sets the pace").

What is not counted: the extra ops of older transformers releases (4.46 dispatches 42 kernels
and 41 views per layer; before 5.0 a MoE layer looped over the experts it hit in Python);
quantized linear layers' own wrappers (AWQ, GPTQ, bitsandbytes); a host CPU slower or faster
than the measured one (``benchmarks/validate_gpu.py`` measures ``generate()`` on a GPU host
directly when one is lent).
"""

from __future__ import annotations

from suanli.models.spec import ModelSpec

#: Host seconds to dispatch one ATen op that launches a CUDA kernel from Python (Torch-FL PR #27,
#: 2026-07-28: 8 us per ``add`` submitted back to back on an A100 server, the stock CUDA path).
KERNEL_OP_HOST_S = 8e-6
#: Host seconds of the same ``add`` on the CPU path, from Python through torch's bindings
#: (benchmarks/host_dispatch.py on this project's AMD EPYC core, 2026-12-07: 1.5-1.6 us).
CPU_OP_HOST_S = 1.6e-6
#: What launching a CUDA kernel adds to an op's host time over the CPU path.
LAUNCH_EXTRA_S = KERNEL_OP_HOST_S - CPU_OP_HOST_S
#: Host seconds of one decoder layer of transformers' decode step on the CPU path (Qwen 2, bf16,
#: tiny tensors, one thread: benchmarks/host_dispatch.py, medians of five runs 482-513 us,
#: 2026-12-07).
LAYER_CPU_S = 490e-6
#: Host seconds of the rest of the forward (embedding, rotary tables, mask, final norm, head:
#: 380-420 us) and of what generate() adds per token around it (210-240 us), likewise.
STEP_CPU_S = 620e-6
#: Kernel-launching ops of one pre-norm decoder layer with two RMSNorms, RoPE and a gated MLP,
#: per decode step (counted from transformers 5.25's Llama, Mistral and Qwen 2 code).
LAYER_KERNEL_OPS = 40
#: View ops of that layer per step (counted likewise).
LAYER_VIEW_OPS = 36
#: Kernel-launching ops of one RMSNorm in bf16 (cast up, pow, mean, add eps, rsqrt, mul, cast
#: back, mul by the weight).
NORM_KERNEL_OPS = 8
#: Kernel-launching and view ops outside the layers per step: embedding, final norm, LM head,
#: rotary tables, causal mask and generate()'s bookkeeping (Llama and Mistral; Qwen 2 counts 35).
STEP_KERNEL_OPS = 50
STEP_VIEW_OPS = 15
#: More ops of a MoE layer than of its dense counterpart, per step (transformers 5.25 routes
#: with softmax, topk, sort and index and runs the experts as ``aten::_grouped_mm``, whatever
#: the number of experts a token picks): 17 kernels for Qwen3-MoE, 19 for Mixtral (the mean
#: taken), 2 views; a shared expert (Qwen2-MoE) 8 kernels and 4 views more.
MOE_KERNEL_OPS = 18
MOE_VIEW_OPS = 2
SHARED_EXPERT_KERNEL_OPS = 8
SHARED_EXPERT_VIEW_OPS = 4


def layer_ops(spec: ModelSpec) -> tuple[int, int]:
    """(kernel-launching ops, view ops) one layer dispatches per decode step in transformers'
    eager code: the counted pre-norm layer, with :data:`NORM_KERNEL_OPS` more for each norm
    beyond two (Gemma 2/3's four) and for query and key norms."""
    extra_norms = max(spec.norm.per_layer - 2, 0) + (2 if spec.attention.qk_norm else 0)
    return LAYER_KERNEL_OPS + NORM_KERNEL_OPS * extra_norms, LAYER_VIEW_OPS


def moe_layer_ops(spec: ModelSpec) -> tuple[int, int]:
    """(kernel-launching ops, view ops) a MoE layer adds to :func:`layer_ops` (0 for a dense
    model): routing and the grouped expert GEMMs, and a shared expert where there is one."""
    if spec.moe is None or not spec.moe_layers:
        return 0, 0
    shared = spec.moe.shared_expert is not None
    return (
        MOE_KERNEL_OPS + (SHARED_EXPERT_KERNEL_OPS if shared else 0),
        MOE_VIEW_OPS + (SHARED_EXPERT_VIEW_OPS if shared else 0),
    )


def step_ops(spec: ModelSpec) -> tuple[int, int]:
    """(kernel-launching ops, view ops) of one whole decode step: every layer and the rest."""
    kernels, views = layer_ops(spec)
    moe_kernels, moe_views = moe_layer_ops(spec)  # (0, 0) for a dense model
    moe_layers = len(spec.moe_layers)
    return (
        kernels * spec.num_layers + moe_kernels * moe_layers + STEP_KERNEL_OPS,
        views * spec.num_layers + moe_views * moe_layers + STEP_VIEW_OPS,
    )


def python_step_s(spec: ModelSpec) -> float:
    """Host seconds Python needs to dispatch one forward pass (a decode step, or the prefill's
    single pass): the real code's measured time on the CPU path, per layer and around the
    layers, plus what each kernel launch adds on a GPU; ops a layer has beyond the measured
    Llama-style layer (more norms, MoE routing) cost that layer's average op each."""
    kernels, views = step_ops(spec)
    measured_ops = LAYER_KERNEL_OPS + LAYER_VIEW_OPS
    # Everything step_ops counts beyond the measured layers and the measured rest of the step.
    extra_ops = kernels + views - measured_ops * spec.num_layers - STEP_KERNEL_OPS - STEP_VIEW_OPS
    return (
        LAYER_CPU_S * spec.num_layers
        + STEP_CPU_S
        + extra_ops * LAYER_CPU_S / measured_ops
        + kernels * LAUNCH_EXTRA_S
    )


def host_step_s(spec: ModelSpec, dispatch: str) -> float:
    """The host's floor under one forward pass: :func:`python_step_s` where Python dispatches
    each op (``dispatch == "python"``), nothing where an engine launches the step."""
    return python_step_s(spec) if dispatch == "python" else 0.0
