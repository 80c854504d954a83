"""Parameter counts of a live PyTorch ``nn.Module``, without allocating weights.

Build the module on the meta device (``with torch.device("meta"): model = ...``) and pass it
here: shapes and dtypes are all that is read. torch is never imported by this module; the object
passed in brings it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ModuleParams:
    """Parameters of a module: count, bytes and their split by dtype."""

    total: int
    total_bytes: int
    by_dtype: dict[str, int] = field(default_factory=dict)
    """Element counts keyed by dtype name (``bfloat16``, ``float32``...)."""
    trainable: int = 0
    """Elements with ``requires_grad``."""


def module_params(module: Any) -> ModuleParams:
    """Exact parameter count and bytes of ``module``; shared (tied) tensors count once."""
    seen: set[int] = set()
    total = total_bytes = trainable = 0
    by_dtype: dict[str, int] = {}
    for param in module.parameters():
        if id(param) in seen:
            continue
        seen.add(id(param))
        n = int(param.numel())
        total += n
        total_bytes += n * int(param.element_size())
        name = str(param.dtype).replace("torch.", "")
        by_dtype[name] = by_dtype.get(name, 0) + n
        if param.requires_grad:
            trainable += n
    return ModuleParams(
        total=total, total_bytes=total_bytes, by_dtype=by_dtype, trainable=trainable
    )
