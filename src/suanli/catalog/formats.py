"""Weight storage formats (``data/quant.toml``) and runtime overheads (``data/overhead.toml``).

Both are data with a source per row, validated on load like the GPU catalog.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from suanli.catalog.loader import CatalogError
from suanli.catalog.toml_cache import parse_bundled_toml
from suanli.i18n import N_

if TYPE_CHECKING:
    from suanli.catalog.gpu import GPU

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_FORMAT_KINDS = ("float", "int", "nf", "gguf")
#: What a format, KV dtype or kernel can ask of a card (:func:`card_features`).
FEATURES = ("bf16", "fp8", "fp4", "sm75", "flash-attn-2")


#: Bits per weight of Q6_K, the type llama.cpp's quantizer gives a GGUF file's ``output.weight``
#: below Q8_0 (ggml-common.h: 256 weights in 210 bytes).
GGUF_OUTPUT_BITS = 6.5625


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored: effective bits per weight including scales and zeros."""

    id: str
    name: str
    kind: str
    bits_per_weight: float
    derivation: str
    compute_dtype: str
    source: str
    date: str
    unquantized: tuple[str, ...] = ()
    notes: str = ""
    dequant_efficiency: float = 1.0
    """The share of the 16-bit streaming rate at which a decode GEMM reads these weights: the
    kernel's dequantization (measured on a real kernel; 1: none measured or none needed)."""
    dequant_source: str = ""
    needs: tuple[str, ...] = ()
    """What the card must have to run it (:data:`FEATURES`); empty: any card."""
    instead: str = ""
    """The format to use on a card that lacks ``needs``."""
    needs_source: str = ""
    cast: bool = False
    """A card that lacks ``needs`` still runs it, converted on load to ``instead`` (same bytes,
    same speed): a bf16 checkpoint on Turing runs in fp16. Views name ``instead``; a job that
    asks for it is not refused."""

    @property
    def lm_head_bytes(self) -> float:
        """Bytes per weight of the LM head as a decode step reads it: 16 bits beside quantized
        linear layers (serving engines keep ``lm_head`` unquantized); in a GGUF file Q6_K
        (6.5625 bits) below Q8_0 and the file's own type from Q8_0 up (llama.cpp
        ``src/llama-quant.cpp`` ``llama_tensor_get_type``: ``output.weight`` becomes
        ``GGML_TYPE_Q6_K`` unless it is Q8_0 already)."""
        if self.kind == "gguf":
            return (GGUF_OUTPUT_BITS if self.bits_per_weight < 8 else self.bits_per_weight) / 8
        return 2.0

    @property
    def gemm_dtype(self) -> str:
        """The precision its matmuls ask for: ``fp8`` for 8-bit float weights (W8A8: vLLM and
        TensorRT-LLM quantize activations on the fly on cards with fp8 tensor cores; elsewhere
        the device falls back to its 16-bit rate, as FP8 Marlin's W8A16 does), ``fp4`` for the
        4-bit float formats (NVFP4, MXFP4: W4A4 on Blackwell's fp4 tensor cores), else
        ``bf16``."""
        if self.kind == "float" and self.bits_per_weight == 8:
            return "fp8"
        if self.kind == "float" and self.bits_per_weight < 8:
            return "fp4"
        return "bf16"


@dataclass(frozen=True)
class Overhead:
    """A runtime memory overhead default (bytes or a fraction) with its source."""

    id: str
    description: str
    source: str
    date: str
    value_bytes: int | None = None
    value_fraction: float | None = None
    notes: str = ""


def _read(name: str) -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / name).read_text("utf-8")
    try:
        data: dict[str, Any] = parse_bundled_toml(text, f"catalog/{name}")
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{file}: not valid TOML ({error})").format(file=name, error=exc)
        ) from None
    return data


