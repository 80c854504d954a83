"""Load test of ``suanli serve`` on loopback: POST /api/plan, N requests over C connections.

The server runs in a subprocess (uvicorn, one process, 127.0.0.1, a free port) so that it and
the client do not share an interpreter. Traffic goes to 127.0.0.1 only; the loop is bounded in
count (``--requests``) and time (``--deadline``). Exits 1 if any request failed.

Run: python benchmarks/bench_web.py                    # the page's default plan, cache on
     python benchmarks/bench_web.py --no-cache         # every request runs the search
     python benchmarks/bench_web.py --distinct 50      # 50 different requests, in turn
Results: docs/web.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx

#: What the page asks for on first load: a LoRA fine-tune of Llama-3.1-8B, one GPU, every
#: catalog GPU ranked by time.
PAGE_PLAN: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "task": "lora",
    "max_gpus": 1,
    "seq": 2048,
    "dtype": "bf16",
    "precision": "mixed",
    "optimizer": "adamw",
    "tokens": 1e8,
}

SERVER = """
import sys, uvicorn
from suanli.web.app import create_app
uvicorn.run(create_app(allow_hub=False, plan_cache_size=int(sys.argv[2])), host="127.0.0.1",
            port=int(sys.argv[1]), log_level="warning")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/api/options", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not start in time")


def bodies(distinct: int) -> list[dict[str, Any]]:
    if distinct <= 1:
        return [PAGE_PLAN]
    # Different token budgets: the same search, distinct cache keys.
    return [{**PAGE_PLAN, "tokens": 1e8 + i} for i in range(distinct)]


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status = int(status_line.split()[1])
    length = None
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise ConnectionError("no Content-Length in the response")
    return status, await reader.readexactly(length)


async def load(
    port: int, requests: int, concurrency: int, payloads: list[dict[str, Any]], deadline: float
) -> tuple[list[float], list[str], float]:
    """``concurrency`` keep-alive HTTP/1.1 connections (plain asyncio streams, so that the
    client costs little CPU next to the server), ``requests`` POSTs in all."""
    latencies: list[float] = []
    errors: list[str] = []
    issued = 0
    wire = []
    for body in payloads:
        data = json.dumps(body).encode()
        head = (
            f"POST /api/plan HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        wire.append(head.encode() + data)

    async def worker() -> None:
        nonlocal issued
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while issued < requests and time.monotonic() < deadline:
                request = wire[issued % len(wire)]
                issued += 1
                start = time.perf_counter()
                try:
                    writer.write(request)
                    await writer.drain()
                    status, body = await asyncio.wait_for(_read_response(reader), 120)
                    if status != 200 or b'"rows":[{' not in body:
                        errors.append(f"{status}: {body[:120]!r}")
                except (OSError, ConnectionError, asyncio.TimeoutError, ValueError) as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                latencies.append(time.perf_counter() - start)
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, errors, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=1, help="different request bodies")
    parser.add_argument("--no-cache", action="store_true", help="turn the plan cache off")
    parser.add_argument("--deadline", type=float, default=1800.0, help="seconds, at most")
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cache = "0" if args.no_cache else "128"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), cache], env=env)
    try:
        wait_ready(base, proc)
        payloads = bodies(args.distinct)
        # One request first, so that imports and the first search are not in the figures.
        httpx.post(base + "/api/plan", json=payloads[0], timeout=120).raise_for_status()
        latencies, errors, elapsed = asyncio.run(
            load(
                port,
                args.requests,
                args.concurrency,
                payloads,
                time.monotonic() + args.deadline,
            )
        )
    finally:
        proc.terminate()
        proc.wait(10)

    ms = [x * 1e3 for x in latencies]
    result = {
        "requests": len(latencies),
        "concurrency": args.concurrency,
        "distinct_bodies": len(payloads),
        "plan_cache": not args.no_cache,
        "errors": len(errors),
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "mean_ms": round(statistics.fmean(ms), 1),
        "cpus": os.cpu_count(),
    }
    print(
        f"POST /api/plan: {result['requests']:,} requests over {args.concurrency} connections "
        f"({len(payloads)} distinct bodies, plan cache {'on' if result['plan_cache'] else 'off'}) "
        f"in {elapsed:.1f} s: {result['requests_per_s']:,} requests/s, "
        f"p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms, "
        f"max {result['max_ms']} ms; {len(errors)} errors"
    )
    for line in errors[:5]:
        print("  error:", line)
    if args.json:
        print(json.dumps(result))
    if errors or len(latencies) < args.requests:
        sys.exit(1)


if __name__ == "__main__":
    main()
