"""The metrics server's HTTP/1.1 server: asyncio's TLS server and ``httptools``' request
parser, with the TLS peer certificate of each connection given to the handler.

Why not aiohttp.web or uvicorn: the workloads' process must not import aiohttp (its import
is most of the start of ``cluster up``'s critical path, issue 12), and uvicorn does not put
the client certificate in the ASGI scope (the front proxy authenticates with one), nor
offers a public way to reach the connection's transport. The requests are few and small
(the aggregator's GETs), so a small server is enough; ``httptools`` (llhttp, in C) is
loaded by the SDK's own HTTP client already (setpoint/client/http1.py).

What it bounds, as the generic API server's ``http.Server`` does (k8s.io/apiserver
pkg/server/secure_serving.go: ``MaxHeaderBytes: 1 << 20``, ``ReadHeaderTimeout: 32 s``,
``IdleTimeout: 90 s``): the request line and headers (:data:`MAX_HEAD_BYTES`, a 431 and
the connection closed), their number (:data:`MAX_HEADERS`, also 431), a body, which is
counted and dropped, never kept (:data:`MAX_BODY_BYTES`, the API server's
``MaxRequestBodyBytes``: a 413 Status and the connection closed), the time to send a
request's head and the time a kept-alive connection may stay idle, and the time to answer
(:data:`REQUEST_TIMEOUT`, the generic API server's ``RequestTimeout`` enforced by
pkg/server/filters/timeout.go: a handler that has not answered by then gets the 504
Timeout Status; an answer the client has not taken in by then, since the handler's writes
block on it, aborts the connection, as the filter's ``http.ErrAbortHandler`` does). Requests on one
connection are answered one at a time, in order; reading stops while one is handled.
Answers carry ``Content-Length``; a connection is kept alive unless the request says
otherwise (HTTP/1.0, ``Connection: close``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import cast
from urllib.parse import parse_qsl, unquote

import httptools
import orjson
from multidict import CIMultiDict

from setpoint.machinery.errors import StatusError, timeout

__all__ = ["MAX_BODY_BYTES", "MAX_HEADERS", "MAX_HEAD_BYTES", "HTTPServer", "Request",
           "Response"]

log = logging.getLogger("setpoint.workloads.metricsserver")

MAX_HEAD_BYTES = 1 << 20
"""Request line and headers (Go's ``http.Server.MaxHeaderBytes`` as the API server sets it)."""
MAX_HEADERS = 256
"""Header fields of one request: Go bounds only their bytes, but each one here is a Python
object; the front proxy sends a handful."""
MAX_BODY_BYTES = 3 * 1024 * 1024
"""k8s.io/apiserver pkg/server/config.go ``MaxRequestBodyBytes`` (3 MiB). The server
answers only GETs, so a body is counted and dropped."""
READ_HEADER_TIMEOUT = 32.0
IDLE_TIMEOUT = 90.0
WRITE_CHUNK = 64 * 1024
REQUEST_TIMEOUT = 60.0
"""k8s.io/apiserver pkg/server/config.go ``RequestTimeout``: handling and writing an answer."""
REJECT_LINGER = 0.5
"""After answering a request that broke a limit, what the client still sends is read and
dropped this long before the connection closes: closing with unread data makes the kernel
reset the connection, and the client could lose the answer (Go's ``rstAvoidanceDelay``,
net/http server.go ``closeWriteAndWait``)."""

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
            413: "Request Entity Too Large", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 503: "Service Unavailable", 504: "Gateway Timeout"}
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass(frozen=True)
class Request:
    """A request read in full (its body dropped)."""

    method: str
    path: str
    """Percent-decoded."""
    query: Mapping[str, str]
    """The first value of each parameter."""
    headers: CIMultiDict[str]
    peer_certificate: bytes | None
    """The TLS client certificate of the connection (DER), if it sent one."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def text(cls, status: int, text: str) -> Response:
        return cls(status, text.encode(), TEXT)

    @classmethod
    def json(cls, status: int, body: object) -> Response:
        return cls(status, orjson.dumps(body), JSON)

    @classmethod
    def status_error(cls, err: StatusError) -> Response:
        return cls.json(err.code, err.to_status())


Handler = Callable[[Request], Awaitable[Response]]


class _Rejected(Exception):
    """Raised from a parser callback: the request breaks a limit; answer and close."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def _too_large_head(what: str) -> _Rejected:
    # Go's answer to a head over MaxHeaderBytes (net/http server.go)
    return _Rejected(Response.text(431, f"431 Request Header Fields Too Large: {what}"))


