"""Read a ``.gguf`` file's header: metadata and tensor infos, never the tensor data.

GGUF (llama.cpp's format, ggml-org/ggml docs/gguf.md) starts with the magic ``GGUF``, a version
(2 or 3), the tensor count, the metadata count, the metadata key/value pairs, and one info per
tensor (name, shape, ggml type, offset). That is all suanli reads: a few hundred kilobytes at
most, with every count and length bounded, so a hostile file cannot make it read or allocate
without limit. From the header come the architecture (as a Hugging Face style config for the
family readers), every tensor's quantisation type and the exact weight bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from suanli.i18n import N_, message_of
from suanli.safe_files import MAX_MODEL_FILE_BYTES, UnsafeFileError, open_regular

MAGIC = b"GGUF"
#: Bounds on what a header may claim (far above any real model), so reading stays bounded.
MAX_TENSORS = 1_000_000
MAX_METADATA = 100_000
MAX_STRING = 1 << 20
MAX_ARRAY = 10_000_000
MAX_DIMS = 8

#: ggml type id -> (name, elements per block, bytes per block): ggml/src/ggml.c type_traits
#: (the same table as gguf-py's GGML_QUANT_SIZES; tests/models check it against the package).
#: Q8_1 (9) and Q8_K (15) are only ever activations inside ggml, but Q8_K's size is certain.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}

# Metadata value types (gguf.md): uint8 .. float64, bool, string, array.
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """The file is not a GGUF file suanli can read; the message says why."""


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor's info: its name, shape (ggml order, fastest dimension first) and type."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int

    @property
    def elements(self) -> int:
        """Elements in the tensor."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def type_name(self) -> str:
        """``Q4_K``, ``F16``, ..."""
        return GGML_TYPES.get(self.ggml_type, (f"type {self.ggml_type}", 1, 0))[0]

    @property
    def nbytes(self) -> int:
        """Bytes the tensor's data takes in the file (whole blocks)."""
        _, block, size = GGML_TYPES[self.ggml_type]
        return -(-self.elements // block) * size


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF file's header says."""

    version: int
    metadata: dict[str, Any]
    """Key/value metadata; arrays longer than 64 items are kept as their length only."""
    tensors: tuple[GGUFTensor, ...]

    @property
    def architecture(self) -> str:
        """``general.architecture`` (``llama``, ``qwen2``, ...)."""
        return str(self.metadata.get("general.architecture", ""))

    @property
    def weight_bytes(self) -> int:
        """Bytes of every tensor's data: what the weights take in memory."""
        return sum(t.nbytes for t in self.tensors)

    @property
    def parameters(self) -> int:
        """Elements of every tensor."""
        return sum(t.elements for t in self.tensors)

    def types(self) -> dict[str, int]:
        """Tensor count per quantisation type."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.type_name] = out.get(t.type_name, 0) + 1
        return out


class _Reader:
    def __init__(self, f: BinaryIO, path: str) -> None:
        self.f, self.path = f, path

    def take(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise GGUFError(
                N_("{path}: the header ends early; the file is truncated").format(path=self.path)
            )
        return data

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        if n > MAX_STRING:
            raise GGUFError(
                N_("{path}: a header string claims {count} bytes; not a sane GGUF file").format(
                    path=self.path, count=n
                )
            )
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, kind: int, depth: int = 0) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY and depth < 2:
            item = self.scalar("<I")
            n = self.scalar("<Q")
            if n > MAX_ARRAY:
                raise GGUFError(
                    N_("{path}: a metadata array claims {count} items").format(
                        path=self.path, count=n
                    )
                )
            if n > 64:  # a vocabulary or merges list: read past it, keep its length
                for _ in range(n):
                    self.value(item, depth + 1)
                return n
            return [self.value(item, depth + 1) for _ in range(n)]
        raise GGUFError(
            N_("{path}: unknown metadata value type {kind}").format(path=self.path, kind=kind)
        )


def read_gguf(path: str | Path) -> GGUFHeader:
    """The header of the GGUF file at ``path`` (GGUFError when it is not one)."""
    name = str(path)
    try:
        with open_regular(path, MAX_MODEL_FILE_BYTES) as f:
            return read_gguf_stream(f, name)
    except UnsafeFileError as exc:
        raise GGUFError(message_of(exc)) from None
    except OSError as exc:
        raise GGUFError(
            N_("cannot read {path} ({error}); check the path").format(path=name, error=exc.strerror)
        ) from None


def read_gguf_stream(f: BinaryIO, name: str) -> GGUFHeader:
    """The header read from ``f`` from its start (a local file, or a remote file whose reads are
    HTTP range requests): only the header's bytes are read, never the tensor data."""
    r = _Reader(f, name)
    if r.take(4) != MAGIC:
        raise GGUFError(
            N_("{path} is not a GGUF file (no 'GGUF' magic at its start)").format(path=name)
        )
    version = r.scalar("<I")
    if version not in (2, 3):
        raise GGUFError(
            N_("{path}: GGUF version {version} is not supported (2 and 3 are)").format(
                path=name, version=version
            )
        )
    n_tensors, n_meta = r.scalar("<Q"), r.scalar("<Q")
    if n_tensors > MAX_TENSORS or n_meta > MAX_METADATA:
        raise GGUFError(
            N_(
                "{path}: the header claims {tensors} tensors and {entries} metadata "
                "entries; not a sane GGUF file"
            ).format(path=name, tensors=n_tensors, entries=n_meta)
        )
    metadata: dict[str, Any] = {}
    for _ in range(n_meta):
        key = r.string()
        metadata[key] = r.value(r.scalar("<I"))
    tensors = []
    for _ in range(n_tensors):
        tname = r.string()
        dims = r.scalar("<I")
        if dims > MAX_DIMS:
            raise GGUFError(
                N_("{path}: tensor {tensor!r} claims {dims} dimensions").format(
                    path=name, tensor=tname, dims=dims
                )
            )
        shape = tuple(r.scalar("<Q") for _ in range(dims))
        ggml_type = r.scalar("<I")
        r.scalar("<Q")  # offset into the data section: not needed
        if ggml_type not in GGML_TYPES:
            raise GGUFError(
                N_(
                    "{path}: tensor {tensor!r} has ggml type {type}, which suanli does "
                    "not know; update suanli"
                ).format(path=name, tensor=tname, type=ggml_type)
            )
        tensors.append(GGUFTensor(tname, shape, ggml_type))
    return GGUFHeader(version, metadata, tuple(tensors))


#: GGUF architecture names -> Hugging Face model_type (the readers' keys).
ARCHITECTURES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
    "deepseek2": "deepseek_v2",
    "starcoder2": "starcoder2",
    "olmo2": "olmo2",
    "granite": "granite",
}


