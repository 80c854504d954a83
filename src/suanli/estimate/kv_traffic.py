"""The KV-cache bytes a decode step moves beyond the attention's own read (docs/speed.md,
"The cache that is copied every step").

A serving engine's decode attention reads each sequence's cache once per step and writes the
new token in place (a paged or static cache). Two pieces of transformers' eager code move more,
and both grow with the context, not with the weights (first principles on the real code):

- ``kv_update = "concat"``: ``DynamicCache`` appends the new token with ``torch.cat`` (transformers
  5.25 cache_utils.py ``DynamicLayer.update``, lines 136-137; 4.46 ``DynamicCache.update``, lines
  447-448), which allocates a new tensor and copies the old cache into it: every step reads and
  writes each layer's keys and values once more, **2 x the cache** on top of the attention's read.
  tests/estimate/test_kv_traffic.py counts the bytes the ``cat`` ops write in a real
  ``generate()`` step.
- ``gqa = "repeat"``: the model copies each KV head once per query head before attention
  (``repeat_kv``: a view by ``expand`` made contiguous by ``reshape``; transformers 4.46's
  Qwen 2 and Mistral FlashAttention-2 and SDPA classes, its Llama SDPA and eager classes, and
  every eager path since): it reads the cache and writes ``g`` copies (``g`` = query heads per
  KV head), and the attention then reads the ``g``-times larger copy: **(1 + g) x the cache**
  copied and **g x** read instead of 1 x. With ``g = 1`` (multi-head attention) ``repeat_kv``
  returns its input unchanged and nothing is copied.

A copy streams at the share of the peak bandwidth the serving profiles measure for the residual
add (a read-write streaming kernel; catalog/data/kernels.toml ``elementwise.add``), two kernels per
layer (keys and values) each at least one element-wise floor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suanli.estimate.kernels import GemmModel
from suanli.estimate.workload import InferWork
from suanli.models.spec import ModelSpec

#: Copy kernels per layer and step for each mechanism (one for the keys, one for the values).
COPIES_PER_LAYER = 2


def query_groups(spec: ModelSpec) -> int:
    """Query heads per KV head (1 for multi-head attention and for MLA, whose latent cache no
    model code repeats)."""
    att = spec.attention
    if att.kv_lora_rank or att.num_kv_heads <= 0:
        return 1
    return max(att.num_heads // att.num_kv_heads, 1)


def attention_read_factor(spec: ModelSpec, work: InferWork) -> int:
    """How many times the cache's bytes the decode attention reads: ``g`` where the KV heads are
    repeated first, else 1."""
    return query_groups(spec) if work.gqa == "repeat" else 1


def copy_factor(spec: ModelSpec, work: InferWork) -> float:
    """Bytes the cache's copies move per step, in multiples of the cache: 2 (read and write) for
    a concatenating update, ``1 + g`` (read once, write ``g`` copies) for repeated KV heads with
    ``g > 1``; they add."""
    factor = 2.0 if work.kv_update == "concat" else 0.0
    groups = query_groups(spec)
    if work.gqa == "repeat" and groups > 1:
        factor += 1 + groups
    return factor


def copy_kernels(spec: ModelSpec, work: InferWork) -> int:
    """Copy kernels per layer and step (keys and values for each mechanism that copies)."""
    updates = 1 if work.kv_update == "concat" else 0
    repeats = 1 if work.gqa == "repeat" and query_groups(spec) > 1 else 0
    return COPIES_PER_LAYER * (updates + repeats)


def copy_seconds(
    copy_bytes: Any,
    kernels_per_layer: int,
    num_layers: int,
    bandwidth_bytes_per_s: float,
    model: GemmModel,
    maximum: Callable[[Any, Any], Any] = max,
) -> Any:
    """Seconds of a step's cache copies: ``copy_bytes`` (the whole step's, one GPU) at the
    measured streaming share of a read-write element-wise kernel, split over
    ``kernels_per_layer x num_layers`` kernels each at least one element-wise floor. Floats or
    numpy arrays."""
    count = kernels_per_layer * num_layers
    if count == 0:
        return 0.0 * copy_bytes
    share = model.elementwise_efficiency().add
    each = copy_bytes / count / (bandwidth_bytes_per_s * share)
    return count * maximum(each, model.small_op_s)