@lru_cache(maxsize=1)
def weight_formats() -> dict[str, WeightFormat]:
    """All bundled weight formats by id, validated."""
    out: dict[str, WeightFormat] = {}
    for raw in _read("quant.toml").get("format", []):
        fid = str(raw.get("id", ""))
        bits = raw.get("bits_per_weight")
        if not isinstance(bits, (int, float)) or not 1 <= bits <= 32:
            raise CatalogError(
                N_("quant.toml, format {id!r}: bits_per_weight must be in [1, 32]").format(id=fid)
            )
        if raw.get("kind") not in _FORMAT_KINDS:
            raise CatalogError(
                N_("quant.toml, format {id!r}: kind must be one of {kinds}").format(
                    id=fid, kinds=_FORMAT_KINDS
                )
            )
        for key in ("name", "derivation", "source", "date"):
            if not raw.get(key):
                raise CatalogError(
                    N_("quant.toml, format {id!r}: missing {key!r}").format(id=fid, key=key)
                )
        if fid in out:
            raise CatalogError(N_("quant.toml: duplicate format id {id!r}").format(id=fid))
        dequant = raw.get("dequant_efficiency", 1.0)
        if not isinstance(dequant, (int, float)) or not 0.1 <= dequant <= 1:
            raise CatalogError(
                N_("quant.toml, format {id!r}: dequant_efficiency must be in [0.1, 1]").format(
                    id=fid
                )
            )
        if dequant < 1 and not raw.get("dequant_source"):
            raise CatalogError(
                N_("quant.toml, format {id!r}: dequant_efficiency needs a dequant_source").format(
                    id=fid
                )
            )
        needs = raw.get("needs", [])
        if not isinstance(needs, list) or not set(needs) <= set(FEATURES):
            raise CatalogError(
                N_("quant.toml, format {id!r}: needs must list some of {features}").format(
                    id=fid, features=FEATURES
                )
            )
        if needs and not (raw.get("needs_source") and raw.get("instead")):
            raise CatalogError(
                N_("quant.toml, format {id!r}: needs wants a needs_source and an instead").format(
                    id=fid
                )
            )
        out[fid] = WeightFormat(
            id=fid,
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            bits_per_weight=float(bits),
            derivation=str(raw["derivation"]),
            compute_dtype=str(raw.get("compute_dtype", "bf16")),
            source=str(raw["source"]),
            date=str(raw["date"]),
            unquantized=tuple(raw.get("unquantized", [])),
            notes=str(raw.get("notes", "")),
            dequant_efficiency=float(dequant),
            dequant_source=str(raw.get("dequant_source", "")),
            needs=tuple(str(n) for n in needs),
            instead=str(raw.get("instead", "")),
            needs_source=str(raw.get("needs_source", "")),
            cast=bool(raw.get("cast", False)),
        )
    for fmt in out.values():
        same = fmt.instead in out and out[fmt.instead].bits_per_weight == fmt.bits_per_weight
        if fmt.instead and (fmt.instead not in out or out[fmt.instead].needs):
            raise CatalogError(
                N_("quant.toml, format {id!r}: instead must name a format any card runs").format(
                    id=fmt.id
                )
            )
        if fmt.cast and not same:
            raise CatalogError(
                N_("quant.toml, format {id!r}: cast needs an instead of the same size").format(
                    id=fmt.id
                )
            )
    return out


#: Prefix of a GGUF file's own format id: ``gguf-bits-4.8734`` (its exact average bits).
GGUF_FILE_PREFIX = "gguf-bits-"


def gguf_file_format(bits_per_weight: float) -> str:
    """The format id of a GGUF file whose tensors average ``bits_per_weight`` bits."""
    return f"{GGUF_FILE_PREFIX}{bits_per_weight:.6f}"


def get_format(format_id: str) -> WeightFormat:
    """The weight format ``format_id`` (case-insensitive); ValueError lists the known ids.
    ``gguf-bits-N`` is a GGUF file's own mix of quantisation types, N bits per weight."""
    if format_id.lower().startswith(GGUF_FILE_PREFIX):
        try:
            bits = float(format_id[len(GGUF_FILE_PREFIX) :])
        except ValueError:
            bits = float("nan")
        if not 1 <= bits <= 64:
            raise ValueError(
                N_("weight format {id!r}: the bits per weight must be 1 to 64").format(id=format_id)
            )
        return WeightFormat(
            id=format_id.lower(),
            name=N_("the GGUF file's tensors ({bits:.3f} bits per weight on average)").format(
                bits=bits
            ),
            kind="gguf",
            bits_per_weight=bits,
            derivation=N_("exact bytes of every tensor in the file's header / parameters"),
            compute_dtype="bf16",
            source=N_("the file's GGUF header (tensor types and shapes)"),
            date="",
        )
    formats = weight_formats()
    key = (
        format_id.lower().replace("_", "-")
        if format_id.lower() not in formats
        else format_id.lower()
    )
    for candidate in (format_id.lower(), key):
        if candidate in formats:
            return formats[candidate]
    raise ValueError(
        N_("unknown weight format {id!r}; use one of {known}").format(
            id=format_id, known=", ".join(formats)
        )
    )


