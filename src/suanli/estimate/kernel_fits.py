"""A card's kernel models, built from the measured rows of the catalog
(:mod:`suanli.catalog.kernels`): its GEMM model (fitted where the card was profiled, else its own
ceilings scaled by the profiled card of its generation), its serving element-wise and prefill
attention kernels, and its training element-wise slowdowns.

The catalog holds the rows; this module turns them into the estimator's types
(:mod:`suanli.estimate.kernels`), so the catalog never imports the estimators.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from typing import Any

from suanli.catalog.gpu import GPU
from suanli.catalog.kernels import (
    TRAINING_ELEMENTWISE_FALLBACK,
    gemm_fit,
    generation_card,
    prefill_attention_row,
    reference_card,
    training_elementwise_row,
)
from suanli.catalog.network import Ceiling, ceiling_for
from suanli.estimate.kernels import (
    ElementwiseEfficiency,
    GemmModel,
    PrefillAttention,
    TrainingElementwise,
)
from suanli.i18n import N_

#: Efficiencies are capped here: no kernel streams or computes at the full datasheet rate.
MAX_EFFICIENCY = 0.98


def kernel_model(
    gpu: GPU,
    ceiling: Ceiling,
    reference_ceiling: Ceiling | None = None,
    *,
    precision: str = "",
) -> GemmModel:
    """``gpu``'s GEMM model for the precision ``ceiling`` was measured at (``precision``: that
    precision, which decides whether the card's own fit covers it; see
    :func:`suanli.catalog.kernels.reference_card`).

    The profiled card's fitted efficiencies are divided by its own best-shape ceilings (at the
    precision it was profiled in, fp16 unless the row says otherwise; efficiency.toml) and
    multiplied by this card's: real model shapes lose the same share of the best shape on cards
    of one generation (the profiled card itself, at its profiled precision, gets its fit).
    ``reference_ceiling`` overrides the reference card's ceiling (tests)."""
    ref_id, matched = reference_card(gpu, precision)
    fit = gemm_fit(ref_id)
    if reference_ceiling is None:
        from suanli.catalog.loader import load_catalog
        from suanli.catalog.lookup import find_gpu

        profiled = str(fit.get("precision", "fp16"))
        reference_ceiling = ceiling_for(find_gpu(ref_id, load_catalog()), profiled)
    # Shape losses never make a kernel faster than the best shape: a reference card whose own
    # ceiling is only a class default (the A40) can measure above it, and then loses nothing.
    compute_loss = min(1.0, fit["compute_efficiency"] / reference_ceiling.matmul_fraction)
    memory_loss = min(1.0, fit["memory_efficiency"] / reference_ceiling.memory_fraction)
    if ref_id == gpu.id and ceiling.matmul_fraction == reference_ceiling.matmul_fraction:
        # The profiled card at the profiled precision: its fit is a measurement.
        compute_loss = fit["compute_efficiency"] / ceiling.matmul_fraction
        memory_loss = fit["memory_efficiency"] / ceiling.memory_fraction
    compute = ceiling.matmul_fraction * compute_loss
    memory = ceiling.memory_fraction * memory_loss
    generation_id = generation_card(gpu)[0]
    elementwise = _elementwise(fit, 1.0 if ref_id == gpu.id else memory / fit["memory_efficiency"])
    if elementwise is None:
        # A fit without them (a kernel sweep's: it runs no serving engine) takes its generation's.
        generation = gemm_fit(generation_id)
        elementwise = _elementwise(generation, memory / generation["memory_efficiency"])
    how: str  # a message id, or one with its values filled in
    if ref_id == gpu.id:
        how = N_("fitted on this card")
    elif matched:
        how = N_("shape losses of {ref}").format(ref=ref_id)
    else:
        how = N_("shape losses of {ref} (no profile of this generation)").format(ref=ref_id)
    return GemmModel(
        compute_efficiency=min(compute, MAX_EFFICIENCY),
        memory_efficiency=min(memory, MAX_EFFICIENCY),
        launch_s=float(fit["launch_s"]),
        tile=int(fit["tile"]),
        small_op_s=float(fit["small_op_s"]),
        blend=float(fit.get("blend", 0.0)),
        elementwise=elementwise,
        training_elementwise=training_elementwise(generation_id),
        prefill_attention=prefill_attention(gpu),
        source=N_(
            "GEMM kernel model, {how}: {gemms:,} measured GEMMs, median error "
            "{error:.0%} ({source})"
        ).format(how=how, gemms=fit["gemms"], error=fit["median_error"], source=fit["source"]),
    )


def _elementwise(fit: dict[str, Any], scale: float) -> ElementwiseEfficiency | None:
    """The reference card's measured element-wise efficiencies, scaled as its GEMMs' streaming
    efficiency is scaled to this card (a kernel loses the same share of what the card's memory
    reaches), or None where the reference card has none."""
    row = fit.get("elementwise")
    if row is None:
        return None
    return ElementwiseEfficiency(
        **{
            f.name: min(float(row[f.name]) * scale, MAX_EFFICIENCY)
            for f in fields(ElementwiseEfficiency)
        }
    )


def prefill_attention(gpu: GPU) -> PrefillAttention | None:
    """``gpu``'s serving prefill-attention kernel (``[prefill_attention."<id>"]`` of
    kernels.toml): its own where measured, else a measured card of its architecture with the
    rate scaled by the two cards' 16-bit matmul ceilings (the kernel is compute-bound), or None
    for an architecture nobody measured (:func:`suanli.catalog.kernels.prefill_attention_row`)."""
    found = prefill_attention_row(gpu)
    if found is None:
        return None
    row, ref_id, scale = found
    how = (
        N_("measured on this card")
        if ref_id == gpu.id
        else N_("{ref}'s, scaled by the matmul ceiling").format(ref=ref_id)
    )
    return PrefillAttention(
        floor_s=float(row["floor_s"]),
        rate_flops=float(row["rate_flops"]) * scale,
        half_tokens=float(row["half_tokens"]),
        source=N_(
            "vLLM's prefill attention {how}: {rows} kernel times, median error {error:.0%} "
            "({source})"
        ).format(how=how, rows=row["rows"], error=row["median_error"], source=row["source"]),
    )


@lru_cache(maxsize=16)
def training_elementwise(reference: str = TRAINING_ELEMENTWISE_FALLBACK) -> TrainingElementwise:
    """The measured slowdowns of a training step's element-wise kernels against their bytes, for
    the generation of the profiled card ``reference`` (``[training_elementwise."<id>"]`` of
    kernels.toml; the A100's for a generation nobody measured)."""
    row = training_elementwise_row(reference)
    # One (forward, backward) pair per field, e.g. eager_norm_forward and eager_norm_backward.
    pairs = {
        f.name: (
            float(row.get(f"{f.name}_forward", 1.0)),
            float(row.get(f"{f.name}_backward", 1.0)),
        )
        for f in fields(TrainingElementwise)
    }
    return TrainingElementwise(**pairs)
