"""Measured bandwidth utilization of decode-attention kernels (``data/decode_attention.toml``).

A decode step's attention reads the whole KV cache once per token, so its time is
``KV bytes / (utilization * peak HBM bandwidth)``. Published kernel microbenchmarks show the
utilization is far from the streaming GEMM's: it climbs with batch and context length, from a few
percent (batch 1, 32 tokens) to 85-90% (long contexts), and depends on the kernel and the GQA
group size. Sources (every row of the table names its own):

- Ye et al., "Accelerating Self-Attentions for LLM Serving with FlashInfer", flashinfer.ai blog,
  2024-02-02, Fig. 6 (batch decode, FlashInfer 0.0.1 vs vLLM 0.2.6 PagedAttention v2, Llama-7B
  heads, batch 1/16/64, H100 SXM and A100 PCIe 80GB) and Fig. 9 (GQA 32/4, batch 64); values read
  off the charts, about +-2 points;
- Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference", PyTorch blog,
  2023-10-13 (run-times on an A100, converted with the KV bytes read);
- microsoft/onnxruntime PR #21414, 2024-08-29 (FlashAttention-2 paged decode, H100, nvbench BWUtil).

:func:`decode_attention_efficiency` picks the measured card of the generation (the card itself when
measured; Hopper and Blackwell take the H100 SXM rows; everything else the A100 rows, flagged unless
Ampere), then interpolates the kernel's rows linearly in ``log(context)`` along each measured batch
size and then in ``log(batch)``, clamped at the measured ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from suanli.catalog.attention import KERNEL_RE, interpolate
from suanli.catalog.dates import date_problem
from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError
from suanli.i18n import N_, concat, join
from suanli.units import dtype_bytes

#: Data file of the table.
DATA_FILE = "decode_attention.toml"

#: Kernel id -> display name.
KERNEL_NAMES = {
    "flashinfer": "FlashInfer batch decode (MHA)",
    "vllm-paged-v2": "vLLM PagedAttention v2 (MHA)",
    "flashinfer-gqa-tc": "FlashInfer GQA decode, Tensor Cores",
    "flashinfer-gqa": "FlashInfer GQA decode, CUDA cores",
    "vllm-paged-v2-gqa": "vLLM PagedAttention v2 (GQA)",
    "flash-decoding": "Flash-Decoding (FlashAttention 2.2 split-KV)",
    "flash2-paged": "FlashAttention-2 paged decode",
}

#: The default kernel: FlashInfer. It is the most widely deployed dedicated decode kernel (SGLang's
#: default attention backend, a vLLM backend, used by TensorRT-LLM and MLC-LLM), it is at or above
#: vLLM PagedAttention v2 at every measured point of its benchmark but two (where they tie within
#: the chart's reading error), and its rows are the only ones that cover several batch sizes (1,
#: 16, 64) and contexts (32 to 65,536) on both the H100 and the A100.
DEFAULT_KERNEL = "flashinfer"

DTYPES = ("fp16", "bf16", "fp8")
#: Every field of a row; all but :data:`OPTIONAL_FIELDS` are required.
FIELDS = (
    "kernel",
    "gpu_id",
    "dtype",
    "batch",
    "context",
    "num_q_heads",
    "num_kv_heads",
    "head_dim",
    "page_size",
    "bandwidth_utilization",
    "source",
    "date",
    "note",
)
OPTIONAL_FIELDS = frozenset({"page_size"})

#: Measured cards per architecture, in order of preference; anything else takes the fallback.
GENERATION_REFERENCE: dict[str, tuple[str, ...]] = {
    "Hopper": ("h100-sxm-80gb",),
    "Blackwell": ("h100-sxm-80gb",),
    "Ampere": ("a100-pcie-80gb", "a100-sxm-80gb"),
}
FALLBACK_REFERENCE = ("a100-pcie-80gb", "a100-sxm-80gb")


@dataclass(frozen=True)
class DecodePoint:
    """One measurement: a decode-attention kernel's bandwidth utilization at one shape."""

    kernel: str
    gpu_id: str
    dtype: str
    batch: int
    context: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    page_size: int | None
    bandwidth_utilization: float
    """Bytes read / kernel time / the card's peak HBM bandwidth (0-1)."""
    source: str
    date: str
    note: str


