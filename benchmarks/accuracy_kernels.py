"""Print the kernel-level models against independent kernel benchmarks, as markdown.

The GEMM model (:func:`suanli.estimate.kernels.gemm_seconds`, fitted on Vidur's fp16 kernel
times) and the all-reduce model (:func:`suanli.estimate.comm.all_reduce_s`, the links of
``catalog/data/interconnect.toml``) are compared with the microbenchmarks Microsoft's Azure
HPC team published for four 8-GPU VMs (ND A100 v4, ND H100 v5, ND H200 v5, ND MI300X v5):
cuBLASLt / hipBLASLt GEMMs at nine shapes (fp16 on the A100, fp8 on the others) and the
nccl-tests / rccl-tests all-reduce bus bandwidth of 8 GPUs from 1 KiB to 8 GiB
(``tests/fixtures/azure-kernel-benchmarks.csv``, with the file and commit of each figure). A
second 8x MI300X rccl-tests curve, from AMD's ROCm blog with a newer RCCL (2.22.3, ROCm 6.3;
``tests/fixtures/mi300x-rccl-rocm-blog.csv``), shows how far two RCCL builds on the same board
differ below 32 MiB.

A third section compares the GEMM model with NVIDIA's aiconfigurator tables of TensorRT-LLM
Linear layers (``tests/fixtures/kernel-gemm-times-aic.csv``, a subset written by
``scripts/derive_aic_gemm_profiles.py``): out of sample for the A100 and H100 (fitted on Vidur)
and for every fp8 row; the H200, L40S and B200 bf16 rows are what those cards were fitted on.

These measurements are for validation. Two kinds of figure from the same guide were used in
calibration (different file versions): the 1 KiB all-reduce times of the A100, H100 and H200
(the NVLink base latency, ``derive_collective_fits.py``), the MI300X's 1 KiB time (its per-step
latency) and the MI300X's best fp8 GEMM (its fp8 ceiling); every other point is independent.

Error = (model - measured) / measured in the measured unit (TFLOP/s, bus GB/s): **positive is
optimistic** (the model promises more speed than was measured), as in accuracy_speed.py.

Run: python benchmarks/accuracy_kernels.py > /tmp/accuracy_kernels.md
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from suanli import find_gpu, load_catalog
from suanli.catalog.network import ceiling_for
from suanli.estimate.casts import FP8_CAST_BYTES
from suanli.estimate.comm import all_gather_s, all_reduce_s, reduce_scatter_s
from suanli.estimate.device import device_for
from suanli.estimate.kernel_fits import kernel_model
from suanli.estimate.kernels import activation_cast_seconds, gemm_seconds
from suanli.units import DTYPE_BYTES as ELEMENT_BYTES

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
FIXTURE = FIXTURES / "azure-kernel-benchmarks.csv"
#: Every kernel-benchmark fixture the report reads (same columns).
ALL_FIXTURES = (FIXTURE, FIXTURES / "mi300x-rccl-rocm-blog.csv")
#: aiconfigurator's TensorRT-LLM Linear timings, a subset (scripts/derive_aic_gemm_profiles.py).
AIC_FIXTURE = FIXTURES / "kernel-gemm-times-aic.csv"
#: aiconfigurator's nccl-tests timings of 2, 4 and 8 GPUs in a node (scripts/extract_aic_nccl.py).
AIC_NCCL_FIXTURE = FIXTURES / "nccl-aiconfigurator.csv"
#: aiconfigurator's vLLM decode-attention timings (scripts/extract_aic_decode_attention.py).
AIC_DECODE_FIXTURE = FIXTURES / "decode-attention-aiconfigurator.csv"
#: aiconfigurator's vLLM prefill-attention timings (scripts/extract_aic_decode_attention.py).
AIC_PREFILL_FIXTURE = FIXTURES / "prefill-attention-aiconfigurator.csv"
#: Context ranges (KV tokens per sequence) the decode-attention comparison is summarised over.
CONTEXT_BANDS = (("128-512", 128, 512), ("2k", 2048, 2048), ("8k-32k", 8192, 32768))
#: The collective models the NCCL comparison checks, by nccl-tests name.
COLLECTIVES = {
    "all_reduce": all_reduce_s,
    "all_gather": all_gather_s,
    "reduce_scatter": reduce_scatter_s,
}
#: Cards whose GEMM model was fitted on the aiconfigurator bf16 rows (kernels.toml).
AIC_FITTED = frozenset({"h200-sxm-141gb", "l40s-48gb", "b200-sxm-180gb"})
#: Ranges of GEMM rows (M) the aiconfigurator comparison is summarised over.
AIC_BANDS = (("1-16", 1, 16), ("17-256", 17, 256), ("257-2k", 257, 2048), (">2k", 2049, 1 << 30))
#: Bytes per element of a GEMM's operands in the benchmarked precision.
DTYPE_BYTES = {dtype: float(ELEMENT_BYTES[dtype]) for dtype in ("fp16", "bf16", "fp8")}


@dataclass(frozen=True)
class Point:
    """One measured kernel or collective and the model's figure for it, in the same unit."""

    gpu: str
    system: str
    kind: str
    label: str
    """The GEMM's ``m x n x k`` or the all-reduce's message size."""
    size: float
    """FLOPs of the GEMM or bytes of the message."""
    measured: float
    model: float
    unit: str

    @property
    def error(self) -> float:
        """Signed relative error, positive when the model is faster than the measurement."""
        return self.model / self.measured - 1


