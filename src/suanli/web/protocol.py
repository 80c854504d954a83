"""uvicorn's HTTP/1.1 protocol with the API's one error shape for requests too malformed to reach
the application (a non-numeric ``Content-Length``, a broken request line, a non-ASCII target):
``400 {"error": "one sentence"}`` as JSON, instead of uvicorn's plain text.

``suanli serve`` names this class to uvicorn (``http=``); it is always the h11 implementation, so
the answer is the same whether or not ``httptools`` is installed.
"""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MALFORMED = (
    "the HTTP request is malformed (its request line or headers cannot be parsed); "
    "send a valid HTTP/1.1 request"
)


class JSONErrorH11Protocol(H11Protocol):
    """:class:`H11Protocol` whose own 400 answers are the API's JSON error."""

    def handle_events(self) -> None:
        """uvicorn's event loop, with a target that is not ASCII answered 400 too (uvicorn
        decodes it as ASCII and would raise)."""
        try:
            super().handle_events()
        except UnicodeDecodeError:
            self.send_400_response(MALFORMED)

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
