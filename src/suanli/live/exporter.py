"""A small Prometheus exporter: one HTTP endpoint, one scrape per request, never dies on a read.

The text follows the Prometheus exposition format (prometheus.io/docs/instrumenting/
exposition_formats); it is produced by :func:`suanli.live.monitor.prometheus_text`, so the same
code is tested without a server.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Seconds a connection may take to send its request: a client that holds a half-sent request
#: is dropped after this, and, one thread per connection, never delays the other scrapes.
CONNECTION_TIMEOUT_S = 5.0


def scrape() -> str:
    """Read the devices and render the metrics; a failing read is reported, not raised."""
    from suanli.live.devices import gpu_samples
    from suanli.live.monitor import prometheus_text

    try:
        return prometheus_text(gpu_samples())
    except Exception as exc:  # keep serving: the failure is a metric
        return prometheus_text([], read_error=str(exc))


class _Handler(BaseHTTPRequestHandler):
    timeout = CONNECTION_TIMEOUT_S  # socket timeout of each connection (StreamRequestHandler)

    def do_GET(self) -> None:
        if self.path.rstrip("/") not in ("", "/metrics"):
            self.send_error(404)
            return
        body = scrape().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # quiet
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or timed out is not an error worth a traceback on stderr."""
        import sys

        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


def make_server(host: str, port: int) -> ThreadingHTTPServer:
    """The exporter's server, bound (port 0: any free port): a thread per connection, each
    with a :data:`CONNECTION_TIMEOUT_S` socket timeout."""
    return _Server((host, port), _Handler)


def serve(host: str, port: int, max_requests: int | None = None) -> None:
    """Serve until interrupted (or ``max_requests`` requests, for tests)."""
    server = make_server(host, port)
    try:
        if max_requests is None:
            server.serve_forever()
        else:
            for _ in range(max_requests):
                server.handle_request()
    finally:
        server.server_close()
