"""Count the ops Hugging Face ``generate()`` dispatches per decode step, and measure the host's
time of the real code (docs/speed.md, "When the CPU sets the pace").

Counting: a tiny model of each architecture (random weights, bf16, on the CPU) runs
``generate()`` under a ``TorchDispatchMode`` that counts every ATen op; two layer counts and two
generation lengths separate the ops of one layer per token from the ops outside the layers.
The counts are what transformers' code dispatches on any device (the kernels differ, the ops do
not), and suanli.estimate.host_dispatch holds them; tests/estimate/test_host_dispatch.py recounts.

Measuring: :func:`cpu_path` times transformers' decode step on this CPU (bf16, tiny tensors, so
the kernels cost almost nothing): a layer, the rest of the forward and what ``generate()`` adds
per token, and one ``torch.add`` from Python; suanli.estimate.host_dispatch takes their medians
(``LAYER_CPU_S``, ``STEP_CPU_S``, ``CPU_OP_HOST_S``). :func:`measure_host` times the same on a GPU
(``benchmarks/validate_gpu.py`` calls it) against what the estimate charges per layer.

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


def cpu_path(trials: int = 5, repeats: int = 30) -> dict[str, float]:
    """The host's time of transformers' real decode step on this CPU (bf16, tiny tensors, one
    thread), with no CUDA launch in it: the medians over ``trials`` of

    - ``layer_s``: one decoder layer's forward at decode (a 10-layer model against a 2-layer one,
      each the best of ``repeats`` timings of 5 steps from a fresh 8-token cache);
    - ``outside_s``: the rest of the forward (embedding, rotary tables, mask, final norm, head);
    - ``generate_s``: what ``generate()`` adds per token around the forward (its bookkeeping,
      argmax, stopping criteria, the next step's inputs);
    - ``add_s``: one tiny ``torch.add`` called from Python (the CPU path of a kernel op).

    Timing the real forward, not a replay of its recorded ATen ops: replaying through
    ``OpOverload`` objects costs about 5 us an op in Python itself, three times what the same op
    costs through torch's own bindings, and so hid most of the Python around the ops.
    """
    import statistics

    import torch

    torch.set_num_threads(1)
    ids = torch.arange(1, 9).reshape(1, 8)  # no pad token (0): no padding mask

    def decode_s(model: Any) -> float:
        best = float("inf")
        for _ in range(repeats):
            cache = model(ids, use_cache=True).cache
            start = time.perf_counter()
            for _ in range(5):
                model(ids[:, -1:], cache=cache, use_cache=True)
            best = min(best, (time.perf_counter() - start) / 5)
        return best

    def generate_s(model: Any, tokens: int) -> float:
        best = float("inf")
        for _ in range(max(repeats // 3, 3)):
            start = time.perf_counter()
            _generate(model, tokens)
            best = min(best, time.perf_counter() - start)
        return best

    a, b = torch.ones(16), torch.ones(16)

    def add_s() -> float:
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(1000):
                torch.add(a, b)
            best = min(best, (time.perf_counter() - start) / 1000)
        return best

    runs: dict[str, list[float]] = collections.defaultdict(list)
    with torch.no_grad():
        small, large = _model("qwen2", 2, torch.bfloat16), _model("qwen2", 10, torch.bfloat16)
        for _ in range(trials):
            two, ten = decode_s(small), decode_s(large)
            layer = (ten - two) / 8
            per_token = (generate_s(small, 36) - generate_s(small, 4)) / 32
            runs["layer_s"].append(layer)
            runs["outside_s"].append(two - 2 * layer)
            runs["generate_s"].append(per_token - two)
            runs["add_s"].append(add_s())
    return {key: statistics.median(values) for key, values in runs.items()}


def measure_host(device: str = "cpu", repeats: int = 7) -> dict[str, Any]:
    """What the host pays on ``device`` (``"cpu"`` or ``"cuda"``), measured, for the estimate's
    per-op constants to be checked against (docs/speed.md, "When the CPU sets the pace"):

    - ``add_op_s``: one tiny ``add`` submitted back to back, one synchronisation at the end (on
      CUDA the same quantity as :data:`~suanli.estimate.host_dispatch.KERNEL_OP_HOST_S`'s source);
    - ``view_op_s``: one ``view`` likewise (no kernel on any device);
    - ``generate_layer_s``: ``generate()`` of a tiny Qwen 2 (bf16 on CUDA, fp32 on the CPU) per
      layer and token, from 10 layers against 2: on a GPU its kernels take microseconds, so this
      is the host's time per layer, the quantity ``--dispatch python`` charges;
    - ``model_layer_s``: what suanli charges per layer and token on a GPU (the CPU path's
      490 us and 6.4 us per kernel launch), for the ratio; on the CPU itself the launches are
      not paid, so the ratio there reads below 1.
    """
    import torch

    from suanli.estimate import host_dispatch as hd

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    def best(fn: Any) -> float:
        fn()  # warm up: lazy initialisation, allocator
        sync()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
        return min(times)

    ops = 1000
    a = torch.ones(16, device=device)
    b = torch.ones(16, device=device)

    def adds() -> None:
        for _ in range(ops):
            torch.add(a, b)

    def views() -> None:
        for _ in range(ops):
            a.view(4, 4)

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    per_token = {}
    with torch.no_grad():
        for layers in (2, 10):
            model = _model("qwen2", layers, dtype).to(device)
            ids = torch.arange(1, 9, device=device).reshape(1, 8)

            def run(n: int, m: Any = model, i: Any = ids) -> None:
                m.generate(i, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)

            long = best(lambda: run(20))
            short = best(lambda: run(4))
            per_token[layers] = (long - short) / 16
    kernels, _views = hd.layer_ops(_spec_like_qwen2())
    layer_s = (per_token[10] - per_token[2]) / 8
    return {
        "device": device if device == "cpu" else torch.cuda.get_device_name(0),
        "add_op_s": best(adds) / ops,
        "view_op_s": best(views) / ops,
        "generate_layer_s": layer_s,
        "generate_outside_s": per_token[2] - 2 * layer_s,
        "model_layer_s": hd.LAYER_CPU_S + kernels * hd.LAUNCH_EXTRA_S,
    }


def _spec_like_qwen2() -> Any:
    """Qwen 2's layer as the estimate sees it (the op counts do not depend on the sizes)."""
    from suanli.models.resolve import load_model

    return load_model("qwen2.5-0.5b").spec


def host_markdown(measured: dict[str, Any]) -> str:
    """The host measurement as a short table (microseconds)."""
    ratio = measured["generate_layer_s"] / measured["model_layer_s"]
    return "\n".join(
        [
            f"Host dispatch on {measured['device']} (tiny tensors; microseconds):",
            "",
            "| add op | view op | generate() per layer and token | suanli's per layer | ratio |",
            "|---:|---:|---:|---:|---:|",
            f"| {measured['add_op_s'] * 1e6:.1f} | {measured['view_op_s'] * 1e6:.1f} | "
            f"{measured['generate_layer_s'] * 1e6:.0f} | {measured['model_layer_s'] * 1e6:.0f} | "
            f"{ratio:.2f} |",
        ]
    )


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
    cpu = cpu_path()
    print(
        "\ntransformers' decode step on this CPU (bf16, tiny tensors, medians of 5 runs): "
        f"{cpu['layer_s'] * 1e6:.0f} us a layer, {cpu['outside_s'] * 1e6:.0f} us outside the "
        f"layers, {cpu['generate_s'] * 1e6:.0f} us of generate() around the forward; "
        f"torch.add from Python {cpu['add_s'] * 1e6:.1f} us"
    )
    import torch

    print()
    print(host_markdown(measure_host("cuda" if torch.cuda.is_available() else "cpu")))


if __name__ == "__main__":
    main()
