"""Layers split between the GPU and the CPU (llama.cpp ``--n-gpu-layers``, Ollama ``num_gpu``).

llama.cpp runs the layers it offloads on the GPU and the others on the CPU from system memory,
one after another for every token, so a pass takes the GPU's time for its share of the layers
plus the CPU's time for the rest. Both times come from the same kernel-level model
(:func:`suanli.estimate.inference.inference_perf`) on each device, scaled by the share of layers it
runs; the CPU's decode is bound by its memory bandwidth, which is why a model a few layers too
big for the card loses most of its speed.
"""

from __future__ import annotations

from dataclasses import replace

from suanli.estimate.inference import InferPerf


def split_layers(on_gpu: InferPerf, on_cpu: InferPerf, gpu_share: float, batch: int) -> InferPerf:
    """The speed of a pass whose ``gpu_share`` of layers run on the GPU (``on_gpu``: the whole
    model timed on the GPU) and the rest on the CPU (``on_cpu``: the whole model timed there)."""
    cpu_share = 1 - gpu_share

    def mix(gpu_s: float, cpu_s: float) -> float:
        return gpu_share * gpu_s + cpu_share * cpu_s

    ttft = mix(on_gpu.ttft_s, on_cpu.ttft_s)
    tpot = mix(on_gpu.tpot_s, on_cpu.tpot_s)
    output_steps = on_gpu.request_s - on_gpu.ttft_s
    decode_steps = output_steps / on_gpu.tpot_s if on_gpu.tpot_s else 0.0
    request = ttft + decode_steps * tpot
    breakdown = dict(on_gpu.breakdown_s)
    breakdown["cpu_layers_prefill"] = cpu_share * on_cpu.ttft_s
    breakdown["cpu_layers_decode"] = cpu_share * on_cpu.tpot_s
    return replace(
        on_gpu,
        ttft_s=ttft,
        tpot_s=tpot,
        tokens_per_s=batch / tpot,
        bound="memory" if cpu_share * on_cpu.tpot_s > gpu_share * on_gpu.tpot_s else on_gpu.bound,
        breakdown_s=breakdown,
        request_s=request,
        batch_tokens_per_s=on_gpu.batch_tokens_per_s * on_gpu.request_s / request
        if request
        else 0.0,
    )
