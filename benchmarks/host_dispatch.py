"""Count the ops Hugging Face ``generate()`` dispatches per decode step, and measure how much
Python adds between them (docs/speed.md, "When the CPU sets the pace").

Counting: a tiny model of each architecture (random weights, bf16, on the CPU) runs
``generate()`` under a ``TorchDispatchMode`` that counts every ATen op; two layer counts and two
generation lengths separate the ops of one layer per token from the ops outside the layers.
The counts are what transformers' code dispatches on any device (the kernels differ, the ops do
not), and suanli.estimate.host_dispatch holds them; tests/estimate/test_host_dispatch.py recounts.

Measuring (printed, not used by the estimate): the host time of a decode step of the real code on
this CPU (fp32, tiny tensors, so the kernels cost almost nothing) against a bare replay of the same
ATen ops without the Python around them: the ratio is the share of Python between ops.

    python benchmarks/host_dispatch.py
"""

from __future__ import annotations

import collections
import time
from typing import Any

#: Ops that return a view or metadata and launch no kernel.
VIEW_OPS = frozenset(
    {
        "view",
        "_unsafe_view",
        "t",
        "transpose",
        "unsqueeze",
        "squeeze",
        "slice",
        "expand",
        "permute",
        "select",
        "as_strided",
        "alias",
        "detach",
        "_reshape_alias",
        "split",
        "split_with_sizes",
        "unbind",
        "lift_fresh",
        "scalar_tensor",
        "_local_scalar_dense",
        "reshape",
        "empty",
        "new_empty",
        "expand_as",
        "view_as",
        "narrow",
    }
)

#: Tiny configs of the counted architectures (the op count does not depend on the sizes).
TINY = {
    "llama": {"num_key_value_heads": 2},
    "mistral": {"num_key_value_heads": 2},
    "qwen2": {"num_key_value_heads": 2},
    "qwen3": {"num_key_value_heads": 2, "head_dim": 16},
    "mixtral": {"num_key_value_heads": 2, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen3_moe": {
        "num_key_value_heads": 2,
        "head_dim": 16,
        "moe_intermediate_size": 32,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    "qwen2_moe": {
        "num_key_value_heads": 2,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 64,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
}


def _model(arch: str, layers: int, dtype: Any) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        arch,
        num_hidden_layers=layers,
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        vocab_size=256,
        **TINY[arch],
    )
    return AutoModelForCausalLM.from_config(config, dtype=dtype).eval()


def _generate(model: Any, new_tokens: int) -> None:
    import torch

    ids = torch.arange(1, 9).reshape(1, 8)  # no pad token (0): no padding mask
    model.generate(
        ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=0
    )


def _counted(model: Any, new_tokens: int) -> collections.Counter[str]:
    from torch.utils._python_dispatch import TorchDispatchMode

    counts: collections.Counter[str] = collections.Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            counts[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    with Count():
        _generate(model, new_tokens)
    return counts


def _split(counts: dict[str, float]) -> tuple[float, float]:
    kernels = sum(v for k, v in counts.items() if k not in VIEW_OPS)
    views = sum(v for k, v in counts.items() if k in VIEW_OPS)
    return kernels, views


def count_step_ops(arch: str) -> dict[str, float]:
    """Per decode step of ``arch`` in bf16: kernel-launching and view ops of one layer and of the
    rest of the step (``layer_kernels``, ``layer_views``, ``step_kernels``, ``step_views``)."""
    import torch

    per_token: dict[int, dict[str, float]] = {}
    with torch.no_grad():
        for layers in (2, 6):
            model = _model(arch, layers, torch.bfloat16)
            _generate(model, 2)  # warm up: lazy initialisation dispatches ops once
            short, long = _counted(model, 4), _counted(model, 12)
            per_token[layers] = {k: (long[k] - short[k]) / 8 for k in long}
    layer = {k: (per_token[6][k] - per_token[2].get(k, 0)) / 4 for k in per_token[6]}
    rest = {k: per_token[2][k] - 2 * layer.get(k, 0) for k in per_token[2]}
    layer_kernels, layer_views = _split(layer)
    step_kernels, step_views = _split(rest)
    return {
        "layer_kernels": layer_kernels,
        "layer_views": layer_views,
        "step_kernels": step_kernels,
        "step_views": step_views,
    }


def python_share(repeats: int = 7) -> tuple[float, float]:
    """(host seconds per layer and token of ``generate()``, share of it that is Python between
    the ops) for a tiny fp32 Qwen 2 on this CPU: the real code against a bare replay of its ops."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    torch.set_num_threads(1)

    def best(fn: Any) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    with torch.no_grad():
        small, large = _model("qwen2", 2, torch.float32), _model("qwen2", 10, torch.float32)
        per_token = {}
        for layers, model in ((2, small), (10, large)):
            _generate(model, 4)
            long = best(lambda m=model: _generate(m, 20))
            short = best(lambda m=model: _generate(m, 4))
            per_token[layers] = (long - short) / 16
        per_layer = (per_token[10] - per_token[2]) / 8
        ids = torch.arange(1, 9).reshape(1, 8)  # no pad token (0): no padding mask
        cache = large(ids, use_cache=True).past_key_values
        calls: list[tuple[Any, Any, Any]] = []

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                calls.append((func, args, kwargs or {}))
                return func(*args, **(kwargs or {}))

        with Record():
            large(ids[:, -1:], past_key_values=cache, use_cache=True)

        def replay() -> None:
            for func, args, kwargs in calls:
                func(*args, **kwargs)

        bare_per_op = best(replay) / len(calls)
    ops_per_layer = sum(count_step_ops("qwen2")[k] for k in ("layer_kernels", "layer_views"))
    return per_layer, 1 - ops_per_layer * bare_per_op / per_layer


def main() -> None:
    import platform

    import transformers

    print(f"transformers {transformers.__version__}, {platform.processor() or platform.machine()}")
    header = (
        "architecture",
        "kernels per layer",
        "views per layer",
        "kernels outside",
        "views outside",
    )
    print("| " + " | ".join(header) + " |")
    print("|---|---:|---:|---:|---:|")
    for arch in TINY:
        c = count_step_ops(arch)
        print(
            f"| {arch} | {c['layer_kernels']:g} | {c['layer_views']:g} | "
            f"{c['step_kernels']:g} | {c['step_views']:g} |"
        )
    per_layer, share = python_share()
    print(
        f"\ngenerate() on this CPU (fp32, tiny tensors): {per_layer * 1e6:.0f} us per layer and "
        f"token; Python between the ops: {share:.0%} of it"
    )


if __name__ == "__main__":
    main()
