"""Fuzz the web API with malformed and hostile requests and print how they were answered.

Every POST endpoint gets: each of its fields set to hostile values (NaN and infinities as
strings, numbers past 2**63, negative counts, wrong types, 100 kB strings, nested JSON), bodies
that are not JSON or not objects, nested 5,000 deep, unknown fields, wrong content types; every
config upload gets hostile configs. A response is ``4xx`` (the contract: a JSON
``{"error": ...}``), ``2xx`` (the input was valid), or ``5xx`` (a bug). Run in-process with
FastAPI's TestClient.

``--memory-gib 4`` caps the address space of this process and its search workers first (the
closest this machine has to a 4 GiB container); the peak resident memory is printed.

Run: python benchmarks/fuzz_web.py [--memory-gib 4]
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
    import argparse
    import resource

    parser = argparse.ArgumentParser()
    parser.add_argument("--memory-gib", type=float, default=None)
    parser.add_argument("--cgroup-gib", type=float, default=None)
    args = parser.parse_args()
    if args.cgroup_gib:
        _against_a_server_in_a_cgroup(args.cgroup_gib)
        return
    if args.memory_gib:
        cap = int(args.memory_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        print(f"address space capped at {args.memory_gib:g} GiB (server and workers)")
    client = TestClient(create_app(), raise_server_exceptions=False)
    _run(client)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: server {peak_mib:.0f} MiB, search workers {_workers_peak()}")


def _against_a_server_in_a_cgroup(gib: float) -> None:
    """A real ``suanli serve`` (and its search workers) in a cgroup-v1 memory group of ``gib``
    GiB (Linux, root): every case over HTTP, then whether it still answers and its peak."""
    import os
    import socket
    import subprocess

    import httpx

    group = Path(f"/sys/fs/cgroup/memory/suanli-fuzz-{os.getpid()}")
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(int(gib * 2**30)))
        swap = group / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(int(gib * 2**30)))  # no escape into swap
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        procs = str(group / "cgroup.procs")

        def enter() -> None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        server = subprocess.Popen(
            [sys.executable, "-m", "suanli", "serve", "--port", str(port)],
            preexec_fn=enter,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    httpx.get(base + "/api/options", timeout=2)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            print(f"a real suanli serve in a {gib:g} GiB memory cgroup (server and workers)")
            with httpx.Client(base_url=base, timeout=120) as client:
                _run(client)
                alive = client.get("/api/gpus").status_code == 200
            peak = int((group / "memory.max_usage_in_bytes").read_text())
            fails = int((group / "memory.failcnt").read_text())
            print(
                f"still answering after the run: {alive}; the group's peak "
                f"{peak / 2**20:.0f} MiB of {gib * 1024:.0f} MiB, limit reached {fails} times"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        time.sleep(0.5)
        group.rmdir()


def _run(client: Any) -> None:
    """Send every case through ``client`` (TestClient or httpx) and print the table."""
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


def _workers_peak() -> str:
    """The search workers' peak resident memory (Linux's VmHWM), still running."""
    from suanli.web import workers

    pool = workers._pool
    peaks = []
    for pid in getattr(pool, "_processes", {}) or {}:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kib = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmHWM")), 0)
        peaks.append(f"{kib / 1024:.0f} MiB")
    return ", ".join(peaks) or "none running"


if __name__ == "__main__":
    main()
