"""A small Prometheus exporter: one HTTP endpoint, one scrape per request, never dies on a read.

The text follows the Prometheus exposition format (prometheus.io/docs/instrumenting/
exposition_formats); it is produced by :func:`suanli.live.monitor.prometheus_text`, so the same
code is tested without a server.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


def scrape() -> str:
    """Read the devices and render the metrics; a failing read is reported, not raised."""
    from suanli.live.devices import gpu_samples
    from suanli.live.monitor import prometheus_text

    try:
        return prometheus_text(gpu_samples())
    except Exception as exc:  # keep serving: the failure is a metric
        return prometheus_text([], read_error=str(exc))


class _Handler(BaseHTTPRequestHandler):
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


def serve(host: str, port: int, max_requests: int | None = None) -> None:
    """Serve until interrupted (or ``max_requests`` requests, for tests)."""
    server = HTTPServer((host, port), _Handler)
    try:
        if max_requests is None:
            server.serve_forever()
        else:
            for _ in range(max_requests):
                server.handle_request()
    finally:
        server.server_close()
