"""Measure what PyTorch really holds during a training step, on any device (CPU included).

These are the measurements the memory estimator is tested against: parameter, gradient and
optimizer-state bytes, the bytes autograd saves for the backward pass (captured with
``torch.autograd.graph.saved_tensors_hooks``, de-duplicated by storage, parameters excluded),
and the bytes of a KV cache. torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SavedBytes:
    """Bytes held for backward after one forward pass."""

    saved_bytes: int
    """Distinct storages saved by autograd, parameters and their views excluded."""
    storages: int
    """How many distinct storages that is."""
    by_dtype: dict[str, int]


def _storage_key(t: Any) -> tuple[int, int]:
    st = t.untyped_storage()
    return (st.data_ptr(), st.nbytes())


def saved_for_backward(model: Any, forward: Any) -> tuple[SavedBytes, Any]:
    """Run ``forward()`` (a no-argument callable) and record what autograd saves.

    Returns the measurement and the forward's result (so the caller can run backward).
    """
    import torch

    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    param_ptrs |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    seen: dict[tuple[int, int], str] = {}

    def pack(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            key = _storage_key(t)
            if key[0] not in param_ptrs and key[1] > 0:
                seen.setdefault(key, str(t.dtype).replace("torch.", ""))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = forward()
    by_dtype: dict[str, int] = {}
    for (_, nbytes), dtype in seen.items():
        by_dtype[dtype] = by_dtype.get(dtype, 0) + nbytes
    return SavedBytes(sum(by_dtype.values()), len(seen), by_dtype), result


def tensor_bytes(tensors: Any) -> int:
    """Bytes of distinct storages among ``tensors`` (an iterable of tensors, or nested tuples)."""
    import torch

    seen: dict[int, int] = {}

    def visit(obj: Any) -> None:
        if isinstance(obj, torch.Tensor):
            st = obj.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                visit(item)
        elif isinstance(obj, dict):
            for item in obj.values():
                visit(item)

    visit(tensors)
    return sum(seen.values())


def optimizer_state_bytes(optimizer: Any) -> int:
    """Bytes of every tensor in ``optimizer.state`` (after at least one step)."""
    return tensor_bytes([dict(s) for s in optimizer.state.values()])


def kv_cache_bytes(cache: Any) -> int:
    """Bytes of a transformers cache object (``past_key_values``) or a tuple of tensors."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        tensors = []
        for layer in layers:
            for name in ("keys", "values"):
                t = getattr(layer, name, None)
                if t is not None:
                    tensors.append(t)
        return tensor_bytes(tensors)
    for attr in ("key_cache", "value_cache"):
        if hasattr(cache, attr):
            return tensor_bytes([cache.key_cache, cache.value_cache])
    return tensor_bytes(cache)