def _render(response: Response, *, head_only: bool, close: bool) -> bytes:
    lines = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}",
             f"Content-Type: {response.content_type}",
             f"Content-Length: {len(response.body)}",
             f"Date: {formatdate(usegmt=True)}"]
    lines += [f"{name}: {value}" for name, value in response.headers]
    if close:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + response.body


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, answered in order by one
    task; reading paused while requests wait to be answered."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.peer: bytes | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.queue: deque[tuple[Request, bool] | Response] = deque()
        """Requests read (and whether to keep the connection after), or a final answer."""
        self.worker: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.rejected = False
        self.closed = False
        self._drained: asyncio.Future[None] | None = None
        self._url: list[bytes] = []
        self._headers: CIMultiDict[str] = CIMultiDict()
        self._in_head = False
        self._head_bytes = 0
        self._body_bytes = 0

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:  # asyncio's and uvloop's TLS transports both have it
            self.peer = ssl_object.getpeercert(binary_form=True)
        self.server.connections.add(self)
        self._arm(IDLE_TIMEOUT)

    def data_received(self, data: bytes) -> None:
        if self.rejected or self.closed:
            return
        try:
            self.parser.feed_data(data)
            if self._in_head:
                # httptools keeps a partial header line until it ends: bound that too
                self._head_bytes += len(data)
                if self._head_bytes > MAX_HEAD_BYTES:
                    raise _too_large_head("request head")
        except httptools.HttpParserCallbackError as exc:
            rejected = exc.__context__
            self._reject(rejected.response if isinstance(rejected, _Rejected)
                         else Response.text(400, "400 Bad Request"))
        except _Rejected as exc:
            self._reject(exc.response)
        except httptools.HttpParserUpgrade:
            # the request before the upgrade is answered; nothing after it is HTTP/1.1
            self._reject(None)
        except httptools.HttpParserError:
            self._reject(Response.text(400, "400 Bad Request"))

    def eof_received(self) -> bool:
        return False  # TLS has no half-closed connection: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        self.server.connections.discard(self)
        if self.worker is not None:
            self.worker.cancel()  # as Go cancels a request's context when its client leaves
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None or self._drained.done():
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # -- httptools callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url.clear()
        self._headers = CIMultiDict()
        self._in_head = True
        self._head_bytes = 0
        self._body_bytes = 0
        self._arm(READ_HEADER_TIMEOUT)

    def on_url(self, url: bytes) -> None:
        self._url.append(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self._headers) >= MAX_HEADERS:
            raise _too_large_head(f"more than {MAX_HEADERS} header fields")
        self._headers.add(name.decode("latin-1"), value.decode("latin-1"))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_timer()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > MAX_BODY_BYTES:
            # apimachinery errors.NewRequestEntityTooLargeError
            raise _Rejected(Response.status_error(StatusError(
                413, "RequestEntityTooLarge",
                f"Request entity too large: limit is {MAX_BODY_BYTES}")))

    def on_message_complete(self) -> None:
        url = httptools.parse_url(b"".join(self._url))
        query: dict[str, str] = {}
        for key, value in parse_qsl((url.query or b"").decode("latin-1"),
                                    keep_blank_values=True):
            query.setdefault(key, value)
        request = Request(self.parser.get_method().decode("latin-1"),
                          unquote((url.path or b"/").decode("latin-1")), query,
                          self._headers, self.peer)
        self.queue.append((request, self.parser.should_keep_alive()))
        self._next()

    # -- answering ---------------------------------------------------------------------------

    def _next(self) -> None:
        if self.transport is not None and self.queue and not self.rejected:
            self.transport.pause_reading()  # one request handled at a time: read no more
        if self.worker is None and self.queue:
            self._cancel_timer()
            self.worker = asyncio.get_running_loop().create_task(self._answer())

    async def _answer(self) -> None:
        try:
            while self.queue and not self.closed:
                item = self.queue.popleft()
                if isinstance(item, Response):
                    await self._write(item, head_only=False, close=True)
                    return
                request, keep_alive = item
                deadline = asyncio.get_running_loop().time() + REQUEST_TIMEOUT
                try:
                    async with asyncio.timeout_at(deadline):
                        response = await self.server.handle(request)
                except TimeoutError:
                    response = Response.status_error(timeout(
                        "request did not complete within the allotted timeout", 0))
                keep_alive = keep_alive and not (self.rejected and not self.queue)
                try:
                    async with asyncio.timeout_at(deadline):
                        await self._write(response, head_only=request.method == "HEAD",
                                          close=not keep_alive)
                except TimeoutError:
                    self.abort()  # the client did not take its answer in time
                    return
                if not keep_alive:
                    return
        finally:
            self.worker = None
        if self.rejected:
            self.close()  # broke mid-request while the one before was answered
        elif self.transport is not None and not self.transport.is_closing():
            self._arm(READ_HEADER_TIMEOUT if self._in_head else IDLE_TIMEOUT)
            self.transport.resume_reading()

    async def _write(self, response: Response, *, head_only: bool, close: bool) -> None:
        if self.transport is None or self.closed:
            return
        data = memoryview(_render(response, head_only=head_only, close=close))
        # a piece at a time: the TLS transport passes its peer's back-pressure on only
        # between writes (one write is encrypted and handed to the socket whole)
        for start in range(0, len(data), WRITE_CHUNK):
            self.transport.write(data[start:start + WRITE_CHUNK])
            if self._drained is not None and not self._drained.done():
                await self._drained
            if self.transport.is_closing():
                return  # the client went away meanwhile
        if close and self.rejected:
            self.transport.resume_reading()  # dropped as it comes (data_received)
            self._arm(REJECT_LINGER)
        elif close:
            self.close()

    def _reject(self, response: Response | None) -> None:
        """Parse no more: answer the requests read so far, then ``response``, then close."""
        self.rejected = True
        self._in_head = False
        if response is not None:
            self.queue.append(response)
        if self.queue:
            self._next()
        elif self.worker is None:
            self.close()

    def _arm(self, delay: float) -> None:
        self._cancel_timer()
        self.timer = asyncio.get_running_loop().call_later(delay, self.close)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        self._cancel_timer()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection and what it still had to write (close would wait for it)."""
        self._cancel_timer()
        if self.transport is not None:
            self.transport.abort()


class HTTPServer:
    """Serves ``handler`` over TLS with ``context`` (see the module's docstring)."""

    def __init__(self, handler: Handler, context: ssl.SSLContext) -> None:
        self.handler = handler
        self.context = context
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host``:``port`` (0: a free port); the port listened on."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Connection(self), host, port,
                                                ssl=self.context)
        return int(self._server.sockets[0].getsockname()[1])

    async def handle(self, request: Request) -> Response:
        try:
            return await self.handler(request)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("metrics_server_handler_failed path=%s", request.path)
            return Response.status_error(StatusError(
                500, "InternalError", "Internal error occurred: the request failed"))

    async def stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        for connection in list(self.connections):
            connection.close()
        workers = [c.worker for c in self.connections if c.worker is not None]
        for worker in workers:
            worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*workers, return_exceptions=True)
        await server.wait_closed()
