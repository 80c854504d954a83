"""All-reduce across local processes: the message sizes, and the ranks run by
:mod:`suanli.live.bench_worker` under a deadline."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from suanli.i18n import N_
from suanli.live.bench.device import MiB
from suanli.live.bench.profile import AllReduceResult, AllReduceSize

#: All-reduce message sizes in bytes.
CUDA_SIZES = (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
CUDA_QUICK_SIZES = (1 * MiB, 16 * MiB, 256 * MiB)
CPU_SIZES = (64 * 1024, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB)
CPU_QUICK_SIZES = (64 * 1024, 1 * MiB, 4 * MiB)


# --------------------------------------------------------------------------- all-reduce


#: The largest all-reduce message and the most sizes one run measures (bounded work).
MAX_MESSAGE_BYTES = 16 << 30
MAX_SIZES = 32


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"64K,1M,256M"`` -> bytes (K, M, G binary; a plain number is bytes)."""
    sizes = []
    for raw in text.replace(" ", "").split(","):
        if not raw:
            continue
        match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)(?:I?B)?", raw.upper())
        if not match:
            raise ValueError(
                N_("bad message size {size!r}; use bytes or K/M/G, e.g. 1M,64M").format(size=raw)
            )
        mult = {"": 1, "K": 1024, "M": MiB, "G": 1024 * MiB}[match.group(2)]
        value = int(float(match.group(1)) * mult)
        if value < 4:
            raise ValueError(N_("message size {size!r} is below 4 bytes").format(size=raw))
        if value > MAX_MESSAGE_BYTES:
            raise ValueError(
                N_("message size {size!r} is above 16G; give at most 16G").format(size=raw)
            )
        sizes.append(value)
        if len(sizes) > MAX_SIZES:
            raise ValueError(N_("give at most {most} message sizes").format(most=MAX_SIZES))
    if not sizes:
        raise ValueError(N_("no message sizes given; give some, e.g. 1M,64M"))
    return tuple(sorted(set(sizes)))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def bench_allreduce(
    processes: int,
    device: str = "cpu",
    *,
    quick: bool = True,
    sizes: Sequence[int] | None = None,
    timeout_s: float | None = None,
    use_torchrun: bool = False,
) -> AllReduceResult:
    """All-reduce algbw/busbw over ``sizes`` across ``processes`` local ranks (gloo on the CPU,
    NCCL on GPUs), each rank a :mod:`suanli.live.bench_worker` process on 127.0.0.1 and a free
    port. The ranks are started directly with torchrun's environment (RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT), or through ``torchrun`` with ``use_torchrun``.
    Everything is killed after ``timeout_s``; a failure is reported in ``note``, not raised.
    """
    cuda = device.startswith("cuda")
    backend = "nccl" if cuda else "gloo"
    if processes < 2:
        return AllReduceResult(
            backend, processes, (), None, N_("skipped: needs 2 or more processes")
        )
    if cuda:
        import torch

        if processes > torch.cuda.device_count():
            raise ValueError(
                N_("--processes {count} needs {count} GPUs; this machine has {gpus}").format(
                    count=processes, gpus=torch.cuda.device_count()
                )
            )
    if sizes is None:
        sizes = (
            (CUDA_QUICK_SIZES if quick else CUDA_SIZES)
            if cuda
            else (CPU_QUICK_SIZES if quick else CPU_SIZES)
        )
    sizes = tuple(sorted(set(int(s) for s in sizes)))
    per_size = 1.0 if quick else 3.0
    if timeout_s is None:
        timeout_s = 60.0 + per_size * 3 * len(sizes)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="suanli-bench-") as tmp:
        out_path = Path(tmp) / "allreduce.json"
        err_path = Path(tmp) / "stderr.txt"
        worker_args = [
            "-m",
            "suanli.live.bench_worker",
            "--backend",
            backend,
            "--sizes",
            ",".join(str(s) for s in sizes),
            "--target-seconds",
            str(per_size),
            "--warmup",
            "5" if quick else "20",
            "--timeout",
            str(int(timeout_s)),
            "--output",
            str(out_path),
        ]
        base_env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        if not cuda:
            threads = max(1, (os.cpu_count() or 1) // processes)
            base_env.setdefault("OMP_NUM_THREADS", str(threads))
        procs: list[subprocess.Popen[bytes]] = []
        with open(err_path, "wb") as err:
            if use_torchrun:
                cmd = [
                    sys.executable,
                    "-m",
                    "torch.distributed.run",
                    "--nnodes",
                    "1",
                    "--nproc-per-node",
                    str(processes),
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                    *worker_args,
                ]
                procs.append(
                    subprocess.Popen(
                        cmd, env=base_env, stdout=err, stderr=err, start_new_session=True
                    )
                )
            else:
                for rank in range(processes):
                    env = {
                        **base_env,
                        "RANK": str(rank),
                        "LOCAL_RANK": str(rank),
                        "WORLD_SIZE": str(processes),
                        "LOCAL_WORLD_SIZE": str(processes),
                    }
                    procs.append(
                        subprocess.Popen(
                            [sys.executable, *worker_args],
                            env=env,
                            stdout=err,
                            stderr=err,
                            start_new_session=True,
                        )
                    )
            deadline = time.monotonic() + timeout_s
            failed = ""
            for proc in procs:
                try:
                    code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    failed = N_("timed out after {seconds:.0f} s").format(seconds=timeout_s)
                    break
                if code != 0 and not failed:
                    failed = N_("a rank exited with status {status}").format(status=code)
            for proc in procs:
                if proc.poll() is None:
                    _kill_group(proc)
                    proc.wait()
        if failed or not out_path.exists():
            tail = err_path.read_text(errors="replace").strip().splitlines()[-3:]
            detail = " | ".join(line.strip() for line in tail)
            why = failed or N_("no result written")
            note = (
                N_("failed: {why} ({output})").format(why=why, output=detail)
                if detail
                else N_("failed: {why}").format(why=why)
            )
            return AllReduceResult(backend, processes, (), None, note)
        doc = json.loads(out_path.read_text())
    rows = tuple(
        AllReduceSize(
            bytes=int(r["bytes"]),
            iterations=int(r["iterations"]),
            time_s=float(r["time_s"]),
            algbw_bytes_per_s=float(r["algbw_bytes_per_s"]),
            busbw_bytes_per_s=float(r["busbw_bytes_per_s"]),
        )
        for r in doc["sizes"]
    )
    best = max((r.busbw_bytes_per_s for r in rows), default=None)
    return AllReduceResult(backend, processes, rows, best)
