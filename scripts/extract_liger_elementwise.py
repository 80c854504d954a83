"""Measure how much slower a training step's element-wise kernels run than their bytes at the
card's achievable bandwidth (developer tool).

linkedin/Liger-Kernel (BSD-2-Clause) publishes its kernel benchmarks with every baseline it
compares against (``benchmark/data/*.csv``, median of the timed runs, milliseconds): RMSNorm,
rotary embedding and SwiGLU, forward and backward apart, as transformers runs them in eager
PyTorch (``huggingface``; for SwiGLU plain ``torch``: ``silu(gate) * up``) and as fused kernels
(Liger's Triton kernels, torch.compile's generated ones, and for Megatron's RMSNorm and SwiGLU
also the kernels Megatron-Core runs). This script reads three files of a checkout of that
repository:

- ``benchmark/data/all_benchmark_data.csv`` at ead96b61 (2026-08-21): the A100-SXM4-80GB rows
  (Liger 0.2.1, 2024-09-03) and the H100 80GB HBM3 rows of ``megatron_rms_norm`` and
  ``megatron_swiglu`` (Liger 0.8.x, 2026);
- ``benchmark/data/h100_all_benchmark_data.csv`` at 3534d446 (H100 NVL, Liger 0.5.2,
  2025-01-25) and ``benchmark/data/a100_all_benchmark_data.csv`` at bdbfeadf (A100 80GB PCIe,
  the same release; both read with ``git show``): the only Hopper rows of transformers' eager
  RMSNorm and rotary, and the only rows of torch.compile's kernels. The H100 NVL is not in the
  catalog: its datasheet bandwidth (3.9 TB/s) and the H100 SXM's achievable share of it are
  used.

Every bf16 row becomes (card, kind, class, pass, tokens, bytes, seconds), ``bytes`` being what
the speed model counts for that kernel (:mod:`suanli.estimate.elementwise`: eager RMSNorm
``28h + 4bh`` a token, fused ``2bh``; eager rotary ``10b·w``, fused ``2b·w`` over the q and k
width ``w``; eager SwiGLU ``5bI``, fused ``3bI``; backward twice the forward). Its slowdown is
seconds / (bytes / achievable bandwidth). The median slowdown of each (class, kind, pass) over
the rows that move at least ``MIN_BYTES`` (the bandwidth-bound regime), per generation (the two
A100s together; the two H100s together), is printed as the
``[training_elementwise."<reference card>"]`` tables of ``src/suanli/catalog/data/kernels.toml``
(a slowdown one generation lacks, the A100's SwiGLU, takes the other's); the rows go to
``tests/fixtures/elementwise-training-liger.csv``. Nothing in the package or the tests reads
the checkout. Usage: ``python scripts/extract_liger_elementwise.py /path/to/Liger-Kernel``.
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: (file, commit) of the tables read; ``None``: the checkout's working tree.
TABLES = (
    ("benchmark/data/all_benchmark_data.csv", None),
    ("benchmark/data/h100_all_benchmark_data.csv", "3534d4461ca89319e29c890c1a4c20cb2a615d5f"),
    ("benchmark/data/a100_all_benchmark_data.csv", "bdbfeadf9987bb7dcd4b0d54301dcdd5b935ebfe"),
)
#: Liger's GPU name -> (catalog id for the achievable share, peak bandwidth bytes/s, the
#: generation's reference card the slowdowns are kept under: Ampere, Hopper).
CARDS = {
    "NVIDIA A100-SXM4-80GB": ("a100-sxm-80gb", 2.039e12, "a100-sxm-80gb"),
    "NVIDIA A100 80GB PCIe": ("a100-pcie-80gb", 1.935e12, "a100-sxm-80gb"),
    "NVIDIA H100 80GB HBM3": ("h100-sxm-80gb", 3.35e12, "h100-sxm-80gb"),
    # NVIDIA H100 NVL datasheet: 3.9 TB/s; not in the catalog, the H100 SXM's achievable share.
    "NVIDIA H100 NVL": ("h100-sxm-80gb", 3.9e12, "h100-sxm-80gb"),
}
#: Liger benchmark -> the kind of element-wise kernel.
KINDS = {
    "rms_norm": "norm",
    "megatron_rms_norm": "norm",
    "rope": "rope",
    "megatron_swiglu": "activation",
}
#: Providers that run one PyTorch kernel per op (the rest are fused kernels).
EAGER = {"huggingface", "torch"}
#: torch.compile's generated kernels: fused, counted with the fused bytes, kept as their own
#: class (they measure slower than the hand-fused ones, most in rotary's backward).
COMPILED = {"torchcompile"}
#: Bytes per token and width of each kind, eager and fused, bf16 (b = 2).
PER_TOKEN = {
    ("norm", "eager"): 36,  # 28h + 4bh
    ("norm", "fused"): 4,  # 2bh
    ("rope", "eager"): 20,  # 10b·w
    ("rope", "fused"): 4,  # 2b·w
    ("activation", "eager"): 10,  # 5bI
    ("activation", "fused"): 6,  # 3bI
}
#: Rows from this many modelled bytes on are bandwidth-bound (the fit).
MIN_BYTES = 64e6


def _tokens_and_width(
    name: str, x_name: str, x: float, cfg: dict[str, float]
) -> tuple[float, float]:
    """(tokens, the width the kind's bytes scale with) of one benchmark row."""
    if name == "rms_norm":
        return cfg["M"], x
    if name == "megatron_rms_norm":
        return cfg["S"] * cfg["B"], x
    if name == "megatron_swiglu":
        return cfg["S"] * cfg["B"], x
    # rope: the q and k heads' width, hidden size x (n_q + n_kv) / n_q
    heads = (cfg["num_q_heads"] + cfg["num_kv_heads"]) / cfg["num_q_heads"]
    if x_name == "H":
        return cfg["seq_len"], x * heads
    return x, cfg["hidden_size"] * heads


def read_rows(checkout: Path) -> list[tuple[str, str, str, str, str, int, float, float]]:
    """(card, kind, class, provider, pass, tokens, bytes, seconds) of every usable bf16 row."""
    out = []
    for path, commit in TABLES:
        if commit is None:
            text = (checkout / path).read_text()
        else:
            cmd = ["git", "-C", str(checkout), "show", f"{commit}:{path}"]
            text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for r in csv.DictReader(text.splitlines()):
            name, gpu = r["kernel_name"], r["gpu_name"]
            mode = r["kernel_operation_mode"]
            if r["metric_name"] != "speed" or name not in KINDS or gpu not in CARDS:
                continue
            if mode not in ("forward", "backward"):
                continue
            cfg = json.loads(r["extra_benchmark_config_str"] or "{}")
            if cfg.get("dtype", "torch.bfloat16") != "torch.bfloat16":
                continue
            kind = KINDS[name]
            provider = r["kernel_provider"]
            klass = "eager" if provider in EAGER else "fused"
            if name == "megatron_rms_norm" and r["kernel_provider"] == "torch":
                klass = "fused"  # torch's native rms_norm: one kernel, not transformers' six
            tokens, width = _tokens_and_width(name, r["x_name"], float(r["x_value"]), cfg)
            nbytes = PER_TOKEN[(kind, klass)] * width * tokens * (2 if mode == "backward" else 1)
            if provider in COMPILED:
                klass = "compiled"
            seconds = float(r["y_value_50"]) * 1e-3
            out.append((gpu, kind, klass, r["kernel_provider"], mode, int(tokens), nbytes, seconds))
    return out


def _measured(
    slow: dict[tuple[str, str, str, str], list[float]],
    generation: str,
    klass: str,
    kind: str,
    mode: str,
) -> tuple[list[float], str]:
    """The slowdowns behind one field of a generation's table and what they are: its own rows,
    else the other generation's, else (a kind torch.compile's kernels were not timed for) the
    fused class's, of this generation first."""
    own = slow.get((generation, klass, kind, mode))
    if own:
        return own, f"{len(own)} rows"
    for key, values in slow.items():
        if key[1:] == (klass, kind, mode):
            return values, "not measured: the other generation's"
    fused, _ = _measured(slow, generation, "fused", kind, mode)
    return fused, "not measured: the fused kernels'"


def main(checkout: str) -> int:
    from suanli.catalog import find_gpu, load_catalog
    from suanli.catalog.network import ceiling_for

    catalog = load_catalog()
    rows = read_rows(Path(checkout))
    slow: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    by_card: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for gpu, kind, klass, _, mode, _, nbytes, seconds in rows:
        gpu_id, peak, generation = CARDS[gpu]
        share = ceiling_for(find_gpu(gpu_id, catalog), "bf16").memory_fraction
        if nbytes >= MIN_BYTES:
            ratio = seconds / (nbytes / (peak * share))
            slow[(generation, klass, kind, mode)].append(ratio)
            by_card[(gpu, klass, kind, mode)].append(ratio)
    for key, values in sorted(by_card.items()):
        print(f"# {key}: {len(values)} rows, median slowdown {statistics.median(values):.2f}")
    generations = sorted({g for g, _, _, _ in slow})
    names = sorted(
        {(k, kind, m) for _, k, kind, m in slow} | {("compiled", kind, m) for _, _, kind, m in slow}
    )
    for generation in generations:
        print(f'[training_elementwise."{generation}"]')
        for klass, kind, mode in names:
            values, note = _measured(slow, generation, klass, kind, mode)
            print(f"{klass}_{kind}_{mode} = {statistics.median(values):.2f}  # {note}")
    out = ROOT / "tests" / "fixtures" / "elementwise-training-liger.csv"
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["gpu", "kind", "class", "provider", "pass", "tokens", "bytes", "seconds"])
        for gpu, kind, klass, provider, mode, tokens, nbytes, seconds in rows:
            numbers = (f"{nbytes:.0f}", f"{seconds:.6g}")
            writer.writerow((gpu, kind, klass, provider, mode, tokens, *numbers))
    print(f"wrote {len(rows)} rows to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../Liger-Kernel"))