@lru_cache(maxsize=1)
def overheads() -> dict[str, Overhead]:
    """All bundled runtime overhead defaults by id, validated."""
    out: dict[str, Overhead] = {}
    for raw in _read("overhead.toml").get("overhead", []):
        oid = str(raw.get("id", ""))
        has_bytes = "value_bytes" in raw
        has_fraction = "value_fraction" in raw
        if has_bytes == has_fraction:
            raise CatalogError(
                N_(
                    "overhead.toml, entry {id!r}: give exactly one of value_bytes, value_fraction"
                ).format(id=oid)
            )
        for key in ("description", "source", "date"):
            if not raw.get(key):
                raise CatalogError(
                    N_("overhead.toml, entry {id!r}: missing {key!r}").format(id=oid, key=key)
                )
        out[oid] = Overhead(
            id=oid,
            description=str(raw["description"]),
            source=str(raw["source"]),
            date=str(raw["date"]),
            value_bytes=int(raw["value_bytes"]) if has_bytes else None,
            value_fraction=float(raw["value_fraction"]) if has_fraction else None,
            notes=str(raw.get("notes", "")),
        )
    return out


def overhead_bytes(overhead_id: str) -> tuple[float, str]:
    """Bytes of a byte-valued overhead default and its source."""
    entry = overheads().get(overhead_id)
    if entry is None or entry.value_bytes is None:
        raise CatalogError(
            N_("overhead.toml has no byte-valued entry {id!r}").format(id=overhead_id)
        )
    return float(entry.value_bytes), f"{entry.source} ({entry.date})"


def overhead_fraction(overhead_id: str) -> tuple[float, str]:
    """A fraction-valued overhead default and its source."""
    entry = overheads().get(overhead_id)
    if entry is None or entry.value_fraction is None:
        raise CatalogError(
            N_("overhead.toml has no fraction-valued entry {id!r}").format(id=overhead_id)
        )
    return entry.value_fraction, f"{entry.source} ({entry.date})"


# --- what a card runs --------------------------------------------------------------------------

#: NVIDIA architectures by compute capability (CUDA C Programming Guide, "Compute
#: Capabilities"): the catalog names the architecture, the kernels' limits name the capability.
NVIDIA_COMPUTE_CAPABILITY = {
    "Kepler": 3.5,
    "Maxwell": 5.0,
    "Pascal": 6.0,
    "Volta": 7.0,
    "Turing": 7.5,
    "Ampere": 8.0,
    "Ada Lovelace": 8.9,
    "Hopper": 9.0,
    "Blackwell": 10.0,
}
#: AMD architectures FlashAttention-2's ROCm build supports (Dao-AILab/flash-attention README,
#: "AMD ROCm Support": MI200 and MI300, i.e. CDNA 2 and CDNA 3).
_FLASH_ATTN_2_AMD = ("CDNA 2", "CDNA 3")


def card_features(gpu: GPU) -> frozenset[str]:
    """What ``gpu`` has of :data:`FEATURES`, from the catalog: ``bf16``/``fp8``/``fp4`` where it
    lists tensor rates in them (a CPU runs bf16 in software), ``sm75`` on NVIDIA Turing and later
    (and on every other vendor, whose kernels have no such floor),
    ``flash-attn-2`` on NVIDIA Ampere and later and AMD CDNA 2/3 (FlashAttention-2's README:
    "Ampere, Ada, or Hopper GPUs"; Turing and Volta fall back to PyTorch's SDPA kernels)."""
    have = set()
    if gpu.peak_flops("bf16") or gpu.form_factor == "cpu":
        have.add("bf16")
    if gpu.peak_flops("fp8") and gpu.form_factor != "cpu":
        have.add("fp8")
    if gpu.peak_flops("fp4") and gpu.form_factor != "cpu":
        have.add("fp4")
    arch = str(gpu.get("architecture") or "")
    if gpu.vendor == "nvidia" and gpu.form_factor != "cpu":
        capability = NVIDIA_COMPUTE_CAPABILITY.get(arch, 0.0)
        if capability >= 7.5:
            have.add("sm75")
        if capability >= 8.0:
            have.add("flash-attn-2")
    else:
        have.add("sm75")  # a floor of NVIDIA's kernels; other vendors ship their own
        if gpu.vendor == "amd" and arch in _FLASH_ATTN_2_AMD:
            have.add("flash-attn-2")
    return frozenset(have)


def _lack(gpu: GPU, needs: tuple[str, ...]) -> tuple[str, ...]:
    have = card_features(gpu)
    return tuple(n for n in needs if n not in have)


def _arch(gpu: GPU) -> str:
    return str(gpu.get("architecture") or gpu.vendor)


