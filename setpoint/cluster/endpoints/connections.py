"""Connections: kube-apiserver's timeouts, and no lock-out by clients that never authenticate.

k8s.io/apiserver/pkg/server/secure_serving.go serves with Go's ``http.Server`` configured
``ReadHeaderTimeout: 32s`` (which also bounds the TLS handshake: net/http's
``tlsHandshakeTimeout`` is the least of its read timeouts) and ``IdleTimeout: 90s``. The same
timeouts hold here: a connection must finish its handshake and each request's headers within
``read_header_timeout_s``, and may wait ``idle_timeout_s`` between requests.

Timeouts alone let anyone without a token hold every file descriptor for that long, locking
out everyone else. So connections are also counted against ``max_connections`` (by default
three quarters of the descriptors left under ``RLIMIT_NOFILE``): when a new one would pass
it, the oldest connection that has not yet sent an authenticated request is closed — during
its handshake too, which is why TLS is set up here rather than by asyncio's ``ssl=`` — and
if every connection has authenticated, the new one is refused.

A request's line and headers are bounded as secure_serving.go bounds them
(``MaxHeaderBytes: 1 << 20``; net/http reads at most that plus 4096 bytes of a head,
``initialReadLimitSize``): past it the client gets Go's bare 431 and the connection is closed,
so a head trickled for the whole read-header timeout costs the server at most that much.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from asyncio.sslproto import SSLProtocol
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from setpoint.cluster.endpoints.uvicornparts import httptools_impl

HttpToolsProtocol = httptools_impl.HttpToolsProtocol

MAX_CONNECTIONS_CAP = 4096
# net/http server.go's answer to a head over the limit (it writes it and hangs up)
HEADER_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
                    b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
                    b"431 Request Header Fields Too Large")


@dataclass
class ConnectionLimits:
    """The HTTP server's timeouts and connection bounds."""

    read_header_timeout_s: float = 32.0
    idle_timeout_s: float = 90.0
    max_connections: int | None = None  # None: from RLIMIT_NOFILE
    request_timeout_s: float = 60.0
    # secure_serving.go's MaxHeaderBytes; net/http allows 4096 bytes more (initialReadLimitSize)
    max_header_bytes: int = 1 << 20


class _Connection:
    """What the guard knows of one accepted connection."""

    __slots__ = ("authenticated", "client", "closed", "raw")

    def __init__(self) -> None:
        self.raw: asyncio.BaseTransport | None = None  # the socket's transport
        self.client: Any = None  # (host, port), once the protocol has it
        self.authenticated = False
        self.closed = False

    def abort(self) -> None:
        self.closed = True
        if self.raw is not None and not self.raw.is_closing():
            self.raw.abort()  # type: ignore[attr-defined]


def _tls_protocol_class(loop: asyncio.AbstractEventLoop) -> type[Any]:
    """uvloop's TLS protocol on a uvloop loop, asyncio's otherwise.

    Both are the same state machine over ``ssl.MemoryBIO``; uvloop's is compiled, and
    asyncio's pure-Python one cost a fifth of a create's CPU and two fifths of a get's
    (docs/benchmarks.md). uvloop's only works over uvloop's own transports.
    """
    try:
        import uvloop
        from uvloop.loop import (  # type: ignore[attr-defined]  # (not in uvloop's stubs)
            SSLProtocol as CompiledSSLProtocol,
        )
    except ImportError:
        return SSLProtocol
    return CompiledSSLProtocol if isinstance(loop, uvloop.Loop) else SSLProtocol


