"""Measured efficiency of fused attention kernels (``catalog/data/attention.toml``).

The attention core (``Q K^T``, softmax, ``P V``) does not run at the GEMM model's efficiency: a
fused kernel interleaves the two matmuls with the softmax, and its throughput depends on the
sequence length, the head dimension, the causal mask and the pass. FlashAttention-2 reaches
37-73% of the A100's dense 16-bit peak forward and 26-63% backward; FlashAttention-3 reaches
20-76% of the H100's forward and 28-57% backward (Dao 2023, arXiv:2307.08691, Figs. 4-7; Shah
et al. 2024, arXiv:2407.08608, Figs. 5-7).

Every row of the table is one bar of those kernel benchmarks, in their FLOP convention::

    forward FLOPs  = 4 * seq_len^2 * head_dim * heads   (halved with a causal mask)
    backward FLOPs = 2.5 * forward FLOPs,   forward_backward = 3.5 * forward FLOPs

so that ``time = FLOPs / (efficiency * peak)`` with those FLOPs recovers the measured time.

:func:`attention_efficiency` turns the table into a fraction of a card's dense peak:

1. the measured card of the generation: the card itself when measured; Hopper and Blackwell take
   the H100 SXM rows; Ampere, Ada and everything else the A100 SXM rows (flagged when no card of
   that generation was measured);
2. the kernel: FlashAttention-3 on Hopper when measured, else FlashAttention-2 (FlashAttention-3
   runs on Hopper only), unless the caller names one (``triton``, the 2023 Triton kernel, was
   measured on the A100 only: elsewhere it is FlashAttention-2's rate times the A100's
   triton/flash2 ratio at the same shape, :data:`RATIO_KERNELS`);
3. the rows of that kernel, card, precision, pass and mask, interpolated linearly in
   ``log(seq_len)`` (clamped at the shortest and longest measured sequence) and then linearly in
   ``head_dim`` (clamped; the nearest when only one head dimension was measured);
4. ``efficiency = tflops / peak`` of the measured card (its catalog dense peak for the row's
   precision); the same fraction is applied to the card's own dense peak for that precision and
   returned as a fraction of ``peak_flops``.

Where the papers measured nothing the function derives and says so: a causal backward pass
(not measured on the H100) is the non-causal backward scaled by the forward pass's causal /
non-causal ratio, a rule that reproduces the A100's measured causal backward within about 7%
(tests/catalog/test_attention.py); an fp8 pass without fp8 rows (every backward) runs at the
16-bit kernel's speed.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from suanli.catalog.dates import date_problem
from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError
from suanli.i18n import N_, concat, join

#: Data file of the table.
DATA_FILE = "attention.toml"

#: Kernel id -> display name.
KERNEL_NAMES = {
    "flash2": "FlashAttention-2",
    "flash3": "FlashAttention-3",
    "cudnn": "cuDNN fused attention",
    "triton": "FlashAttention in Triton (2023)",
}
#: Kernel -> base kernel: where the generation's card has no rows of the kernel, the base's rate
#: there x their ratio on a card with both (FlashAttention-2's paper measured Triton on the A100
#: only: Fig. 4-6; Fig. 7, the H100, has none).
RATIO_KERNELS = {"triton": "flash2"}
#: Allowed values of ``pass`` and ``dtype``.
PASSES = ("forward", "backward", "forward_backward")
DTYPES = ("fp16", "bf16", "fp8")
#: Every field of a row; all are required.
FIELDS = (
    "kernel",
    "gpu_id",
    "dtype",
    "pass",
    "causal",
    "head_dim",
    "seq_len",
    "tflops",
    "source",
    "date",
    "note",
)

#: Measured card per architecture; anything else takes :data:`FALLBACK_REFERENCE`.
GENERATION_REFERENCE = {
    "Hopper": "h100-sxm-80gb",
    "Blackwell": "h100-sxm-80gb",
    "Ampere": "a100-sxm-80gb",
    "Ada Lovelace": "a100-sxm-80gb",
}
FALLBACK_REFERENCE = "a100-sxm-80gb"
#: Architectures whose default kernel is FlashAttention-3 (it runs on sm90 only).
FLASH3_ARCHITECTURES = frozenset({"Hopper"})

#: Never returned above this: no kernel runs at the datasheet rate.
MAX_EFFICIENCY = 0.98

KERNEL_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


@dataclass(frozen=True)
class AttentionPoint:
    """One measured bar: a kernel's throughput at one shape on one card."""

    kernel: str
    gpu_id: str
    dtype: str
    phase: str
    """The ``pass`` field: forward, backward or forward_backward."""
    causal: bool
    head_dim: int
    seq_len: int
    tflops: float
    """Achieved 10^12 FLOP/s in the convention of the module docstring."""
    source: str
    date: str
    note: str

    @property
    def precision_class(self) -> str:
        """``fp8``, or ``16bit`` for fp16 and bf16 (one tensor-core rate on every card here)."""
        return "fp8" if self.dtype == "fp8" else "16bit"


