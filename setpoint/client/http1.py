"""Unary HTTP/1.1 requests on kept-alive connections: the transport's fast path.

An operator's requests are small and many (two writes per change of a watched object), and
aiohttp's client costs more CPU per request than the API server's own HTTP layer: its
request and response objects, headers multidicts, timers and payload writers are built in
Python for every request. A :class:`ConnectionPool` sends a request as one write of bytes
built in one go, and parses the answer with ``httptools`` (llhttp, in C: status, headers,
``Content-Length`` or chunked bodies), on connections kept open between requests.

It covers what :class:`~setpoint.client.transport.Transport` sends most: a request with a
whole body in, a whole body out. Everything else stays with aiohttp: streams (watches),
proxies, ``HEAD`` (whose answer has no body although it may announce one), and opening
connections that fail: the pool raises :class:`ConnectFailed` before anything was sent,
and the transport then lets aiohttp connect, so a refused connection or a certificate
error is reported exactly as before. Once a request is written, a dropped connection is
``aiohttp.ServerDisconnectedError`` (or ``ClientOSError``) and a timeout ``TimeoutError``,
the errors the transport's retry rules already tell apart from a refused connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from typing import cast

import aiohttp
import httptools
from multidict import CIMultiDict, CIMultiDictProxy


class ConnectFailed(Exception):
    """No connection could be opened; nothing was sent."""


class Answer:
    """A response read in full (the part of ``aiohttp.ClientResponse`` the transport uses)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        pass


class _Connection(asyncio.Protocol):
    """One connection; one request at a time, the answer parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser: httptools.HttpResponseParser | None = None
        self._headers: list[tuple[str, str]] = []
        self._body: list[bytes] = []
        self._headers_done = False
        self._framed = False
        """Whether the answer says where its body ends (else the connection's end does)."""
        self._keep_alive = False
        self._complete = False
        self._waiter: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not subclasses of asyncio.Transport)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._parser is None or self._complete:
            self.close()  # an answer nobody asked for: the connection is not usable
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(aiohttp.ClientPayloadError(f"invalid HTTP answer: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        if self._headers_done and not self._complete and self._parser is not None \
                and self._parser.get_status_code() and not self._framed:
            self.on_message_complete()  # a body that ends with the connection
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is None:
            self._fail(aiohttp.ServerDisconnectedError())
        else:
            self._fail(aiohttp.ClientOSError(*getattr(exc, "args", ())))

    # -- httptools callbacks ---------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        self._headers_done = True
        names = {name.lower() for name, _ in self._headers}
        self._framed = "content-length" in names or "transfer-encoding" in names
        # llhttp answers this only until the message is complete
        self._keep_alive = self._parser is not None and self._parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- use -------------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        return not self.closed and self.transport is not None \
            and not self.transport.is_closing()

    async def exchange(self, request: bytes) -> Answer:
        """Write ``request`` and read its answer."""
        assert self.transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._headers, self._body = [], []
        self._headers_done = self._complete = self._framed = self._keep_alive = False
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        await self._waiter
        parser = self._parser
        answer = Answer(parser.get_status_code(),
                        CIMultiDictProxy(CIMultiDict(self._headers)), b"".join(self._body))
        if not self._keep_alive:
            self.close()
        self._parser = None
        return answer

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class ConnectionPool:
    """Kept-alive connections to one server (``host``/``port``, TLS when ``ssl`` is given
    per request), at most ``limit`` of them at once."""

    def __init__(self, host: str, port: int, *, limit: int = 100,
                 connect_timeout: float = 10.0) -> None:
        self.host, self.port = host, port
        self.connect_timeout = connect_timeout
        self._idle: dict[tuple[int, str | None], deque[_Connection]] = {}
        self._slots = asyncio.Semaphore(limit)
        self._closing = False

    def __repr__(self) -> str:
        idle = sum(len(q) for q in self._idle.values())
        return f"ConnectionPool({self.host}:{self.port}, idle={idle})"

    async def send(self, request: bytes, tls: ssl.SSLContext | None,
                   server_hostname: str | None) -> Answer:
        """Send the bytes of one request and return its answer; :class:`ConnectFailed`
        when no connection could be opened."""
        key = (id(tls), server_hostname)
        async with self._slots:
            conn = self._take(key)
            if conn is None:
                conn = await self._connect(tls, server_hostname)
            try:
                answer = await conn.exchange(request)
            except BaseException:
                conn.close()  # mid-request: what is left on it belongs to no one
                raise
            if conn.usable and not self._closing:
                self._idle.setdefault(key, deque()).append(conn)
            return answer

    def _take(self, key: tuple[int, str | None]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.usable:
                return conn
        return None

    async def _connect(self, tls: ssl.SSLContext | None,
                       server_hostname: str | None) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(
                    _Connection, self.host, self.port, ssl=tls,
                    server_hostname=(server_hostname or self.host) if tls else None)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise ConnectFailed(str(exc)) from exc
        return conn

    def close(self) -> None:
        """Close every idle connection (those in use close when their request ends)."""
        self._closing = True
        for idle in self._idle.values():
            for conn in idle:
                with contextlib.suppress(Exception):
                    conn.close()
        self._idle.clear()
