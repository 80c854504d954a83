"""Fuzz the web API with malformed and hostile requests and print how they were answered.

Every POST endpoint gets: each of its fields set to hostile values (NaN and infinities as
strings, numbers past 2**63, negative counts, wrong types, 100 kB strings, nested JSON), bodies
that are not JSON or not objects, nested 5,000 deep, unknown fields, wrong content types; every
config upload gets hostile configs. A response is ``4xx`` (the contract: a JSON
``{"error": ...}``), ``2xx`` (the input was valid), or ``5xx`` (a bug). Run in-process with
FastAPI's TestClient.

Run: python benchmarks/fuzz_web.py
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fastapi.testclient import TestClient  # noqa: E402

from suanli.web.app import create_app  # noqa: E402

#: A valid body per endpoint; each case breaks one field of it.
VALID: dict[str, dict[str, Any]] = {
    "/api/memory": {"model": "llama-3.1-8b", "task": "lora"},
    "/api/perf": {"model": "llama-3.1-8b", "task": "lora", "gpu": "h100"},
    "/api/plan": {"model": "llama-3.2-1b", "task": "lora", "max_gpus": 2},
    "/api/cost": {"gpu": "h100", "gpus": 8, "years": 3},
    "/api/image": {"model": "sd-1.5", "gpu": "4090"},
}
HOSTILE: list[Any] = [
    "nan",
    "inf",
    "-inf",
    float("1e308"),
    2**63,
    2**64,
    -1,
    0,
    10**12,
    1.5,
    True,
    None,
    "x" * 100_000,
    [],
    {},
    [1, 2],
    {"a": 1},
    "'; DROP TABLE",
    "\x00",
    "../../etc/passwd",
]
FIELDS = [
    "model",
    "task",
    "gpu",
    "gpus",
    "batch",
    "seq",
    "context",
    "tp",
    "pp",
    "zero",
    "lora_rank",
    "tokens",
    "price",
    "years",
    "max_gpus",
    "quant",
    "prompt",
    "output",
    "steps",
    "width",
    "height",
    "cpu_offload",
    "framework",
    "images",
    "gpu_layers",
]


def cases() -> Iterator[tuple[str, str, str | bytes, str]]:
    """(label, path, body, content type) for every hostile request."""
    for path, valid in VALID.items():
        for field in FIELDS:
            for value in HOSTILE:
                body = {**valid, field: value}
                text = json.dumps(body, allow_nan=False) if not _has_nan(value) else "{}"
                yield f"{path} {field}={str(value)[:20]!r}", path, text, "application/json"
        for label, raw in (
            ("not json", "{{{"),
            ("array", "[1, 2]"),
            ("string", '"x"'),
            ("empty", ""),
            ("nested", "[" * 5000 + "]" * 5000),
            ("nested object", '{"a":' * 5000 + "1" + "}" * 5000),
            ("NaN literal", '{"gpus": NaN}'),
            ("Infinity literal", '{"tokens": Infinity}'),
            ("unknown field", json.dumps({**valid, "zzz": 1})),
            ("utf-16", json.dumps(valid).encode("utf-16")),
        ):
            yield f"{path} {label}", path, raw, "application/json"
        yield f"{path} form body", path, "a=1", "application/x-www-form-urlencoded"
    good = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 256,
    }
    for field in (
        "num_hidden_layers",
        "hidden_size",
        "vocab_size",
        "num_local_experts",
        "max_position_embeddings",
        "mlp_only_layers",
        "sliding_window",
        "head_dim",
    ):
        for value in (10**9, 1e9, -1, "x", [1], {"a": 1}, 2**70, 0):
            for model_type in ("llama", "mixtral", "qwen3_moe", "gemma2", "unknown"):
                cfg = {**good, "model_type": model_type, field: value}
                yield (
                    f"/api/config {model_type} {field}={value!r}",
                    "/api/config",
                    json.dumps(cfg),
                    "application/json",
                )


def _has_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def main() -> None:
    """Send every case and print the table and any 5xx."""
    client = TestClient(create_app(), raise_server_exceptions=False)
    counts: Counter[str] = Counter()
    bugs = []
    slowest = 0.0
    all_cases = list(cases())
    start = time.monotonic()
    for label, path, body, ctype in all_cases:
        t0 = time.monotonic()
        res = client.post(path, content=body, headers={"content-type": ctype})
        slowest = max(slowest, time.monotonic() - t0)
        kind = f"{res.status_code // 100}xx"
        if kind == "4xx":
            try:
                ok = isinstance(res.json().get("error"), str)
            except ValueError:
                ok = False
            if not ok:
                kind = "4xx without the JSON error"
        counts[kind] += 1
        if kind not in ("2xx", "4xx"):
            bugs.append((kind, label, res.text[:120]))
    elapsed = time.monotonic() - start
    print(f"{len(all_cases)} requests in {elapsed:.0f} s (slowest {slowest:.2f} s)")
    print("| answer | requests |")
    print("|---|---:|")
    for kind in ("2xx", "4xx", "4xx without the JSON error", "5xx"):
        print(f"| {kind} | {counts[kind]} |")
    for kind, label, text in bugs:
        print(f"{kind:8s} {label} :: {text}")


if __name__ == "__main__":
    main()
