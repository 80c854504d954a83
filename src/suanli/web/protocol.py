"""uvicorn's HTTP/1.1 protocol with the API's one error shape for requests too malformed to reach
the application (a non-numeric ``Content-Length``, a broken request line, a non-ASCII target):
``400 {"error": "one sentence"}`` as JSON, instead of uvicorn's plain text.

It also sheds load instead of running out of file descriptors (docs/security.md): a connection
that has sent no complete request within :data:`HEADER_TIMEOUT_S` is closed (uvicorn's own
keep-alive timer starts only after a first response), and when :data:`MAX_CONNECTIONS` are open
a new one makes room by closing the oldest idle connection, or is itself closed when every
connection is busy. ``suanli serve`` sets the cap below the process's open-file limit.

``suanli serve`` names this class to uvicorn (``http=``); it is always the h11 implementation, so
the answer is the same whether or not ``httptools`` is installed.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from suanli.limits import SERVER_ACCEPT_BURST

MALFORMED = (
    "the HTTP request is malformed (its request line or headers cannot be parsed); "
    "send a valid HTTP/1.1 request"
)


#: Seconds a connection may stay open without a complete request (slow or idle clients).
HEADER_TIMEOUT_S = 10.0
#: File descriptors kept free: two accept bursts (asyncio accepts up to the listen backlog at
#: once, and once more before the first burst's protocols run), plus the server's own (the
#: listening socket, logs, worker pipes, catalog files; 17 at start).
FD_HEADROOM = 2 * SERVER_ACCEPT_BURST + 64


def connection_cap() -> int:
    """Connections held at once: 4,096, or fewer to stay under the open-file limit
    (``suanli serve`` raises the soft limit to the hard one first)."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 4096
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft - FD_HEADROOM))


MAX_CONNECTIONS = connection_cap()
#: Idle connections (no request under way), oldest first: the first to close for a new one.
_idle: OrderedDict[int, JSONErrorH11Protocol] = OrderedDict()


class JSONErrorH11Protocol(H11Protocol):
    """:class:`H11Protocol` whose own 400 answers are the API's JSON error, and which sheds idle
    connections when too many are open."""

    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        """Take the connection, first making room under :data:`MAX_CONNECTIONS`."""
        super().connection_made(transport)
        while len(self.connections) > MAX_CONNECTIONS and _idle:
            _, oldest = _idle.popitem(last=False)
            oldest.transport.close()
        if len(self.connections) > MAX_CONNECTIONS:  # every other connection is busy
            self.transport.close()
            return
        self._mark_idle()

    def _mark_idle(self) -> None:
        _idle[id(self)] = self
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._close_if_idle)

    def _close_if_idle(self) -> None:
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()

    def _mark_busy(self) -> None:
        _idle.pop(id(self), None)
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection, then uvicorn's bookkeeping."""
        self._mark_busy()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        """Idle again between keep-alive requests (uvicorn's keep-alive timer runs too)."""
        super().on_response_complete()
        if not self.transport.is_closing():
            _idle.pop(id(self), None)
            _idle[id(self)] = self

    def handle_events(self) -> None:
        """uvicorn's event loop, with a target that is not ASCII answered 400 too (uvicorn
        decodes it as ASCII and would raise)."""
        try:
            super().handle_events()
        except UnicodeDecodeError:
            self.send_400_response(MALFORMED)
        if self.cycle is not None and not self.cycle.response_complete:
            self._mark_busy()  # a request is under way: never shed it

    def send_400_response(self, msg: str) -> None:
        """The 400 as ``{"error": ...}`` JSON; the connection is closed after it."""
        body = json.dumps({"error": MALFORMED}).encode("utf-8")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close"),
        ]
        try:
            response = h11.Response(status_code=400, headers=headers, reason=b"Bad Request")
            self.transport.write(self.conn.send(response))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            pass  # a response was already under way: only closing is left
        self.transport.close()


#: Seconds between two log lines about a full file table (asyncio retries the accept each second).
_ACCEPT_LOG_EVERY_S = 10.0


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Log a full file table at accept time as one warning line every 10 s, not a traceback a
    second: asyncio pauses accepting for a second and retries by itself, and the connection cap
    above frees descriptors meanwhile. Every other loop error goes to the previous handler."""
    import errno
    import logging
    import time

    log = logging.getLogger("suanli.web")
    previous = loop.get_exception_handler()
    last = [0.0]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
            now = time.monotonic()
            if now - last[0] >= _ACCEPT_LOG_EVERY_S:
                last[0] = now
                log.warning(
                    "open-file limit reached with %d connections: accepting paused for 1 s",
                    len(_idle),
                )
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
