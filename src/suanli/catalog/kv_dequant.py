"""How fast a serving engine's decode-attention kernel converts an fp8 KV cache back to 16 bits
(``data/kv_dequant.toml``).

An fp8 cache halves the bytes a decode step reads; the kernel then converts every element to
16 bits before its matrix products. aiconfigurator's kernel timings of the same call with a bf16
and an fp8 cache put that conversion at 3-6 T elements/s in vLLM's and SGLang's FlashAttention-3
kernels on Hopper, so an fp8 call there takes 0.6-0.9 of the bf16 call's time, not half.
TensorRT-LLM's kernels show almost no cost, and Blackwell's are faster. A step's extra time is
``elements / rate`` (:func:`fp8_kv_rate`); only measured (card, engine) pairs are charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from suanli.catalog.loader import CatalogError
from suanli.i18n import N_

DATA_FILE = "kv_dequant.toml"
#: Where the rates come from, for the answers that quote them.
SOURCE = (
    "ai-dynamo/aiconfigurator 095f58a5 decode-attention tables, bf16 against fp8 KV "
    "(scripts/extract_aic_fp8_kv.py)"
)


@dataclass(frozen=True, kw_only=True)
class KvDequant:
    """One engine's measured fp8-KV conversion rate on one card."""

    gpu_id: str
    engine: str
    version: str
    kernel: str
    elements_per_s: float
    """``math.inf``: the fp8 call takes half the bf16 call's time or less."""


@lru_cache(maxsize=1)
def kv_dequant_rates() -> dict[tuple[str, str], KvDequant]:
    """The bundled rates by (card id, engine id), validated (cached)."""
    from suanli.catalog.toml_data import read_data

    out: dict[tuple[str, str], KvDequant] = {}
    for raw in read_data(DATA_FILE).get("fp8_kv", []):
        rate = float(raw["elements_per_s"])
        if not rate > 0 or math.isnan(rate):
            raise CatalogError(
                N_("{file}: elements_per_s must be > 0, got {value}").format(
                    file=DATA_FILE, value=rate
                )
            )
        row = KvDequant(
            gpu_id=str(raw["gpu_id"]),
            engine=str(raw["engine"]),
            version=str(raw["version"]),
            kernel=str(raw["kernel"]),
            elements_per_s=rate,
        )
        out[(row.gpu_id, row.engine)] = row
    return out


def fp8_kv_rate(gpu_id: str, engine: str | None) -> KvDequant | None:
    """The measured fp8-KV conversion of ``engine`` on ``gpu_id``; ``None`` where nobody here
    measured that pair (the cache is then charged its bytes only)."""
    if engine is None:
        return None
    return kv_dequant_rates().get((gpu_id, engine))