def _row_name(index: int, raw: Mapping[str, Any]) -> str:
    parts = [str(raw.get(k, "?")) for k in ("kernel", "gpu_id", "dtype", "pass")]
    causal = raw.get("causal")
    mask = "causal" if causal is True else ("non-causal" if causal is False else "causal=?")
    return (
        f"row {index + 1} ({' '.join(parts)} {mask} head_dim={raw.get('head_dim', '?')} "
        f"seq_len={raw.get('seq_len', '?')})"
    )


def _peaks() -> dict[str, GPU]:
    from suanli.catalog.loader import bundled_gpus

    return {g.id: g for g in bundled_gpus()}


def _reference_peak(gpu: GPU, dtype: str) -> float | None:
    """A card's dense peak for a precision (fp16 and bf16 stand in for each other)."""
    order = {"fp16": ("fp16", "bf16"), "bf16": ("bf16", "fp16"), "fp8": ("fp8",)}[dtype]
    for name in order:
        peak = gpu.peak_flops(name)
        if peak:
            return peak
    return None


def parse_attention(data: Mapping[str, Any], origin: str = DATA_FILE) -> tuple[AttentionPoint, ...]:
    """Validate the ``[[attention]]`` rows of a parsed file; a bad row is a :class:`CatalogError`
    naming the file, the row and the fix."""
    unknown_top = sorted(set(data) - {"attention"})
    if unknown_top:
        raise CatalogError(
            N_("{origin}: unknown top-level key(s) {keys}").format(
                origin=origin, keys=", ".join(unknown_top)
            )
        )
    raw_rows = data.get("attention")
    if not isinstance(raw_rows, list) or not raw_rows:
        raise CatalogError(
            N_("{origin}: needs a non-empty list of [[attention]] rows").format(origin=origin)
        )
    cards = _peaks()
    points: list[AttentionPoint] = []
    seen: set[tuple[Any, ...]] = set()
    for index, raw in enumerate(raw_rows):
        if not isinstance(raw, Mapping):
            raise CatalogError(
                N_("{origin}, row {row}: must be a table").format(origin=origin, row=index + 1)
            )
        where = f"{origin}, {_row_name(index, raw)}"
        unknown = sorted(set(raw) - set(FIELDS))
        if unknown:
            raise CatalogError(
                N_("{where}: unknown key(s) {keys}; allowed: {allowed}").format(
                    where=where, keys=", ".join(unknown), allowed=FIELDS
                )
            )
        missing = [k for k in FIELDS if k not in raw]
        if missing:
            raise CatalogError(
                N_("{where}: missing field(s) {fields}").format(
                    where=where, fields=", ".join(missing)
                )
            )
        kernel, gpu_id, dtype, phase = raw["kernel"], raw["gpu_id"], raw["dtype"], raw["pass"]
        if not isinstance(kernel, str) or not KERNEL_RE.match(kernel):
            raise CatalogError(
                N_("{where}: kernel must be a lower-case id such as {example}").format(
                    where=where, example="'flash2'"
                )
            )
        if dtype not in DTYPES:
            raise CatalogError(
                N_("{where}: dtype {dtype!r} is not one of {allowed}").format(
                    where=where, dtype=dtype, allowed=", ".join(DTYPES)
                )
            )
        if phase not in PASSES:
            raise CatalogError(
                N_("{where}: pass {phase!r} is not one of {allowed}").format(
                    where=where, phase=phase, allowed=", ".join(PASSES)
                )
            )
        if not isinstance(raw["causal"], bool):
            raise CatalogError(N_("{where}: causal must be true or false").format(where=where))
        for key, low, high in (("head_dim", 16, 1024), ("seq_len", 16, 16_777_216)):
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise CatalogError(
                    N_("{where}: {key} must be an integer in [{low}, {high}]").format(
                        where=where, key=key, low=low, high=high
                    )
                )
        tflops = raw["tflops"]
        if isinstance(tflops, bool) or not isinstance(tflops, (int, float)) or tflops <= 0:
            raise CatalogError(
                N_("{where}: tflops must be a positive number (10^12 FLOP/s)").format(where=where)
            )
        for key in ("source", "note"):
            if not isinstance(raw[key], str):
                raise CatalogError(N_("{where}: {key} must be text").format(where=where, key=key))
        if not raw["source"].strip():
            raise CatalogError(
                N_("{where}: source must name the paper and figure or repo file").format(
                    where=where
                )
            )
        problem = date_problem(raw["date"], "date")
        if problem:
            raise CatalogError(concat(where, N_(": "), problem))
        card = cards.get(gpu_id) if isinstance(gpu_id, str) else None
        if card is None:
            raise CatalogError(
                N_("{where}: gpu_id {gpu_id!r} is not a catalog id (suanli gpus)").format(
                    where=where, gpu_id=gpu_id
                )
            )
        peak = _reference_peak(card, dtype)
        if peak is None:
            raise CatalogError(
                N_("{where}: {gpu_id} has no dense {dtype} peak in the catalog").format(
                    where=where, gpu_id=gpu_id, dtype=dtype
                )
            )
        if tflops * 1e12 > peak:
            raise CatalogError(
                N_(
                    "{where}: {tflops:g} TFLOP/s exceeds {gpu_id}'s dense {dtype} peak "
                    "{peak:g}; a sparse peak or a unit slip?"
                ).format(where=where, tflops=tflops, gpu_id=gpu_id, dtype=dtype, peak=peak / 1e12)
            )
        key_ = (kernel, gpu_id, dtype, phase, raw["causal"], raw["head_dim"], raw["seq_len"])
        if key_ in seen:
            raise CatalogError(N_("{where}: duplicate of an earlier row").format(where=where))
        seen.add(key_)
        points.append(
            AttentionPoint(
                kernel=kernel,
                gpu_id=gpu_id,
                dtype=dtype,
                phase=phase,
                causal=raw["causal"],
                head_dim=raw["head_dim"],
                seq_len=raw["seq_len"],
                tflops=float(tflops),
                source=raw["source"].strip(),
                date=raw["date"],
                note=raw["note"],
            )
        )
    return tuple(points)