def format_problem(gpu: GPU, format_id: str) -> str | None:
    """Why ``gpu`` cannot run weights stored in ``format_id``, with what to use instead (None:
    it can). The one rule every view asks: the fit ladder, perf, compare, plan, card."""
    fmt = get_format(format_id)
    lack = _lack(gpu, fmt.needs)
    if not lack:
        return None
    return N_(
        "{gpu} ({arch}) cannot run {format} weights (it lacks {lack}); use --quant {instead}"
    ).format(gpu=gpu.id, arch=_arch(gpu), format=fmt.id, lack=", ".join(lack), instead=fmt.instead)


def refused_format(gpu: GPU, format_id: str) -> str | None:
    """:func:`format_problem` for a job that asks for ``format_id``: None also where the card
    casts it on load to a format of the same size (bf16 weights on Turing run as fp16)."""
    return None if get_format(format_id).cast else format_problem(gpu, format_id)


def refused_kv(gpu: GPU, kv_dtype: str) -> str | None:
    """:func:`kv_problem` for a job that asks for ``kv_dtype``: None also where the card keeps
    it in its own 16-bit type (a bf16 KV cache on Turing is fp16: vLLM's ``auto``)."""
    fmt = weight_formats().get(kv_dtype)
    return None if fmt is not None and fmt.cast else kv_problem(gpu, kv_dtype)


def runnable_format(gpu: GPU, format_id: str) -> str:
    """``format_id`` where ``gpu`` runs it, else the format its row names instead (a bf16
    checkpoint runs as fp16 on a card without bf16, as vLLM casts it)."""
    fmt = get_format(format_id)
    return fmt.id if not _lack(gpu, fmt.needs) else fmt.instead


def runnable_formats(gpu: GPU, formats: tuple[str, ...]) -> tuple[str, ...]:
    """``formats`` in order, each the card cannot run replaced by its ``instead`` (once)."""
    out: list[str] = []
    for fid in formats:
        use = runnable_format(gpu, fid)
        if use not in out:
            out.append(use)
    return tuple(out)


def kv_problem(gpu: GPU, kv_dtype: str) -> str | None:
    """Why ``gpu`` cannot hold its KV cache in ``kv_dtype`` (None: it can): the same needs as
    the weight format of that name (bf16, fp8), so the rule is declared once."""
    fmt = weight_formats().get(kv_dtype)
    lack = _lack(gpu, fmt.needs) if fmt else ()
    if not lack:
        return None
    return N_(
        "{gpu} ({arch}) cannot keep the KV cache in {dtype} (it lacks {lack}); "
        "use --kv-dtype {instead}"
    ).format(
        gpu=gpu.id,
        arch=_arch(gpu),
        dtype=kv_dtype,
        lack=", ".join(lack),
        instead=runnable_kv(gpu, kv_dtype),
    )


def runnable_kv(gpu: GPU, kv_dtype: str) -> str:
    """``kv_dtype`` where ``gpu`` holds it, else the 16-bit dtype it has (bf16, else fp16)."""
    fmt = weight_formats().get(kv_dtype)
    if fmt is None or not _lack(gpu, fmt.needs):
        return kv_dtype
    return "bf16" if "bf16" in card_features(gpu) else "fp16"


def attention_problem(gpu: GPU, attention: str) -> str | None:
    """Why ``gpu`` cannot run the ``attention`` kernel (None: it can): ``flash``
    (FlashAttention-2 and later) needs Ampere or CDNA 2; ``triton`` (the 2023 Triton kernel:
    triton.ops.flash_attention raises below compute capability 8.0, and it was measured on
    NVIDIA only) needs NVIDIA Ampere or later; ``sdpa`` and ``eager`` run anywhere (PyTorch's
    SDPA picks its memory-efficient kernel where flash is missing)."""
    if attention == "triton" and (gpu.vendor != "nvidia" or _lack(gpu, ("flash-attn-2",))):
        return N_(
            "{gpu} ({arch}) cannot run the Triton FlashAttention kernel (NVIDIA Ampere or later "
            "only); use --attention sdpa"
        ).format(gpu=gpu.id, arch=_arch(gpu))
    if attention != "flash" or gpu.form_factor == "cpu":
        return None
    lack = _lack(gpu, ("flash-attn-2",))
    if not lack:
        return None
    return N_(
        "{gpu} ({arch}) has no FlashAttention-2 kernels (Ampere, Ada, Hopper, Blackwell or "
        "CDNA 2/3 only); use --attention sdpa"
    ).format(gpu=gpu.id, arch=_arch(gpu))
