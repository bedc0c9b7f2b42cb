"""The HTTP server under the app: uvicorn on a socket bound before any model loads (a busy port or an
unknown host is one line, at once), with limits against slow and many clients that uvicorn leaves open.

    headers      a request's headers must arrive within ``read_timeout`` seconds of the connection, or of
                 the previous answer on a kept-alive connection: else 408 and the connection closed (uvicorn
                 waits for them forever: a slow-loris client holds its socket a byte at a time); its body
                 then has as long again (app.BodyLimit)
    connections  at most ``max_connections`` open, so sockets and file descriptors stay bounded: one more
                 closes the connection that has waited longest without sending a request (a slow client's),
                 answered 503, and when every connection is in a request the new one is answered 503 and
                 closed (uvicorn's own limit_concurrency answers 503 only once a request's headers have come,
                 and keeps the sockets meanwhile): a flood of slow clients leaves room for a normal one
    idle         a kept-alive connection closes after 5 idle seconds (uvicorn's timeout_keep_alive)
    size         headers of at most 16 KiB (h11's largest incomplete event): larger ones are answered 400
"""

from __future__ import annotations

import json
import socket

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from seq2bert.errors import RunFailure, UserError

KEEP_ALIVE = 5.0  # seconds an idle kept-alive connection stays open
MAX_HEADER_BYTES = 16 * 1024


def raw_answer(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer with a JSON error, for a connection closed right after it."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


def limited_protocol(read_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a deadline for a request's headers and a cap on open connections."""

    class Limited(H11Protocol):
        def connection_made(self, transport) -> None:
            self.header_timer, self.waiting_in, self.armed_at = None, None, 0.0
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                waiting = [c for c in self.connections if getattr(c, "header_timer", None) is not None]
                if not waiting:  # every connection is in a request: this one waits its turn elsewhere
                    self.refuse(f"{max_connections} connections open, each in a request; try again")
                    return
                # the one that has waited longest without sending a request makes room (a slow client's)
                min(waiting, key=lambda c: c.armed_at).refuse(
                    f"{max_connections} connections open: this one, sending no request, was closed"
                )
            self.arm()

        def refuse(self, message: str) -> None:
            self.disarm()
            self.transport.write(raw_answer(503, "Service Unavailable", message))
            self.transport.close()

        def arm(self) -> None:
            """Start the headers' deadline for the request after the one of ``self.cycle``."""
            self.disarm()
            self.waiting_in, self.armed_at = self.cycle, self.loop.time()
            self.header_timer = self.loop.call_later(read_timeout, self.headers_late)

        def disarm(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def headers_late(self) -> None:
            self.header_timer = None
            if self.cycle is self.waiting_in and not self.transport.is_closing():  # no new request began
                late = f"the request's headers did not arrive within {read_timeout:g} s"
                self.transport.write(raw_answer(408, "Request Timeout", late))
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not self.waiting_in:  # the headers of a new request have come
                self.disarm()

        def on_response_complete(self) -> None:
            done = self.cycle
            super().on_response_complete()
            if not self.transport.is_closing() and self.cycle is done:  # waiting for the next request
                self.arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self.disarm()
            super().connection_lost(exc)

    return Limited


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port), before anything is loaded: a port out of range is a UserError, an
    address that cannot be had (in use, not this machine's, an unknown host) a RunFailure, each one line."""
    if not 0 <= port <= 65535:
        raise UserError(f"--port: expected 0 … 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        raise RunFailure(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise RunFailure(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def server_of(app, settings) -> uvicorn.Server:
    """A uvicorn server of ``app`` with ``settings``' limits (app.Settings: read_timeout, max_connections)."""
    config = uvicorn.Config(
        app,
        http=limited_protocol(settings.read_timeout, settings.max_connections),
        timeout_keep_alive=KEEP_ALIVE,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_level="warning",
    )
    return uvicorn.Server(config)


def serve(app, sock: socket.socket, settings) -> None:
    """Serve ``app`` on the bound ``sock`` until interrupted (Ctrl-C, SIGTERM)."""
    server = server_of(app, settings)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the signal again once it has shut down
        pass
    finally:
        sock.close()
    if not server.started:
        raise RunFailure("the server did not start (its log above says why)")