@lru_cache(maxsize=1)
def attention_points() -> tuple[AttentionPoint, ...]:
    """Every row of the bundled ``attention.toml``, validated (cached)."""
    from suanli.catalog.toml_data import read_data

    return parse_attention(read_data(DATA_FILE))


def reference_for(
    gpu: GPU, points: Sequence[AttentionPoint] | None = None
) -> tuple[str, str, bool]:
    """``(measured card id, default kernel, generation matched)`` for ``gpu``.

    The card itself when it has rows; else the measured card of its architecture
    (:data:`GENERATION_REFERENCE`); else the A100 with ``matched`` False. The kernel is
    FlashAttention-3 on Hopper when the measured card has FlashAttention-3 rows, else
    FlashAttention-2."""
    rows = attention_points() if points is None else points
    measured = {p.gpu_id for p in rows}
    arch = str(gpu.get("architecture") or "")
    if gpu.id in measured:
        ref, matched = gpu.id, True
    elif arch in GENERATION_REFERENCE:
        ref, matched = GENERATION_REFERENCE[arch], True
    else:
        ref, matched = FALLBACK_REFERENCE, False
    has_flash3 = any(p.gpu_id == ref and p.kernel == "flash3" for p in rows)
    kernel = "flash3" if arch in FLASH3_ARCHITECTURES and has_flash3 else "flash2"
    return ref, kernel, matched


