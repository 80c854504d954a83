"""Stored parameter counts from safetensors headers, without loading any weights.

A safetensors file starts with an 8-byte little-endian header length, then a JSON header that maps
each tensor name to its dtype, shape and byte offsets (format spec:
https://github.com/huggingface/safetensors#format). Only that header is read.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

from suanli.i18n import N_, message_of
from suanli.safe_files import MAX_MODEL_FILE_BYTES, UnsafeFileError, open_regular

#: Largest header we accept; the format caps it at 100 MB.
_MAX_HEADER_BYTES = 100_000_000

#: Bytes per element of safetensors dtype names.
SAFETENSORS_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


class SafetensorsError(ValueError):
    """A file is not a readable safetensors file."""


@dataclass(frozen=True)
class StoredParams:
    """What a checkpoint stores: element counts by dtype, over one or more files."""

    total: int
    by_dtype: dict[str, int] = field(default_factory=dict)
    files: int = 1

    @property
    def main_dtype(self) -> str:
        """The dtype that holds most elements (e.g. ``BF16``)."""
        return max(self.by_dtype, key=lambda k: self.by_dtype[k]) if self.by_dtype else ""


#: Dimensions of one tensor, and the largest extent of one dimension, a header may state.
_MAX_DIMS = 8
_MAX_DIM = 1 << 40


def read_header(path: str | Path) -> dict[str, object]:
    """The JSON header of one safetensors file."""
    p = Path(path)
    try:
        with open_regular(p, MAX_MODEL_FILE_BYTES) as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise SafetensorsError(
                    N_("{path} is too short to be a safetensors file").format(path=p)
                )
            (size,) = struct.unpack("<Q", head)
            if size > _MAX_HEADER_BYTES:
                raise SafetensorsError(
                    N_("{path} has an implausible header size; is it safetensors?").format(path=p)
                )
            raw = fh.read(size)
    except UnsafeFileError as exc:
        raise SafetensorsError(message_of(exc)) from None
    except OSError as exc:
        raise SafetensorsError(
            N_("cannot read {path} ({error})").format(path=p, error=exc.strerror)
        ) from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise SafetensorsError(
            N_("{path} has no valid safetensors JSON header").format(path=p)
        ) from None
    if not isinstance(header, dict):
        raise SafetensorsError(N_("{path} has no valid safetensors JSON header").format(path=p))
    return header


def count_header(header: dict[str, object]) -> dict[str, int]:
    """Element counts by dtype for the tensors of one header."""
    counts: dict[str, int] = {}
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        shape = info.get("shape", [])
        dtype = info.get("dtype", "?")
        # A header is untrusted: a shape is a short list of non-negative integers.
        if (
            not isinstance(shape, list)
            or len(shape) > _MAX_DIMS
            or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= _MAX_DIM for d in shape
            )
            or not isinstance(dtype, str)
            or len(dtype) > 16
        ):
            raise SafetensorsError(
                N_(
                    "tensor {name!r} has shape {shape} and dtype "
                    "{dtype}; not a valid safetensors header"
                ).format(name=str(name)[:60], shape=str(shape)[:40], dtype=str(dtype)[:20])
            )
        counts[dtype] = counts.get(dtype, 0) + math.prod(shape)
    return counts


def stored_params(paths: list[Path]) -> StoredParams:
    """Sum the element counts of every tensor over the given safetensors files."""
    totals: dict[str, int] = {}
    for path in paths:
        for dtype, n in count_header(read_header(path)).items():
            totals[dtype] = totals.get(dtype, 0) + n
    return StoredParams(total=sum(totals.values()), by_dtype=totals, files=len(paths))
