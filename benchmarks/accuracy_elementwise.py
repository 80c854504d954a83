"""Print the element-wise kernel models against measured kernel times, as markdown.

Two sections:

- **Serving**: the element-wise kernels of a decoder layer as Sarathi-Serve (a vLLM fork) runs
  them, timed by Vidur's profiler (``tests/fixtures/elementwise-op-times.csv``, written by
  ``scripts/derive_elementwise_profiles.py``), against :func:`suanli.estimate.kernels.
  serving_ops_seconds`' per-kernel form, before (every kind at the GEMMs' streaming efficiency)
  and after (each kind at its measured share of the bandwidth, fitted on 2,048 tokens or more).
- **Training**: transformers' eager RMSNorm and rotary, plain torch SwiGLU, and fused kernels
  (Liger's, torch.compile's, Megatron-Core's, PyTorch's native rms_norm), forward and backward,
  from the kernel benchmarks Liger-Kernel publishes
  (``tests/fixtures/elementwise-training-liger.csv``, written by
  ``scripts/extract_liger_elementwise.py``), against the bytes :func:`suanli.estimate.
  elementwise.training_op_bytes` counts at the card's achievable bandwidth, before (the bytes
  alone) and after (times the generation's slowdown, ``[training_elementwise]`` in kernels.toml).

Both calibrations are fitted on these same tables (medians over the bandwidth-bound rows), so the
"after" columns in the fitted range show the fit, not an independent check; the per-card spread
and the smaller sizes are what they show beyond it. Positive error = the model is faster.

Run: python benchmarks/accuracy_elementwise.py > docs/accuracy-elementwise.md
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from suanli import find_gpu, load_catalog
from suanli.catalog.network import ceiling_for
from suanli.estimate.kernel_fits import kernel_model, training_elementwise

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

# The scripts that wrote the fixtures know their cards and ops; one table each, not two.
from derive_elementwise_profiles import OPS  # noqa: E402
from extract_liger_elementwise import CARDS, MIN_BYTES  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
#: The serving engine's element-wise op times Vidur profiled (derive_elementwise_profiles.py).
ELEMENTWISE_FIXTURE = FIXTURES / "elementwise-op-times.csv"
#: Liger-Kernel's benchmarks of training element-wise kernels (extract_liger_elementwise.py).
TRAINING_FIXTURE = FIXTURES / "elementwise-training-liger.csv"
#: Liger's GPU name -> (catalog id of the achievable share, peak bandwidth bytes/s, the reference
#: card of its generation).
TRAINING_CARDS = CARDS
#: Vidur's op name -> the kind of :class:`suanli.estimate.kernels.ElementwiseEfficiency`.
ELEMENTWISE_KINDS = OPS
#: Ranges of tokens the element-wise section reports.
TOKEN_BANDS = (("1-128", 1, 128), ("512-1k", 512, 1024), ("2k-16k", 2048, 16384))


def elementwise_errors(
    gpu_id: str, *, streaming: bool = False
) -> dict[str, list[tuple[int, float]]]:
    """Per kind of op, (tokens, measured seconds / model seconds - 1) over the fixture rows of
    ``gpu_id`` (positive: the model is faster). ``streaming``: the model before the measured
    efficiencies, every op at the GEMMs' streaming efficiency."""
    gpu = find_gpu(gpu_id, load_catalog())
    model = kernel_model(gpu, ceiling_for(gpu, "fp16"), precision="fp16")
    eff = model.elementwise_efficiency()
    bw = gpu.memory_bandwidth_bytes_per_s
    out: dict[str, list[tuple[int, float]]] = {}
    with ELEMENTWISE_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            if rec["gpu_id"] != gpu_id:
                continue
            kind = ELEMENTWISE_KINDS[rec["op"]]
            share = model.memory_efficiency if streaming else getattr(eff, kind)
            t = max(model.small_op_s, float(rec["bytes"]) / (bw * share))
            out.setdefault(kind, []).append((int(rec["tokens"]), float(rec["seconds"]) / t - 1))
    return out