def _size_label(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def _records(paths: tuple[Path, ...]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for path in paths:
        with path.open(encoding="utf-8") as f:
            out += list(csv.DictReader(f))
    return out


def load_points(paths: tuple[Path, ...] = ALL_FIXTURES) -> list[Point]:
    """Every row of the fixtures with the model's figure beside it."""
    catalog = load_catalog()
    devices: dict[tuple[str, str], object] = {}
    out: list[Point] = []
    for rec in _records(paths):
        gpu = find_gpu(rec["gpu"], catalog)
        measured = float(rec["measured"])
        if rec["kind"] == "gemm":
            m, n, k = int(rec["m"]), int(rec["n"]), int(rec["k"])
            key = (gpu.id, rec["dtype"])
            if key not in devices:
                devices[key] = device_for(gpu, rec["dtype"], auto_calibration=False)
            dev = devices[key]
            seconds = gemm_seconds(
                m,
                n,
                k,
                DTYPE_BYTES[rec["dtype"]],
                dev.peak_flops,  # type: ignore[attr-defined]
                dev.memory_bytes_per_s,  # type: ignore[attr-defined]
                dev.gemm_model,  # type: ignore[attr-defined]
            )
            flops = 2.0 * m * n * k
            out.append(
                Point(
                    gpu.id,
                    rec["system"],
                    "gemm",
                    f"{m} x {n} x {k} {rec['dtype']}",
                    flops,
                    measured,
                    flops / seconds / 1e12,
                    "TFLOP/s",
                )
            )
        else:
            nbytes, ranks = int(rec["bytes"]), int(rec["ranks"])
            key = (gpu.id, "bf16")
            if key not in devices:
                devices[key] = device_for(gpu, "bf16", auto_calibration=False)
            link = devices[key].network.link_for(ranks)  # type: ignore[attr-defined]
            seconds = all_reduce_s(nbytes, ranks, link)
            # nccl-tests' bus bandwidth: 2 (n - 1) / n x size / time.
            bus = 2 * (ranks - 1) / ranks * nbytes / seconds / 1e9
            out.append(
                Point(
                    gpu.id,
                    rec["system"],
                    "all_reduce",
                    _size_label(nbytes),
                    float(nbytes),
                    measured,
                    bus,
                    "bus GB/s",
                )
            )
    return out


#: The all-reduce size ranges of the summary: (label, above bytes, up to bytes).
RANGES = (
    ("1-32 KiB", 0, 2**15),
    ("64 KiB-32 MiB", 2**15, 2**25),
    (">= 64 MiB", 2**25, 2**40),
)


def _summary(points: list[Point]) -> tuple[float, float, float]:
    errors = [p.error for p in points]
    return (
        statistics.median(abs(e) for e in errors),
        statistics.mean(errors),
        max(errors, key=abs),
    )


def _point_table(points: list[Point], what: str, unit: str, fmt: str) -> list[str]:
    """One markdown row per point: GPU, label, measured, model, signed error."""
    lines = [
        f"| GPU | system | {what} | measured {unit} | model {unit} | error |",
        "|---|---|---|---:|---:|---:|",
    ]
    for p in points:
        lines.append(
            f"| {p.gpu} | {p.system} | {p.label} | {p.measured:,{fmt}} | {p.model:,{fmt}} | "
            f"{p.error:+.1%} |"
        )
    return lines


def report(points: list[Point]) -> str:
    """The markdown page: per-point tables and a summary by card and size range."""
    lines = [
        "## Kernel models against independent kernel benchmarks "
        "(`tests/fixtures/azure-kernel-benchmarks.csv`, "
        "`tests/fixtures/mi300x-rccl-rocm-blog.csv`)",
        "",
        "Azure's published microbenchmarks of four 8-GPU VMs, and AMD's rccl-tests run of an "
        "8x MI300X board with RCCL 2.22.3 (ROCm blog, 2025-03); positive error = the model is "
        "faster than the measurement. Generated by `python benchmarks/accuracy_kernels.py`.",
        "",
        "### GEMMs (cuBLASLt fp16 on the A100, cuBLASLt / hipBLASLt fp8 on the others)",
        "",
    ]
    gemms = [p for p in points if p.kind == "gemm"]
    lines += _point_table(gemms, "shape (m x n x k)", "TFLOP/s", ".1f")
    lines += [
        "",
        "### All-reduce, 8 GPUs in one node (nccl-tests / rccl-tests bus bandwidth)",
        "",
    ]
    reduces = [p for p in points if p.kind == "all_reduce"]
    lines += _point_table(reduces, "message", "bus GB/s", ".2f")
    lines += [
        "",
        "### Summary",
        "",
        "| GPU | system | kind | range | points | median abs error | mean signed | worst |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    groups: list[tuple[str, str, str, str, list[Point]]] = []
    for gpu, system in dict.fromkeys((p.gpu, p.system) for p in points):
        g = [p for p in gemms if (p.gpu, p.system) == (gpu, system)]
        groups.append((gpu, system, "GEMM", "all shapes", g))
        groups.append((gpu, system, "GEMM", ">= 8 GFLOP", [p for p in g if p.size >= 8e9]))
        r = [p for p in reduces if (p.gpu, p.system) == (gpu, system)]
        for span, low, high in RANGES:
            groups.append((gpu, system, "all-reduce", span, [p for p in r if low < p.size <= high]))
    for gpu, system, kind, span, group in groups:
        if not group:
            continue
        median, mean, worst = _summary(group)
        lines.append(
            f"| {gpu} | {system} | {kind} | {span} | {len(group)} | {median:.1%} | "
            f"{mean:+.1%} | {worst:+.1%} |"
        )
    return "\n".join(lines) + "\n"


def aic_errors(gpu_id: str, dtype: str) -> list[tuple[int, float]]:
    """(M, error) of every aiconfigurator row of ``gpu_id`` in ``dtype`` (``bf16`` or ``fp8``),
    error = measured seconds / model seconds - 1 (positive: the model is faster). fp8 rows add
    the dynamic quantization of the activations that the collector times with the GEMM: an amax
    pass and a cast, 5 bytes an element (``FP8_CAST_BYTES``), two element-wise kernels."""
    gpu = find_gpu(gpu_id, load_catalog())
    model = kernel_model(gpu, ceiling_for(gpu, dtype), precision=dtype)
    peak, bw = gpu.peak_flops(dtype) or 0.0, gpu.memory_bandwidth_bytes_per_s
    out = []
    with AIC_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            if (rec["gpu_id"], rec["dtype"]) != (gpu_id, dtype):
                continue
            m, n, k = int(rec["m"]), int(rec["n"]), int(rec["k"])
            t = gemm_seconds(m, n, k, DTYPE_BYTES[dtype], peak, bw, model)
            if dtype == "fp8":
                t += activation_cast_seconds(m * k, FP8_CAST_BYTES["dynamic"], bw, model)
            out.append((m, float(rec["seconds"]) / t - 1))
    return out


def aic_report() -> str:
    """The aiconfigurator section: per card and precision, the median error by range of rows."""
    with AIC_FIXTURE.open(newline="") as fh:
        keys = list(dict.fromkeys((r["gpu_id"], r["dtype"]) for r in csv.DictReader(fh)))
    bands = " | ".join(f"M {name}" for name, _, _ in AIC_BANDS)
    lines = [
        "## GEMM model against aiconfigurator's TensorRT-LLM GEMM tables "
        "(`tests/fixtures/kernel-gemm-times-aic.csv`)",
        "",
        "One TensorRT-LLM Linear layer per shape, timed under CUDA graphs (ai-dynamo/"
        "aiconfigurator 095f58a5, TensorRT-LLM 1.0.0 on the A100, 1.3.0rc20 on the others; N and "
        "K 1,024-16,384, weights of 128 MiB or more below 512 rows). fp8 rows include the dynamic "
        "quantization of the activations, which the model adds. Median signed error per range of "
        "rows; positive = the model is faster than the measurement.",
        "",
        f"| GPU | dtype | model fitted on | rows | median abs error | {bands} |",
        "|---|---|---|---:|---:|" + "---:|" * len(AIC_BANDS),
    ]
    for gpu_id, dtype in sorted(keys):
        errors = aic_errors(gpu_id, dtype)
        fitted = "these rows" if gpu_id in AIC_FITTED and dtype == "bf16" else "other data"
        medians = " | ".join(
            f"{statistics.median(e for m, e in errors if lo <= m <= hi):+.1%}"
            for _, lo, hi in AIC_BANDS
        )
        median_abs = statistics.median(abs(e) for _, e in errors)
        lines.append(
            f"| {gpu_id} | {dtype} | {fitted} | {len(errors)} | {median_abs:.1%} | {medians} |"
        )
    return "\n".join(lines) + "\n"


def aic_nccl_errors() -> dict[tuple[str, str, str, int], list[tuple[int, float]]]:
    """(bytes, error) of every aiconfigurator NCCL row by (card, NCCL version, collective, GPUs);
    error = measured seconds / model seconds - 1 (positive: the model is faster)."""
    catalog = load_catalog()
    links: dict[tuple[str, int], object] = {}
    out: dict[tuple[str, str, str, int], list[tuple[int, float]]] = {}
    with AIC_NCCL_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            gpu_id, ranks, nbytes = rec["gpu_id"], int(rec["gpus"]), int(rec["bytes"])
            if (gpu_id, ranks) not in links:
                device = device_for(find_gpu(gpu_id, catalog), "bf16", auto_calibration=False)
                links[(gpu_id, ranks)] = device.network.link_for(ranks)
            model = COLLECTIVES[rec["collective"]](nbytes, ranks, links[(gpu_id, ranks)])
            key = (gpu_id, rec["nccl"], rec["collective"], ranks)
            out.setdefault(key, []).append((nbytes, float(rec["seconds"]) / model - 1))
    return out


def aic_nccl_report() -> str:
    """The aiconfigurator NCCL section: median error per card, collective, group and size range."""
    ranges = " | ".join(label for label, _, _ in RANGES)
    lines = [
        "## Collectives against aiconfigurator's nccl-tests tables "
        "(`tests/fixtures/nccl-aiconfigurator.csv`)",
        "",
        "nccl-tests in one process, one thread per GPU, 2, 4 and 8 GPUs of one node, fp16, NCCL "
        "choosing the algorithm (ai-dynamo/aiconfigurator 095f58a5; NCCL 2.27.3 on the A100 and "
        "L40S, 2.29.2 on the others), against the model's collectives on the card's intra-node "
        "link. Median signed error of the time per size range; positive = the model is faster. "
        "None of these points was used in calibration.",
        "",
        f"| GPU | NCCL | collective | GPUs | {ranges} |",
        "|---|---|---|---:|" + "---:|" * len(RANGES),
    ]
    for (gpu_id, nccl, collective, ranks), errors in sorted(aic_nccl_errors().items()):
        medians = " | ".join(
            f"{statistics.median(e for b, e in errors if low < b <= high):+.0%}"
            for _, low, high in RANGES
        )
        lines.append(f"| {gpu_id} | {nccl} | {collective} | {ranks} | {medians} |")
    return "\n".join(lines) + "\n"


def aic_decode_errors(
    layout_aware: bool = True,
) -> dict[tuple[str, str, str], list[tuple[int, int, float]]]:
    """(batch, context, error) of every aiconfigurator decode-attention row by (card, vLLM kernel,
    head layout); the model reads the KV cache at the measured decode-attention utilization
    suanli uses (catalog/decode_attention.py), looked up at the context that streams the same
    bytes per sequence (``layout_aware=False``: at the row's own context, as before 2026-12-02);
    error = measured / model - 1."""
    from suanli.catalog.decode_attention import decode_attention_efficiency

    catalog = load_catalog()
    out: dict[tuple[str, str, str], list[tuple[int, int, float]]] = {}
    with AIC_DECODE_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            gpu = find_gpu(rec["gpu_id"], catalog)
            batch, context = int(rec["batch"]), int(rec["context"])
            kv_heads, head_dim = int(rec["kv_heads"]), int(rec["head_dim"])
            token_bytes = 2 * kv_heads * head_dim * 2  # K and V of one token and layer, bf16
            kv_bytes = batch * context * token_bytes
            share, _ = decode_attention_efficiency(
                gpu, batch=batch, context=context, token_bytes=token_bytes if layout_aware else 0.0
            )
            model = kv_bytes / (share * gpu.memory_bandwidth_bytes_per_s)
            layout = f"{rec['q_heads']}/{kv_heads} x {head_dim}"
            key = (gpu.id, rec["kernel"], layout)
            out.setdefault(key, []).append((batch, context, float(rec["seconds"]) / model - 1))
    return out


def aic_decode_report() -> str:
    """The aiconfigurator decode-attention section: median error by card, layout and context."""
    bands = " | ".join(f"context {label}" for label, _, _ in CONTEXT_BANDS)
    lines = [
        "## Decode attention against aiconfigurator's vLLM tables "
        "(`tests/fixtures/decode-attention-aiconfigurator.csv`)",
        "",
        "One vLLM attention-backend forward per decode step (one new token per sequence, with its "
        "KV-cache write), bf16 KV, under CUDA graphs (ai-dynamo/aiconfigurator 095f58a5; vLLM "
        "0.14.0 on the A100, 0.24.0 on the others), batch 1-256; the model reads the KV cache at "
        "suanli's decode-attention utilization (FlashInfer's and Flash-Decoding's published "
        "curves, MHA 32 heads of 128), looked up at the context that streams the same bytes per "
        "sequence; 'before' is the lookup at the row's own context, as until 2026-12-02. Median "
        "signed error of the time; positive = the model is faster.",
        "",
        f"| GPU | vLLM kernel | q/kv heads x dim | points | median abs error (before) | {bands} |",
        "|---|---|---|---:|---:|" + "---:|" * len(CONTEXT_BANDS),
    ]
    before = aic_decode_errors(layout_aware=False)
    for (gpu_id, kernel, layout), errors in sorted(aic_decode_errors().items()):
        old = statistics.median(abs(e) for _, _, e in before[(gpu_id, kernel, layout)])
        medians = " | ".join(
            f"{statistics.median(e for _, c, e in errors if low <= c <= high):+.0%}"
            for _, low, high in CONTEXT_BANDS
        )
        median_abs = statistics.median(abs(e) for _, _, e in errors)
        lines.append(
            f"| {gpu_id} | {kernel} | {layout} | {len(errors)} | {median_abs:.0%} ({old:.0%}) | "
            f"{medians} |"
        )
    return "\n".join(lines) + "\n"


def aic_prefill_errors() -> dict[tuple[str, str, str], list[tuple[int, int, float, float]]]:
    """(batch, tokens, error now, error before) of every aiconfigurator prefill-attention row by
    (card, vLLM kernel, head layout). Now: what the serving path charges for one layer's call,
    the card's measured prefill kernel (``GemmModel.prefill_attention``: floor plus the causal
    forward's FLOPs, ``2 x 2 x batch x heads x tokens^2 x dim / 2``, at its saturating rate);
    before (until 2026-12-02): the FLOPs at the FlashAttention-2/3 rates of ``Device.attention``
    and no floor. Error = measured / model - 1."""
    catalog = load_catalog()
    devices: dict[str, object] = {}
    out: dict[tuple[str, str, str], list[tuple[int, int, float, float]]] = {}
    with AIC_PREFILL_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            gpu_id = rec["gpu_id"]
            if gpu_id not in devices:
                devices[gpu_id] = device_for(
                    find_gpu(gpu_id, catalog), "bf16", auto_calibration=False
                )
            dev = devices[gpu_id]
            batch, tokens = int(rec["batch"]), int(rec["tokens"])
            heads, dim = int(rec["q_heads"]), int(rec["head_dim"])
            flops = 2 * 2 * batch * heads * tokens * tokens * dim / 2
            rate = dev.peak_flops * dev.attention(tokens, dim, True, False)  # type: ignore[attr-defined]
            measured = dev.gemm_model.prefill_attention  # type: ignore[attr-defined]
            now = measured.seconds(flops, tokens)
            layout = f"{heads}/{rec['kv_heads']} x {dim}"
            key = (gpu_id, rec["kernel"], layout)
            seconds = float(rec["seconds"])
            out.setdefault(key, []).append(
                (batch, tokens, seconds / now - 1, seconds / (flops / rate) - 1)
            )
    return out


def aic_prefill_report() -> str:
    """The aiconfigurator prefill-attention section: median error by card, layout and length."""
    lengths = (128, 512, 2048, 8192)
    cells = " | ".join(f"{n:,} tokens" for n in lengths)
    lines = [
        "## Prefill attention against aiconfigurator's vLLM tables "
        "(`tests/fixtures/prefill-attention-aiconfigurator.csv`)",
        "",
        "One vLLM attention-backend forward over a prompt (causal, bf16 KV, with the KV-cache "
        "write), under CUDA graphs, batch 1, 8 and 64. The serving path charges each layer the "
        "card's measured prefill kernel, `floor + FLOPs / (rate x s / (s + half))`, fitted on "
        "the 32/8-head rows (`scripts/derive_prefill_attention.py`); the 8/1-head rows are out "
        "of sample. In brackets: the FlashAttention-2/3 rates with no floor, as until "
        "2026-12-02. Median signed error of the time over the three batches; positive = the "
        "model is faster.",
        "",
        f"| GPU | vLLM kernel | q/kv heads x dim | {cells} |",
        "|---|---|---|" + "---:|" * len(lengths),
    ]
    for (gpu_id, kernel, layout), errors in sorted(aic_prefill_errors().items()):
        medians = " | ".join(
            f"{statistics.median(e for _, n, e, _ in errors if n == length):+.0%} "
            f"({statistics.median(b for _, n, _, b in errors if n == length):+.0%})"
            for length in lengths
        )
        lines.append(f"| {gpu_id} | {kernel} | {layout} | {medians} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Print the report."""
    print(report(load_points()), end="")
    print()
    print(aic_report(), end="")
    print()
    print(aic_nccl_report(), end="")
    print()
    print(aic_decode_report(), end="")
    print()
    print(aic_prefill_report(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