def interpolate(curve: Sequence[tuple[int, float]], x: float, *, log: bool) -> float:
    """Linear (in ``log(x)`` when ``log``) through sorted ``(x, y)`` points, clamped at the ends
    (shared with :mod:`suanli.catalog.decode_attention`)."""
    if x <= curve[0][0]:
        return curve[0][1]
    if x >= curve[-1][0]:
        return curve[-1][1]
    scale = math.log if log else float
    for (x0, y0), (x1, y1) in itertools.pairwise(curve):
        if x0 <= x <= x1:
            w = (scale(x) - scale(x0)) / (scale(x1) - scale(x0))
            return y0 + w * (y1 - y0)
    raise AssertionError("unreachable: x lies inside the curve")  # pragma: no cover


@dataclass(frozen=True)
class _Estimate:
    efficiency: float
    """Fraction of the measured card's dense peak for ``dtype``."""
    dtype: str
    sources: tuple[str, ...]
    notes: tuple[str, ...] = ()
    """Where the shape lies outside the measured range (clamped)."""


def _estimate(
    rows: Sequence[AttentionPoint],
    peak: float,
    *,
    seq_len: int,
    head_dim: int,
) -> _Estimate:
    """Interpolate ``rows`` (one kernel, card, precision, pass and mask) at a shape."""
    by_dim: dict[int, list[tuple[int, float]]] = {}
    for p in rows:
        by_dim.setdefault(p.head_dim, []).append((p.seq_len, p.tflops * 1e12 / peak))
    curve = [(d, interpolate(sorted(pts), seq_len, log=True)) for d, pts in sorted(by_dim.items())]
    efficiency = interpolate(curve, head_dim, log=False)
    lo = max((d for d, _ in curve if d <= head_dim), default=curve[0][0])
    hi = min((d for d, _ in curve if d >= head_dim), default=curve[-1][0])
    sources = tuple(dict.fromkeys(p.source for p in rows if p.head_dim in (lo, hi)))
    notes: list[str] = []
    dims = [d for d, _ in curve]
    if not dims[0] <= head_dim <= dims[-1]:
        nearest_dim = dims[0] if head_dim < dims[0] else dims[-1]
        notes.append(N_("head dim {dim} is the nearest measured").format(dim=nearest_dim))
    seqs = sorted({p.seq_len for p in rows})
    if not seqs[0] <= seq_len <= seqs[-1]:
        nearest = seqs[0] if seq_len < seqs[0] else seqs[-1]
        notes.append(N_("held at the value measured at seq {seq:,}").format(seq=nearest))
    return _Estimate(efficiency, rows[0].dtype, sources, tuple(notes))