def _row_name(index: int, raw: Mapping[str, Any]) -> str:
    parts = [str(raw.get(k, "?")) for k in ("kernel", "gpu_id", "dtype")]
    return (
        f"row {index + 1} ({' '.join(parts)} batch={raw.get('batch', '?')} "
        f"context={raw.get('context', '?')})"
    )


def _card_ids() -> set[str]:
    from suanli.catalog.loader import bundled_gpus

    return {g.id for g in bundled_gpus()}


def _int_field(where: str, raw: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CatalogError(
            N_("{where}: {key} must be an integer in [{low}, {high}]").format(
                where=where, key=key, low=low, high=high
            )
        )
    return value


def parse_decode_attention(
    data: Mapping[str, Any], origin: str = DATA_FILE
) -> tuple[DecodePoint, ...]:
    """Validate the ``[[decode]]`` rows of a parsed file; a bad row is a :class:`CatalogError`
    naming the file, the row and the fix."""
    unknown_top = sorted(set(data) - {"decode"})
    if unknown_top:
        raise CatalogError(
            N_("{origin}: unknown top-level key(s) {keys}").format(
                origin=origin, keys=", ".join(unknown_top)
            )
        )
    raw_rows = data.get("decode")
    if not isinstance(raw_rows, list) or not raw_rows:
        raise CatalogError(
            N_("{origin}: needs a non-empty list of [[decode]] rows").format(origin=origin)
        )
    cards = _card_ids()
    points: list[DecodePoint] = []
    seen: set[tuple[Any, ...]] = set()
    layouts: dict[tuple[str, str], tuple[Any, ...]] = {}
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
        missing = [k for k in FIELDS if k not in raw and k not in OPTIONAL_FIELDS]
        if missing:
            raise CatalogError(
                N_("{where}: missing field(s) {fields}").format(
                    where=where, fields=", ".join(missing)
                )
            )
        kernel, gpu_id, dtype = raw["kernel"], raw["gpu_id"], raw["dtype"]
        if not isinstance(kernel, str) or not KERNEL_RE.match(kernel):
            raise CatalogError(
                N_("{where}: kernel must be a lower-case id such as {example}").format(
                    where=where, example="'flashinfer'"
                )
            )
        if dtype not in DTYPES:
            raise CatalogError(
                N_("{where}: dtype {dtype!r} is not one of {allowed}").format(
                    where=where, dtype=dtype, allowed=", ".join(DTYPES)
                )
            )
        if not isinstance(gpu_id, str) or gpu_id not in cards:
            raise CatalogError(
                N_("{where}: gpu_id {gpu_id!r} is not a catalog id (suanli gpus)").format(
                    where=where, gpu_id=gpu_id
                )
            )
        batch = _int_field(where, raw, "batch", 1, 1 << 20)
        context = _int_field(where, raw, "context", 1, 1 << 24)
        q_heads = _int_field(where, raw, "num_q_heads", 1, 1024)
        kv_heads = _int_field(where, raw, "num_kv_heads", 1, 1024)
        head_dim = _int_field(where, raw, "head_dim", 16, 1024)
        if q_heads % kv_heads:
            raise CatalogError(
                N_("{where}: num_q_heads must be a multiple of num_kv_heads").format(where=where)
            )
        page_size = _int_field(where, raw, "page_size", 1, 1 << 16) if "page_size" in raw else None
        util = raw["bandwidth_utilization"]
        if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
            raise CatalogError(
                N_(
                    "{where}: bandwidth_utilization must be a fraction in (0, 1], got {util!r}"
                ).format(where=where, util=util)
            )
        for key in ("source", "note"):
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise CatalogError(
                    N_("{where}: {key} must be non-empty text").format(where=where, key=key)
                )
        problem = date_problem(raw["date"], "date")
        if problem:
            raise CatalogError(concat(where, N_(": "), problem))
        layout = (dtype, q_heads, kv_heads, head_dim, page_size)
        if layouts.setdefault((kernel, gpu_id), layout) != layout:
            raise CatalogError(
                N_(
                    "{where}: {kernel} on {gpu_id} already has rows with dtype/heads/head_dim/page "
                    "{layout}; give another layout its own kernel id"
                ).format(
                    where=where, kernel=kernel, gpu_id=gpu_id, layout=layouts[(kernel, gpu_id)]
                )
            )
        key_ = (kernel, gpu_id, batch, context)
        if key_ in seen:
            raise CatalogError(N_("{where}: duplicate of an earlier row").format(where=where))
        seen.add(key_)
        points.append(
            DecodePoint(
                kernel=kernel,
                gpu_id=gpu_id,
                dtype=dtype,
                batch=batch,
                context=context,
                num_q_heads=q_heads,
                num_kv_heads=kv_heads,
                head_dim=head_dim,
                page_size=page_size,
                bandwidth_utilization=float(util),
                source=raw["source"].strip(),
                date=raw["date"],
                note=raw["note"],
            )
        )
    return tuple(points)


@lru_cache(maxsize=1)
def decode_attention_points() -> tuple[DecodePoint, ...]:
    """Every row of the bundled ``decode_attention.toml``, validated (cached)."""
    from suanli.catalog.toml_data import read_data

    return parse_decode_attention(read_data(DATA_FILE))


def reference_for(
    gpu: GPU, kernel: str, points: Sequence[DecodePoint] | None = None
) -> tuple[str, bool]:
    """``(measured card id, generation matched)`` for ``gpu`` and ``kernel``.

    The card itself when it has rows of the kernel; else the first card of its architecture's
    :data:`GENERATION_REFERENCE` with rows of the kernel; else the A100 fallback with ``matched``
    False. A kernel without rows on any of those cards is a :class:`ValueError`."""
    rows = decode_attention_points() if points is None else points
    measured = {p.gpu_id for p in rows if p.kernel == kernel}
    if gpu.id in measured:
        return gpu.id, True
    arch = str(gpu.get("architecture") or "")
    candidates, matched = GENERATION_REFERENCE.get(arch, FALLBACK_REFERENCE), True
    if arch not in GENERATION_REFERENCE:
        matched = False
    for ref in candidates:
        if ref in measured:
            return ref, matched
    if measured:
        raise ValueError(
            N_(
                "no {kernel!r} decode-attention measurement on {cards}; measured on: {measured}"
            ).format(
                kernel=kernel, cards=", ".join(candidates), measured=", ".join(sorted(measured))
            )
        )
    raise ValueError(
        N_("no {kernel!r} decode-attention measurement on {cards}; measured on: nothing").format(
            kernel=kernel, cards=", ".join(candidates)
        )
    )


#: Answers kept by :func:`decode_attention_efficiency` (cleared when full: a bound on memory).
MAX_CACHED_ANSWERS = 1 << 16
_ANSWERS: dict[tuple[object, ...], tuple[float, str]] = {}


def decode_attention_efficiency(
    gpu: GPU, *, batch: int, context: int, kernel: str | None = None, token_bytes: float = 0.0
) -> tuple[float, str]:
    """The fraction of ``gpu``'s peak HBM bandwidth a decode-attention kernel reaches reading the KV
    cache of ``batch`` sequences of ``context`` tokens each, and a source line.

    The measured card of the generation supplies the fraction (the card itself when measured;
    Hopper and Blackwell take the H100 SXM rows; Ampere the A100 rows; any other architecture the
    A100 rows, flagged in the source line); the same fraction applies to ``gpu``'s own bandwidth.
    Along each measured batch size the rows are interpolated linearly in ``log(context)``, then
    between the two neighbouring batch sizes linearly in ``log(batch)``; both are clamped at the
    measured ends (said in the source line).

    ``kernel`` defaults to :data:`DEFAULT_KERNEL`, FlashInfer (see there for why). Its default
    rows are the MHA layout (32 q = 32 KV heads, head dim 128, fp16) of the FlashInfer blog's Fig. 6
    (Ye et al., flashinfer.ai, 2024-02-02), read off the chart. The other ids (:data:`KERNEL_NAMES`)
    carry their own head layout: ``flashinfer-gqa-tc`` (GQA 32/4 at batch 64, Tensor Core path, up
    to 89% on H100), ``flash-decoding`` (Dao et al., PyTorch blog 2023-10-13, A100),
    ``flash2-paged`` (onnxruntime PR #21414, H100), and vLLM PagedAttention v2. A kernel
    without rows on the measured card is a :class:`ValueError`.
    """
    if batch <= 0 or context <= 0:
        raise ValueError(
            N_("batch and context must be positive, got {batch}, {context}").format(
                batch=batch, context=context
            )
        )
    points = decode_attention_points()
    # The serving search asks the same (card, batch, context) about five times over (formats
    # and TP degrees that share a KV layout): 19,116 calls, 3,951 distinct, in 'suanli plan
    # --task infer'. The answer depends on the table, the card's id and architecture and the
    # arguments only.
    key = (id(points), gpu.id, str(gpu.get("architecture") or ""), batch, context, kernel,
           token_bytes)  # fmt: skip
    found = _ANSWERS.get(key)
    if found is None:
        if len(_ANSWERS) >= MAX_CACHED_ANSWERS:
            _ANSWERS.clear()
        found = _ANSWERS[key] = _efficiency(
            points, gpu, batch=batch, context=context, kernel=kernel, token_bytes=token_bytes
        )
    return found


def _efficiency(
    points: Sequence[DecodePoint],
    gpu: GPU,
    *,
    batch: int,
    context: int,
    kernel: str | None,
    token_bytes: float = 0.0,
) -> tuple[float, str]:
    """:func:`decode_attention_efficiency` over a given table (the tests pass their own)."""
    chosen = kernel or DEFAULT_KERNEL
    if not any(p.kernel == chosen for p in points):
        known = sorted({p.kernel for p in points})
        raise ValueError(
            N_("unknown decode-attention kernel {kernel!r}; measured: {known}").format(
                kernel=chosen, known=known
            )
        )
    ref_id, matched = reference_for(gpu, chosen, points)
    rows = [p for p in points if p.kernel == chosen and p.gpu_id == ref_id]
    by_batch: dict[int, list[tuple[int, float]]] = {}
    for p in rows:
        by_batch.setdefault(p.batch, []).append((p.context, p.bandwidth_utilization))
    first = rows[0]
    row_token_bytes = 2 * first.num_kv_heads * first.head_dim * dtype_bytes(first.dtype)
    # The context that streams as many bytes per sequence in the rows' head layout.
    lookup = context * token_bytes / row_token_bytes if token_bytes > 0 else float(context)
    shortest = min(p.context for p in rows)
    curve = [
        (b, interpolate(sorted(pts), max(lookup, shortest), log=True))
        for b, pts in sorted(by_batch.items())
    ]
    fraction = interpolate(curve, batch, log=True)
    batches = [b for b, _ in curve]
    lo = max((b for b in batches if b <= batch), default=batches[0])
    hi = min((b for b in batches if b >= batch), default=batches[-1])
    if token_bytes > 0:
        # More sequences never take less time than fewer: above a measured batch the
        # utilization rises at most in proportion to the batch (the curve's log interpolation
        # can rise faster where one sequence reads little).
        fraction = min(fraction, dict(curve)[lo] * max(batch, lo) / lo)
        if lookup < shortest:
            # Fewer bytes than the shortest measured call: that call's time, not less.
            fraction *= lookup / shortest

    notes: list[str] = []
    if not batches[0] <= batch <= batches[-1]:
        notes.append(
            N_("held at batch {batch}").format(
                batch=batches[0] if batch < batches[0] else batches[-1]
            )
        )
    if token_bytes > 0 and round(lookup) != context:
        notes.append(
            N_("read at context {lookup:,}, the same bytes per sequence").format(
                lookup=max(round(lookup), 1)
            )
        )
    for b in dict.fromkeys((lo, hi)):
        ctxs = sorted(c for c, _ in by_batch[b])
        if lookup > ctxs[-1] or (token_bytes <= 0 and lookup < ctxs[0]):
            nearest = ctxs[0] if lookup < ctxs[0] else ctxs[-1]
            notes.append(
                N_("batch {batch} held at context {context:,}").format(batch=b, context=nearest)
            )
    layout = N_("{q} q / {kv} kv heads, head dim {head_dim}, {dtype}").format(
        q=first.num_q_heads, kv=first.num_kv_heads, head_dim=first.head_dim, dtype=first.dtype
    )
    where = (
        ref_id if ref_id == gpu.id else N_("{ref}, applied to {gpu}").format(ref=ref_id, gpu=gpu.id)
    )
    if not matched:
        where = N_("{where} (no decode-attention measurement of this generation)").format(
            where=where
        )
    sources = "; ".join(dict.fromkeys(p.source.split(" (")[0] for p in rows if p.batch in (lo, hi)))
    share = N_("{share:.0%} of peak HBM bandwidth").format(share=fraction)
    detail = join([share, *notes], N_("; "))
    source = N_(
        "{kernel}, batch {batch}, context {context:,} on {where} "
        "(measured at {layout}): {detail} ({sources})"
    ).format(
        kernel=KERNEL_NAMES.get(chosen, chosen),
        batch=batch,
        context=context,
        where=where,
        layout=layout,
        detail=detail,
        sources=sources,
    )
    return fraction, source
