"""Exact by construction: build a config's model on the meta device and count what it holds.

Where ``torch`` and ``transformers`` are installed, a family suanli has no reader for is built
with ``AutoModelForCausalLM.from_config`` under ``torch.device("meta")`` (no weights are allocated,
nothing is downloaded, ``trust_remote_code`` is never passed, so a repo's own code never runs:
only architectures transformers ships can be built), and its parameters are counted tensor by
tensor, and its forward FLOPs per token measured with ``FlopCounterMode`` on a short meta input.
The profile is cached under ``~/.cache/suanli/traced`` by a hash of the config, so the second
call costs what a preset costs. Nothing here is imported unless the generic path needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

#: Tokens of the meta forward pass that measures FLOPs.
TRACE_TOKENS = 64


def _cache_dir() -> Path:
    base = os.environ.get("SUANLI_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "suanli"
    return root / "traced"


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
            model(ids, use_cache=False)
        flops = counter.get_total_flops() / TRACE_TOKENS
    except Exception:  # some models cannot run on meta tensors; the count still stands
        flops = None
    return {
        "params": int(params),
        "forward_flops_per_token": flops,
        "tokens": TRACE_TOKENS,
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
    }