def attention_efficiency(
    gpu: GPU,
    peak_flops: float,
    *,
    seq_len: int,
    head_dim: int,
    causal: bool,
    backward: bool,
    kernel: str | None = None,
    dtype: str = "bf16",
) -> tuple[float, str]:
    """The fraction of ``peak_flops`` a fused attention kernel reaches on ``gpu``, and a source.

    ``peak_flops`` is the card's dense peak for the precision the attention runs in (``dtype``:
    fp16 or bf16, or fp8 for FlashAttention-3's fp8 forward). The time of the pass is then
    ``FLOPs / (fraction * peak_flops)`` with FLOPs counted as in the papers: ``4 * seq_len^2 *
    head_dim * heads`` per sequence forward, halved when ``causal``, times 2.5 for the backward
    pass (which recomputes ``Q K^T``).

    The measured card of ``gpu``'s generation supplies ``efficiency = tflops / its dense peak``,
    interpolated in ``log(seq_len)`` and ``head_dim`` (module docstring); the achieved rate is that
    efficiency times ``gpu``'s own dense peak for the measured precision, returned as a fraction of
    ``peak_flops`` (capped at :data:`MAX_EFFICIENCY`). Sources: Dao 2023, arXiv:2307.08691 Figs.
    4-7 (FlashAttention-2, A100 and H100); Shah et al. 2024, arXiv:2407.08608 Figs. 5-7
    (FlashAttention-2, FlashAttention-3, cuDNN on the H100).

    ``kernel`` picks the kernel (``flash2``, ``flash3``, ``cudnn``, ``triton``) instead of the
    default; a kernel that the measured card has no rows for is a :class:`ValueError`, except a
    :data:`RATIO_KERNELS` one, derived from its ratio to its base kernel on a card with both.
    """
    if seq_len <= 0 or head_dim <= 0:
        raise ValueError(
            N_("seq_len and head_dim must be positive, got {seq_len}, {head_dim}").format(
                seq_len=seq_len, head_dim=head_dim
            )
        )
    if peak_flops <= 0:
        raise ValueError(N_("peak_flops must be positive, got {value}").format(value=peak_flops))
    if dtype not in DTYPES:
        raise ValueError(
            N_("dtype {dtype!r} is not one of {allowed}").format(
                dtype=dtype, allowed=", ".join(DTYPES)
            )
        )
    return _efficiency(
        attention_points(),
        gpu,
        peak_flops,
        seq_len=seq_len,
        head_dim=head_dim,
        causal=causal,
        backward=backward,
        kernel=kernel,
        dtype=dtype,
    )


def _efficiency(
    points: Sequence[AttentionPoint],
    gpu: GPU,
    peak_flops: float,
    *,
    seq_len: int,
    head_dim: int,
    causal: bool,
    backward: bool,
    kernel: str | None,
    dtype: str,
) -> tuple[float, str]:
    """:func:`attention_efficiency` over a given table (the tests drop rows from it)."""
    ref_id, default_kernel, matched = reference_for(gpu, points)
    chosen = kernel or default_kernel
    on_card = [p for p in points if p.gpu_id == ref_id and p.kernel == chosen]
    if not on_card and chosen in RATIO_KERNELS:
        return _by_ratio(
            points,
            gpu,
            peak_flops,
            seq_len=seq_len,
            head_dim=head_dim,
            causal=causal,
            backward=backward,
            kernel=chosen,
            dtype=dtype,
        )
    if not on_card:
        kernels = sorted({p.kernel for p in points if p.gpu_id == ref_id})
        raise ValueError(
            N_("no {kernel!r} attention measurement on {gpu}; measured: {measured}").format(
                kernel=chosen, gpu=ref_id, measured=", ".join(kernels)
            )
        )
    ref_card = _peaks()[ref_id]
    phase = "backward" if backward else "forward"
    notes: list[str] = []
    wanted = "fp8" if dtype == "fp8" else "16bit"
    if wanted == "fp8" and not any(
        p.phase == phase and p.precision_class == "fp8" for p in on_card
    ):
        wanted = "16bit"
        notes.append(
            N_("no fp8 {phase} measurement: runs at the 16-bit kernel's rate").format(phase=phase)
        )

    def estimate(ph: str, mask: bool) -> _Estimate | None:
        rows = [
            p for p in on_card if p.phase == ph and p.causal == mask and p.precision_class == wanted
        ]
        if not rows:
            return None
        peak = _reference_peak(ref_card, rows[0].dtype)
        assert peak is not None  # checked on load
        return _estimate(rows, peak, seq_len=seq_len, head_dim=head_dim)

    est = estimate(phase, causal)
    if est is None:
        other = estimate(phase, not causal)
        fwd_same, fwd_other = estimate("forward", causal), estimate("forward", not causal)
        if other is None:
            raise ValueError(
                N_("no {kernel} {phase} measurement on {gpu}").format(
                    kernel=chosen, phase=phase, gpu=ref_id
                )
            )
        mask_word, other_word = ("causal", "non-causal") if causal else ("non-causal", "causal")
        if fwd_same is not None and fwd_other is not None:
            ratio = fwd_same.efficiency / fwd_other.efficiency
            est = _Estimate(
                other.efficiency * ratio,
                other.dtype,
                other.sources + fwd_same.sources,
                other.notes,
            )
            notes.append(
                N_(
                    "{mask} {phase} not measured: {other} {phase} x the forward "
                    "{mask}/{other} ratio {ratio:.2f}"
                ).format(mask=mask_word, phase=phase, other=other_word, ratio=ratio)
            )
        else:
            est = other
            notes.append(
                N_("{mask} {phase} not measured: {other} taken").format(
                    mask=mask_word, phase=phase, other=other_word
                )
            )
    notes.extend(est.notes)

    # The same fraction of this card's own peak for the measured precision; a card without that
    # peak in the catalog takes the fraction of ``peak_flops`` itself.
    own_peak = _reference_peak(gpu, est.dtype)
    rate = est.efficiency * (own_peak if own_peak else peak_flops)
    fraction = min(rate / peak_flops, MAX_EFFICIENCY)

    where = (
        ref_id
        if ref_id == gpu.id
        else N_("{ref}, applied to {gpu}'s own peak").format(ref=ref_id, gpu=gpu.id)
    )
    if not matched:
        where = N_("{where} (no attention measurement of this generation)").format(where=where)
    mask_txt = "causal" if causal else "non-causal"
    share = N_("{share:.0%} of {ref}'s dense {dtype} peak").format(
        share=est.efficiency, ref=ref_id, dtype=est.dtype
    )
    detail = join([share, *notes], N_("; "))
    source = N_(
        "{kernel} {phase}, {mask}, head dim {head_dim}, seq {seq:,} on {where}: {detail} "
        "({sources})"
    ).format(
        kernel=KERNEL_NAMES.get(chosen, chosen),
        phase=phase,
        mask=mask_txt,
        head_dim=head_dim,
        seq=seq_len,
        where=where,
        detail=detail,
        sources="; ".join(est.sources),
    )
    return fraction, source