def _default_max_connections() -> int:
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        return MAX_CONNECTIONS_CAP
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS_CAP
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:
        in_use = 64
    return max(8, min(MAX_CONNECTIONS_CAP, (soft - in_use) * 3 // 4))


class ConnectionGuard:
    """Counts connections, closes the oldest unauthenticated one when there are too many."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.max_connections = limits.max_connections or 0
        self._open: dict[_Connection, None] = {}  # insertion order: oldest first
        self._by_client: dict[Any, _Connection] = {}
        self.evicted = 0  # connections closed to make room
        self.refused = 0  # connections refused with every slot authenticated

    def __len__(self) -> int:
        return len(self._open)

    def authenticated(self, client: Any) -> None:
        """The connection from ``client`` sent a request with credentials that held."""
        conn = self._by_client.get(client)
        if conn is not None:
            conn.authenticated = True

    def _admit(self, conn: _Connection) -> None:
        if not self.max_connections:
            self.max_connections = _default_max_connections()
        if len(self._open) >= self.max_connections:
            victim = next((c for c in self._open if not c.authenticated and c.raw is not None),
                          None)
            if victim is None:
                conn.closed = True  # aborted as soon as its socket is known
                self.refused += 1
                return
            self._forget(victim)
            victim.abort()
            self.evicted += 1
        self._open[conn] = None

    def _forget(self, conn: _Connection) -> None:
        self._open.pop(conn, None)
        if conn.client is not None and self._by_client.get(conn.client) is conn:
            del self._by_client[conn.client]

    def _connected(self, conn: _Connection, raw: asyncio.BaseTransport) -> None:
        conn.raw = raw
        if conn.closed:
            conn.abort()

    def protocol_factory(self, loop: asyncio.AbstractEventLoop, config: Any, state: Any,
                         ssl_context: ssl.SSLContext | None) -> Callable[[], asyncio.BaseProtocol]:
        guard, limits = self, self.limits
        protocol_class: type[HttpToolsProtocol] = config.http_protocol_class

        # a class chosen at run time (uvicorn's config) as a base: mypy wants a static one
        class GuardedHTTP(protocol_class):  # type: ignore[valid-type,misc]
            """uvicorn's protocol with Go's read-header timeout, reporting to the guard."""

            def __init__(self, conn: _Connection) -> None:
                super().__init__(config=config, server_state=state, app_state={})
                self._conn = conn
                # the read-header deadline (None: not reading a header); one timer checks
                # it and is re-armed only when it fires early, not per request
                self._header_deadline: float | None = None
                self._header_timer: asyncio.TimerHandle | None = None
                # bytes received while a head is being read (None: reading a body);
                # counted per chunk, as Go's limited reader counts what it buffers
                self._head_bytes: int | None = 0
                self._heads_read = 0

            def connection_made(self, transport: asyncio.Transport) -> None:
                super().connection_made(transport)
                if ssl_context is None:
                    guard._connected(self._conn, transport)
                self._conn.client = self.client
                guard._by_client[self.client] = self._conn
                self._arm_header_timer()

            def connection_lost(self, exc: Exception | None) -> None:
                self._header_deadline = None
                if self._header_timer is not None:
                    self._header_timer.cancel()
                    self._header_timer = None
                guard._forget(self._conn)
                super().connection_lost(exc)

            def on_message_begin(self) -> None:
                super().on_message_begin()
                self._arm_header_timer()

            def on_headers_complete(self) -> None:
                self._header_deadline = None
                self._head_bytes = None
                self._heads_read += 1
                super().on_headers_complete()

            def on_message_complete(self) -> None:
                self._head_bytes = 0
                super().on_message_complete()

            def data_received(self, data: bytes) -> None:
                if self._head_bytes is None:  # a body: its own limit is the handler's
                    super().data_received(data)
                    return
                room = limits.max_header_bytes + 4096 - self._head_bytes
                if len(data) <= room:
                    self._head_bytes += len(data)
                    super().data_received(data)
                    return
                # fed up to the limit only: the head must end within it, as within Go's
                # limited reader; what follows a head that did is fed as usual
                heads_read = self._heads_read
                super().data_received(data[:room])
                if self.transport.is_closing():
                    return
                if self._heads_read != heads_read:  # (and maybe its whole message)
                    self.data_received(data[room:])
                    return
                self.transport.write(HEADER_TOO_LARGE)
                self.transport.close()

            def _arm_header_timer(self) -> None:
                if self._header_deadline is not None:
                    return  # still reading the same header (a new connection's first)
                self._header_deadline = loop.time() + limits.read_header_timeout_s
                if self._header_timer is None:
                    self._header_timer = loop.call_at(self._header_deadline,
                                                      self._header_timer_fired)

            def _header_timer_fired(self) -> None:
                self._header_timer = None
                deadline = self._header_deadline
                if deadline is None:
                    return  # no header being read: the next one arms a timer again
                if loop.time() >= deadline:
                    self._conn.abort()
                else:  # armed for an earlier header that arrived in time
                    self._header_timer = loop.call_at(deadline, self._header_timer_fired)

        class GuardedTLS(_tls_protocol_class(loop)):  # type: ignore[misc]
            """TLS whose socket the guard can close, handshake bounded as Go bounds it."""

            def __init__(self, conn: _Connection, app: asyncio.BaseProtocol) -> None:
                assert ssl_context is not None  # made only for a TLS listener
                # no waiter future, a float timeout: as loop.create_server passes them
                super().__init__(loop, app, ssl_context, None, server_side=True,
                                 ssl_handshake_timeout=limits.read_header_timeout_s)
                self._conn = conn

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                super().connection_made(transport)
                guard._connected(self._conn, transport)

            def connection_lost(self, exc: BaseException | None) -> None:
                guard._forget(self._conn)
                super().connection_lost(exc)

        def factory() -> asyncio.BaseProtocol:
            conn = _Connection()
            guard._admit(conn)
            app = GuardedHTTP(conn)
            return app if ssl_context is None else GuardedTLS(conn, app)

        return factory
