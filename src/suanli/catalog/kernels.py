"""The measured kernel rows of ``catalog/data/kernels.toml``: the GEMM fits of profiled cards,
which profiled card stands for a card (its own fit, else its generation's), and the rows of the
prefill-attention and training element-wise tables.

Data only: :mod:`suanli.estimate.kernel_fits` builds the estimator's kernel models from them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from suanli.catalog.gpu import GPU
from suanli.catalog.network import ceiling_for
from suanli.catalog.toml_data import read_data

#: The two 16-bit precisions share a fit.
SIXTEEN_BIT = ("fp16", "bf16")


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], str]:
    data = read_data("kernels.toml")
    fits = {str(r["gpu_id"]): r for r in data.get("gemm", [])}
    return fits, list(data.get("generation", [])), str(data["fallback"]["reference"])


def gemm_fit(card_id: str) -> dict[str, Any]:
    """The ``[[gemm]]`` row of a profiled card (a card id :func:`reference_card` or
    :func:`generation_card` gave)."""
    return _table()[0][card_id]


def _covers(fit: dict[str, Any], precision: str) -> bool:
    """Whether a card's own fit stands for its GEMMs at ``precision`` ("" : any)."""
    fitted = str(fit.get("precision", "fp16"))
    if not precision or precision == fitted:
        return True
    if precision in SIXTEEN_BIT and fitted in SIXTEEN_BIT:
        return True
    return bool(fit.get("other_precisions", True))


def reference_card(gpu: GPU, precision: str = "") -> tuple[str, bool]:
    """The profiled card whose kernel shapes stand for ``gpu`` at ``precision`` (its own fit where
    it has one that covers the precision), and whether the generation matched (False: the
    fallback for a vendor or generation nobody profiled)."""
    fits, _, _ = _table()
    if gpu.id in fits and _covers(fits[gpu.id], precision):
        return gpu.id, True
    return generation_card(gpu)


def generation_card(gpu: GPU) -> tuple[str, bool]:
    """The profiled card of ``gpu``'s generation (whatever its own fit), and whether the
    generation matched."""
    _, generations, fallback = _table()
    arch = str(gpu.get("architecture") or "")
    for row in generations:
        prefixes = row.get("id_prefixes")
        if arch in row["architectures"] and (
            not prefixes or any(gpu.id.startswith(p) for p in prefixes)
        ):
            return str(row["reference"]), True
    return fallback, False


def prefill_attention_row(gpu: GPU) -> tuple[dict[str, Any], str, float] | None:
    """The ``[prefill_attention."<id>"]`` row of kernels.toml that stands for ``gpu``, the card
    it was measured on, and the factor its rate scales by: ``gpu``'s own (1.0) where measured,
    else a measured card of its architecture scaled by the two cards' 16-bit matmul ceilings (the
    kernel is compute-bound); None for an architecture nobody measured."""
    tables, architectures, rates = _prefill_tables()
    if gpu.id in tables:
        return tables[gpu.id], gpu.id, 1.0
    ref_id = architectures.get(str(gpu.get("architecture") or ""), "")
    if not ref_id:
        return None
    scale = _matmul_rate(gpu) / rates[ref_id]
    if not scale > 0:
        return None
    return tables[ref_id], ref_id, scale


@lru_cache(maxsize=1)
def _prefill_tables() -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, float]]:
    """The ``[prefill_attention]`` tables by card, the first measured card (by id) of each
    architecture, and each measured card's 16-bit matmul rate (read once)."""
    from suanli.catalog.loader import load_catalog
    from suanli.catalog.lookup import find_gpu

    tables = dict(read_data("kernels.toml").get("prefill_attention", {}))
    catalog = load_catalog()
    architectures: dict[str, str] = {}
    rates: dict[str, float] = {}
    for card in sorted(tables):
        gpu = find_gpu(card, catalog)
        architectures.setdefault(str(gpu.get("architecture") or ""), card)
        rates[card] = _matmul_rate(gpu)
    return tables, architectures, rates


def _matmul_rate(gpu: GPU) -> float:
    """The card's achievable 16-bit matmul rate: its bf16 (else fp16) peak times its ceiling."""
    for precision in SIXTEEN_BIT[::-1]:
        peak = gpu.peak_flops(precision)
        if peak:
            return float(peak) * ceiling_for(gpu, precision).matmul_fraction
    return 0.0


#: The generation whose training element-wise slowdowns a card without its own takes.
TRAINING_ELEMENTWISE_FALLBACK = "a100-sxm-80gb"


def training_elementwise_row(reference: str = TRAINING_ELEMENTWISE_FALLBACK) -> dict[str, Any]:
    """The ``[training_elementwise."<id>"]`` row of kernels.toml for the generation of the
    profiled card ``reference`` (the A100's for a generation nobody measured; empty when neither
    is there)."""
    tables = read_data("kernels.toml").get("training_elementwise", {})
    return dict(tables.get(reference) or tables.get(TRAINING_ELEMENTWISE_FALLBACK, {}))