def _by_ratio(
    points: Sequence[AttentionPoint],
    gpu: GPU,
    peak_flops: float,
    *,
    seq_len: int,
    head_dim: int,
    causal: bool,
    backward: bool,
    kernel: str,
    dtype: str,
) -> tuple[float, str]:
    """A :data:`RATIO_KERNELS` kernel on a generation with no rows of it: the base kernel's rate on
    ``gpu`` times the kernel / base ratio on a card that measured both (an assumption, stated in
    the source: the kernel trails the base kernel by as much on this generation as on that card)."""
    base = RATIO_KERNELS[kernel]
    both = sorted(
        {p.gpu_id for p in points if p.kernel == kernel}
        & {p.gpu_id for p in points if p.kernel == base}
    )
    if not both:
        raise ValueError(
            N_("no {kernel!r} attention measurement on any card").format(kernel=kernel)
        )
    measured = _peaks()[both[0]]
    peak = _reference_peak(measured, "fp16")
    assert peak is not None  # checked on load
    at = partial(
        _efficiency, points, seq_len=seq_len, head_dim=head_dim, causal=causal, backward=backward
    )
    ratio = at(measured, peak, kernel=kernel, dtype=dtype)[0]
    ratio /= at(measured, peak, kernel=base, dtype=dtype)[0]
    rate, base_source = at(gpu, peak_flops, kernel=base, dtype=dtype)
    source = N_(
        "{kernel} not measured on this generation: {base} x the {kernel}/{base} ratio {ratio:.2f} "
        "measured on {card} at the same pass, mask, head dim and seq (assumed to hold here); "
        "{base_source}"
    ).format(
        kernel=KERNEL_NAMES.get(kernel, kernel),
        base=KERNEL_NAMES.get(base, base),
        ratio=ratio,
        card=measured.id,
        base_source=base_source,
    )
    return min(rate * ratio, MAX_EFFICIENCY), source
