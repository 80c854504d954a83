"""A real ``suanli serve`` in a subprocess, on a free loopback port (for tests that need the
HTTP layer or the process tree, not FastAPI's TestClient)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time


def start_serve(
    open_files: int | None = None, stderr: int | None = subprocess.DEVNULL
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``python -m suanli serve`` on a free port and wait (up to 60 s) until it accepts
    connections; the caller stops it. ``open_files``: the server's open-file limit, soft and hard
    (a desktop's 1,024, scaled down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])

    def limit() -> None:
        if open_files is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    server = subprocess.Popen(
        [sys.executable, "-m", "suanli", "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        preexec_fn=limit,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    return server, port
