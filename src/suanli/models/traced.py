"""Exact by construction: build a config's model on the meta device and trace what it does.

Where ``torch`` and ``transformers`` are installed, a family suanli has no reader for is built
with ``AutoModelForCausalLM.from_config`` under ``torch.device("meta")`` (no weights are allocated,
nothing is downloaded, ``trust_remote_code`` is never passed, so a repo's own code never runs:
only architectures transformers ships can be built). On meta tensors suanli then

- counts the parameters tensor by tensor, and by module;
- measures the forward FLOPs per token with ``FlopCounterMode``, and the FLOPs of one training
  step (forward and backward of the loss);
- records what autograd saves for the backward pass with ``saved_tensors_hooks`` (distinct
  storages, parameters excluded), attributed to the decoder layer running when it was saved, in
  bf16 with eager attention, at two sequence lengths: per layer and token ``a + b·seq`` bytes
  (``b``: the attention scores). On real tensors the same hooks give the same bytes (tested);
- reads the KV cache a forward pass leaves, per token.

The profile is cached under ``traced/`` in suanli's cache directory (:func:`suanli.paths.cache_dir`:
``~/.cache/suanli`` on Linux, ``$SUANLI_CACHE`` when set) by a hash of the config, so the second
call costs what a preset costs. Nothing here is imported unless the generic path needs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

#: Tokens of the meta forward pass that measures FLOPs.
TRACE_TOKENS = 64
#: Sequence lengths of the two training traces that split saved bytes into a + b·seq.
TRACE_SEQS = (32, 64)


def _cache_dir() -> Path:
    from suanli.paths import cache_dir

    return cache_dir() / "traced"


def config_hash(cfg: dict[str, Any]) -> str:
    """A stable hash of a config's JSON (its key order does not matter)."""
    text = json.dumps(cfg, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def traced_profile(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``{"params": N, "forward_flops_per_token": F, "torch": v, "transformers": v}`` for the
    model transformers builds from ``cfg``, or None when torch/transformers are missing or the
    architecture is not one transformers ships (no remote code is ever run)."""
    key = config_hash(cfg)
    cached = _cache_dir() / f"{key}.json"
    if cached.is_file():
        try:
            data: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
            return data
        except (OSError, ValueError):
            pass
    profile = _trace(cfg)
    if profile is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps(profile), encoding="utf-8")
        except OSError:
            pass  # a read-only home: the profile is still returned
    return profile


def _trace(cfg: dict[str, Any]) -> dict[str, Any] | None:
    try:
        import torch
        import transformers
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    import logging
    import warnings

    fields = {k: v for k, v in cfg.items() if k not in ("model_type", "auto_map")}
    try:
        logging.disable(logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = transformers.AutoConfig.for_model(str(cfg.get("model_type")), **fields)
            with torch.device("meta"):
                model = transformers.AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                    config, attn_implementation="eager"
                )
    except Exception:  # an architecture transformers does not ship, or a config it refuses
        return None
    finally:
        logging.disable(logging.NOTSET)
    params = sum(p.numel() for p in model.parameters())
    flops = None
    try:
        ids = torch.zeros((1, TRACE_TOKENS), dtype=torch.long, device="meta")
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(ids, attention_mask=_mask(TRACE_TOKENS, torch.float32), use_cache=False)
        flops = counter.get_total_flops() / TRACE_TOKENS
    except Exception:  # some models cannot run on meta tensors; the count still stands
        flops = None
    profile: dict[str, Any] = {
        "params": int(params),
        "params_by_module": _params_by_module(model),
        "forward_flops_per_token": flops,
        "tokens": TRACE_TOKENS,
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
    }
    # Data-dependent ops (MoE routing) cannot run on meta: the counts above still stand.
    logging.disable(logging.WARNING)
    try:
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            profile.update(_trace_training(model.to(torch.bfloat16), config))
    finally:
        logging.disable(logging.NOTSET)
    return profile


def _params_by_module(model: Any) -> dict[str, int]:
    """Parameters grouped by their first two name components (``model.layers``, ``lm_head``)."""
    out: dict[str, int] = {}
    for name, p in model.named_parameters():
        key = ".".join(name.split(".")[:2]) if name.startswith("model.") else name.split(".")[0]
        out[key] = out.get(key, 0) + int(p.numel())
    return out


def _layers(model: Any, count: int) -> Any:
    """The ModuleList of the decoder layers (the first one with ``count`` entries)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count and count > 0:
            return module
    return None


def _trace_training(model: Any, config: Any) -> dict[str, Any]:
    """Training FLOPs, saved bytes per layer and token (a + b·seq), KV bytes per token."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    count = int(getattr(config, "num_hidden_layers", 0) or 0)
    layers = _layers(model, count)
    if layers is None:
        return {}
    model.train()
    params = {p.untyped_storage()._cdata for p in model.parameters()}
    params |= {b.untyped_storage()._cdata for b in model.buffers()}
    per_token = []
    train_flops = None
    for seq in TRACE_SEQS:
        saved = _SavedByLayer(params, count)
        hooks = []
        for i, layer in enumerate(layers):
            hooks.append(layer.register_forward_pre_hook(saved.enter(i)))
            hooks.append(layer.register_forward_hook(saved.leave))
        ids = torch.zeros((1, seq), dtype=torch.long, device="meta")
        counter = FlopCounterMode(display=False)
        try:
            with counter, torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t):
                mask = _mask(seq, torch.bfloat16)
                loss = model(ids, attention_mask=mask, labels=ids, use_cache=False).loss
                loss.backward()
        finally:
            for h in hooks:
                h.remove()
        per_token.append(sum(saved.by_layer) / count / seq)
        if seq == TRACE_SEQS[-1]:
            train_flops = counter.get_total_flops() / seq
    (s1, s2), (p1, p2) = TRACE_SEQS, per_token
    quadratic = max(0.0, (p2 - p1) / (s2 - s1))
    out: dict[str, Any] = {
        "train_flops_per_token": train_flops,
        "saved_layer_bytes": [p1 - quadratic * s1, quadratic],
        "saved_dtype": "bf16",
    }
    with torch.no_grad():
        ids = torch.zeros((1, TRACE_TOKENS), dtype=torch.long, device="meta")
        mask = _mask(TRACE_TOKENS, torch.bfloat16)
        cache = model(ids, attention_mask=mask, use_cache=True).past_key_values
    kv = _cache_bytes(cache) if cache is not None else 0
    if kv:
        out["kv_bytes_per_token"] = kv / TRACE_TOKENS
    return out


def _mask(tokens: int, dtype: Any) -> Any:
    """An explicit additive 4-D attention mask on meta: transformers builds its own mask with
    ``.item()`` checks that meta tensors cannot answer, and uses a 4-D mask as given. (Its values
    do not matter on meta; only shapes and dtypes flow.)"""
    import torch

    return torch.zeros((1, 1, tokens, tokens), dtype=dtype, device="meta")


class _SavedByLayer:
    """Distinct storages autograd saves (parameters excluded), attributed to the decoder layer
    whose forward was running when each was first saved. Meta tensors have no data pointer: a
    storage is told apart by its C++ object, and every saved tensor is kept alive until the
    trace ends so that no address is reused."""

    def __init__(self, params: set[int], layers: int) -> None:
        self.params = params
        self.seen: dict[int, int] = {}
        self.by_layer = [0] * layers
        self.current: int | None = None
        self.keep: list[Any] = []

    def enter(self, index: int) -> Any:
        def hook(_module: Any, _args: Any) -> None:
            self.current = index

        return hook

    def leave(self, _module: Any, _args: Any, _out: Any) -> None:
        self.current = None

    def pack(self, t: Any) -> Any:
        key = t.untyped_storage()._cdata
        if key not in self.params and key not in self.seen:
            self.seen[key] = int(t.untyped_storage().nbytes())
            self.keep.append(t)
            if self.current is not None:
                self.by_layer[self.current] += self.seen[key]
        return t


def _cache_bytes(cache: Any) -> int:
    """Bytes of the distinct storages of a transformers cache (keys and values per layer)."""
    tensors = []
    for layer in getattr(cache, "layers", None) or ():
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if t is not None:
                tensors.append(t)
    return sum({t.untyped_storage()._cdata: t.untyped_storage().nbytes() for t in tensors}.values())
