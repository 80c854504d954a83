"""A GGUF file's LM head is Q6_K below Q8_0 (llama.cpp's quantizer), and a decode step reads it
so (docs/speed.md, "A GGUF file's LM head is Q6_K")."""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.formats import get_format
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.inference import inference_perf
from suanli.estimate.kernels import serve_forward
from suanli.estimate.shapes import serving_shapes
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model


@pytest.mark.parametrize(
    ("fmt", "bits"),
    [
        ("gguf-q4_k_m", 6.5625),
        ("gguf-q3_k_m", 6.5625),
        ("gguf-q4_0", 6.5625),
        ("gguf-q6_k", 6.5625),
        ("gguf-q8_0", 8.5),
        ("bf16", 16),
        ("awq-4bit-g128", 16),
        ("fp8", 16),
    ],
)
def test_the_head_keeps_its_own_type(fmt: str, bits: float) -> None:
    assert get_format(fmt).lm_head_bytes * 8 == pytest.approx(bits)


def test_a_q4_decode_step_reads_the_head_in_q6_k_not_in_16_bits() -> None:
    """Llama-3.2-3B ties a 394M-parameter head: at batch 1 reading it in Q6_K rather than 16
    bits saves its byte difference at about the card's streaming rate (between the peak and the
    GEMMs' streaming efficiency), and the step is at least a tenth shorter for it."""
    spec = load_model("llama-3.2-3b").spec
    device = device_for(find_gpu("rtx-4090", bundled_gpus()), "bf16")
    model = device.gemm_model
    kwargs = {
        "shapes": serving_shapes(spec, "separate"),
        "num_layers": spec.num_layers,
        "hidden": spec.hidden_size,
        "vocab": spec.vocab_size,
        "rows": 1,
        "sequences": 1,
        "tp": 1,
        "weight_bytes": get_format("gguf-q4_k_m").bits_per_weight / 8,
        "peak_flops": device.peak_flops,
        "bandwidth_bytes_per_s": device.memory_bytes_per_s,
        "model": model,
        "op_bytes": serving_op_bytes(spec, 1, kernels="eager"),
    }
    sixteen = serve_forward(**kwargs).gemm_s
    q6 = serve_forward(**kwargs, head_bytes=get_format("gguf-q4_k_m").lm_head_bytes).gemm_s
    saved_bytes = spec.vocab_size * spec.hidden_size * (2 - 6.5625 / 8)
    bw = device.memory_bytes_per_s
    assert saved_bytes / bw < sixteen - q6 <= saved_bytes / (bw * model.memory_efficiency) * 1.05
    assert (sixteen - q6) / sixteen > 0.1
    # and the whole step uses it
    work = InferWork(weight_format="gguf-q4_k_m", projections="separate")
    assert inference_perf(spec, work, device, 1, 128).breakdown_s["decode_gemms"] == pytest.approx(
        q6, rel=1e-9
    )