def hf_config(header: GGUFHeader) -> dict[str, Any]:
    """A Hugging Face style config for the family readers, from the header's metadata."""
    arch = header.architecture
    if arch not in ARCHITECTURES:
        raise GGUFError(
            N_("GGUF architecture {arch!r} is not one suanli reads yet; known: {known}").format(
                arch=arch, known=", ".join(sorted(ARCHITECTURES))
            )
        )
    meta = header.metadata

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{key}", default)

    names = {t.name for t in header.tensors}
    embd = next((t for t in header.tensors if t.name == "token_embd.weight"), None)
    vocab = embd.shape[1] if embd is not None and len(embd.shape) == 2 else None
    tokens = meta.get("tokenizer.ggml.tokens")
    if vocab is None:
        vocab = tokens if isinstance(tokens, int) else len(tokens or [])
    heads = get("attention.head_count")
    model_type = ARCHITECTURES[arch]
    if model_type in ("llama", "mistral") and get("expert_count"):
        # llama.cpp stores Mixtral as architecture "llama" with expert counts (convert_hf_to_gguf:
        # MixtralModel writes LLAMA): read as the MoE it is, not a dense 7B.
        model_type = "mixtral"
    cfg: dict[str, Any] = {
        "model_type": model_type,
        "hidden_size": get("embedding_length"),
        "num_hidden_layers": get("block_count"),
        "intermediate_size": get("feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": get("attention.head_count_kv", heads),
        "vocab_size": vocab,
        "max_position_embeddings": get("context_length", 0),
        "tie_word_embeddings": "output.weight" not in names,
    }
    if get("attention.key_length") is not None:
        cfg["head_dim"] = get("attention.key_length")
    if get("expert_count"):
        cfg["num_local_experts"] = cfg["num_experts"] = get("expert_count")
        cfg["num_experts_per_tok"] = get("expert_used_count")
        if get("expert_feed_forward_length"):
            cfg["moe_intermediate_size"] = get("expert_feed_forward_length")
    if get("attention.sliding_window") is not None:
        cfg["sliding_window"] = get("attention.sliding_window")
    if "blk.0.attn_q.bias" in names:
        cfg["attention_bias"] = True
    return {k: v for k, v in cfg.items() if v is not None}