def elementwise_report() -> str:
    """The element-wise section: median error by card, kind and tokens, before and after."""
    cells = " | ".join(name for name, _, _ in TOKEN_BANDS)
    lines = [
        "## Serving element-wise kernels against Vidur's op times "
        "(`tests/fixtures/elementwise-op-times.csv`)",
        "",
        "One kernel of a decoder layer as Sarathi-Serve (a vLLM fork) runs it (fused RMSNorm, "
        "in-place rotary, SiLU-and-multiply, residual add), fp16, kernel times from the profiler. "
        "The model: max(floor, bytes / (peak bandwidth x the kind's measured share)); the shares "
        "were fitted on rows of 2,048 tokens or more (scripts/derive_elementwise_profiles.py), so "
        "that band is in sample and the smaller ones check the floor. Before: every kind at the "
        "GEMMs' streaming efficiency. Median signed error; positive = the model is faster.",
        "",
        f"| GPU | kernel | before: {cells} | after: {cells} |",
        "|---|---|" + "---:|" * (2 * len(TOKEN_BANDS)),
    ]
    for gpu_id in ("a100-sxm-80gb", "h100-sxm-80gb", "a40-48gb"):
        after = elementwise_errors(gpu_id)
        before = elementwise_errors(gpu_id, streaming=True)
        for kind in ("norm", "rope", "activation", "add"):
            row = []
            for errors in (before[kind], after[kind]):
                for _, lo, hi in TOKEN_BANDS:
                    band = [e for n, e in errors if lo <= n <= hi]
                    row.append(f"{statistics.median(band):+.0%}")
            lines.append(f"| {gpu_id} | {kind} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def training_errors(*, bytes_only: bool = False) -> dict[tuple[str, str, str, str], list[float]]:
    """(card, class, kind, pass) -> measured / model - 1 over the bandwidth-bound fixture rows
    (positive: the model is faster). ``bytes_only``: the model before the slowdowns."""
    catalog = load_catalog()
    # Per card, once: the achievable bandwidth and its generation's slowdowns.
    cards = {
        name: (
            peak * ceiling_for(find_gpu(gpu_id, catalog), "bf16").memory_fraction,
            training_elementwise(generation),
        )
        for name, (gpu_id, peak, generation) in TRAINING_CARDS.items()
    }
    out: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    with TRAINING_FIXTURE.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            nbytes = float(rec["bytes"])
            if nbytes < MIN_BYTES:
                continue
            bandwidth, slow = cards[rec["gpu"]]
            forward, backward = slow.of(rec["kind"], rec["class"])
            factor = 1.0 if bytes_only else (forward if rec["pass"] == "forward" else backward)
            model = nbytes / bandwidth * factor
            key = (rec["gpu"], rec["class"], rec["kind"], rec["pass"])
            out[key].append(float(rec["seconds"]) / model - 1)
    return out


def training_report() -> str:
    """The training section: median error by card, class, kind and pass, before and after."""
    lines = [
        "## Training element-wise kernels against Liger-Kernel's benchmarks "
        "(`tests/fixtures/elementwise-training-liger.csv`)",
        "",
        "Rows moving 64 MB or more (as the model counts their bytes), bf16. Before: the counted "
        "bytes at the card's achievable bandwidth; after: times the slowdown of the class, kind "
        "and pass of the card's generation (`[training_elementwise]` in kernels.toml, fitted on "
        "these rows: the two A100s' together; the two H100s' together). Median "
        "signed error; positive = the model is faster.",
        "",
        "| GPU | class | kernel | pass | rows | before | after |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    after = training_errors()
    before = training_errors(bytes_only=True)
    for key in sorted(after):
        gpu, klass, kind, mode = key
        lines.append(
            f"| {gpu.removeprefix('NVIDIA ')} | {klass} | {kind} | {mode} | {len(after[key])} | "
            f"{statistics.median(before[key]):+.0%} | {statistics.median(after[key]):+.0%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Print the report."""
    print(elementwise_report(), end="")
    print()
    print(training_report(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
