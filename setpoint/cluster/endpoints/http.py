"""HTTP for the embedded server: uvicorn parses and writes, the handler sees a small request.

uvicorn (with httptools) carries HTTP/1.1, TLS, keep-alive, pipelining and back-pressure; it
loads in a fraction of aiohttp's time, which is most of what ``setpoint cluster up`` pays to
start. The ASGI surface it offers is wrapped here into the few things the API handler needs:
a request with its method, decoded path, query, headers and a bounded body, and a response
that is either whole or a stream of chunks (a watch) that ends when the client goes away.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from email.utils import formatdate
from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes

from setpoint.cluster.endpoints.uvicornparts import httptools_impl

# (through uvicornparts: ``from uvicorn.protocols...`` here would run uvicorn's __init__)
HEADER_RE, HEADER_VALUE_RE = httptools_impl.HEADER_RE, httptools_impl.HEADER_VALUE_RE
STATUS_LINE = httptools_impl.STATUS_LINE
_HttptoolsCycle = httptools_impl.RequestResponseCycle

log = logging.getLogger("setpoint.cluster")

Message = MutableMapping[str, Any]
CONNECTION_KEY = "setpoint.connection"  # the scope's uvicorn protocol, for hijacking
LONG_QUERY_KEY = "setpoint.query_string"  # a query too long for httptools.parse_url
LONG_PATH_KEY = "setpoint.path"  # a path too long for it, percent-decoded
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

WRITE_PIECE = 64 * 1024
"""An answer's body is handed to the transport at most this much at a time: the TLS transport
(asyncio's ``SSLProtocol`` and uvloop's) encrypts a write whole into its buffer and tells
the writer to pause only between writes, so one write of a large body would be held, twice
over, however slowly the client reads."""


class BodyTooLarge(Exception):
    """The request body exceeds the limit the caller set."""


class Query(dict[str, str]):
    """A request's query: each parameter's first value, as most options read it (Go's
    ``Values.Get``), and :meth:`getall` for the options that are lists (``dryRun``)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        super().__init__()
        self.raw = raw
        if raw:
            for key, value in query_pairs(raw):
                self.setdefault(key, value)

    def getall(self, name: str, default: list[str]) -> list[str]:
        """Every value of ``name``, in the order given; ``default`` when it is absent."""
        if name not in self:  # (its keys are the same parse's)
            return default
        return [v for k, v in query_pairs(self.raw) if k == name]


# a "%" not followed by two hex digits: url.unescape's EscapeError
_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def query_pairs(raw: bytes) -> list[tuple[str, str]]:
    """The query's (key, value) pairs as Go's ``URL.Query()`` reads them (net/url
    ``parseQuery``, Go 1.17 on; the handlers read every parameter through it and drop its
    error): pairs split at "&" only; a pair holding ";" dropped whole ("invalid semicolon
    separator in query"), as is an empty one or one whose key or value has a "%" not
    followed by two hex digits; "+" is a space. Python's ``parse_qsl`` keeps those pairs
    (``pretty=true;x`` as pretty "true;x", ``limit=%zz`` as "%zz")."""
    pairs = []
    for pair in raw.split(b"&"):
        if not pair or b";" in pair:
            continue
        key, _, value = pair.partition(b"=")
        if b"%" in pair:
            if _BAD_ESCAPE.search(pair) is not None:
                continue
            pairs.append((_unescaped(key), _unescaped(value)))
        elif b"+" in pair:
            pairs.append((key.replace(b"+", b" ").decode("utf-8", "replace"),
                          value.replace(b"+", b" ").decode("utf-8", "replace")))
        else:
            pairs.append((key.decode("utf-8", "replace"), value.decode("utf-8", "replace")))
    return pairs


def _unescaped(text: bytes) -> str:
    """url.QueryUnescape of ``text`` (its escapes known good); bytes that are not UTF-8
    become U+FFFD, as Python's parse had them."""
    return unquote_to_bytes(text.replace(b"+", b" ")).decode("utf-8", "replace")


class Request:
    """One HTTP request as the API handler reads it."""

    __slots__ = ("_raw_headers", "_receive", "_scope", "audit_id", "authenticated", "deadline",
                 "headers", "method", "path", "query", "raw_query", "received",
                 "served_stored", "user", "user_fixed")

    def __init__(self, scope: Message, receive: Receive) -> None:
        self.method: str = scope["method"]
        self.path: str = scope.get(LONG_PATH_KEY) or scope["path"]  # decoded, as URL.Path
        if "\ufffd" in self.path and LONG_PATH_KEY not in scope:
            # uvicorn unquotes with errors="replace"; Go's URL.Path keeps the bytes that are
            # not UTF-8, and encoding/json writes each as "\ufffd" (responses.encode): kept
            # here as the surrogates that stand for them
            self.path = unquote(scope["raw_path"].decode("ascii"), errors="surrogateescape")
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        headers = {name.decode("latin-1"): value.decode("latin-1")
                   for name, value in raw_headers}
        if len(headers) != len(raw_headers):
            # a name repeated: Go's Header.Get and Values.Get answer its first value (the
            # comprehension kept the last; most requests repeat none)
            headers = {}
            for name, value in raw_headers:
                headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        self.headers = headers  # names in lower case
        self._raw_headers = raw_headers
        raw_query = scope.get(LONG_QUERY_KEY) or scope["query_string"]
        self.query = Query(raw_query)
        self.raw_query: bytes = raw_query
        self._scope = scope
        self._receive = receive
        self.user: dict[str, Any] | None = None  # who sent it, once authenticated
        self.authenticated = False  # it carried credentials the server accepted
        # the loop time by which its answer must have been written (the request timeout),
        # and when it came
        self.deadline: float | None = None
        self.received = 0.0
        # its user holds for the connection's life (its certificate, the server's own
        # token), and its answer is an object's stored bytes, nothing in it but the name's
        # own (storedgets.py remembers such a GET's decisions for the connection)
        self.user_fixed = False
        self.served_stored: Any = None  # (the ResourceType whose stored bytes answered)
        self.audit_id = ""  # its Audit-ID (audit_init.go), once the handler has one

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The headers as sent: names in lower case, values as bytes, in order."""
        return self._raw_headers

    @property
    def connection_memo(self) -> dict[Any, Any] | None:
        """What the handler keeps for the request's connection, lost with it (None outside
        a served connection)."""
        connection = self._scope.get(CONNECTION_KEY)
        return connection.memo if connection is not None else None

    def header_values(self, name: str) -> list[str]:
        """Every value of a header sent more than once (``name`` in lower case)."""
        wanted = name.encode("latin-1")
        return [v.decode("latin-1") for n, v in self._raw_headers if n == wanted]

    def raw_header_items(self) -> list[tuple[str, str]]:
        """Every header as sent, repeated names included (what a proxy forwards)."""
        return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in self._raw_headers]

    def query_values(self, name: str) -> list[str]:
        """Every value of a query parameter given more than once (``command`` of exec)."""
        return self.query.getall(name, [])

    @property
    def request_uri(self) -> str:
        """The path as sent and the query (Go's ``URL.RequestURI``)."""
        raw = self._scope.get("raw_path")
        path = raw.decode("latin-1") if raw else quote(self.path)
        return f"{path}?{self.raw_query.decode('latin-1')}" if self.raw_query else path

    @property
    def remote_host(self) -> str:
        """The client's address without its port (Go's host of ``RemoteAddr``)."""
        client = self._scope.get("client")
        return str(client[0]) if client else ""

    @property
    def client_certificate(self) -> bytes | None:
        """The DER certificate the client presented in the TLS handshake (verified against
        the listener's CA by then), or None."""
        connection = self._scope.get(CONNECTION_KEY)
        return connection.peer_certificate() if connection is not None else None

    def hijack(self) -> Hijacked:
        """Take the connection from the HTTP layer, as Go's ``http.Hijacker`` does for the
        apiserver's upgrade-aware proxy: uvicorn writes nothing more on it, and what the
        client sends from now on is read from the answer."""
        connection = self._scope[CONNECTION_KEY]
        cycle = connection.cycle
        # the answer is ours to write: uvicorn must neither add a 500 nor keep it alive
        cycle.response_started = cycle.response_complete = True
        cycle.keep_alive = False
        return Hijacked(connection)

    @property
    def content_type(self) -> str:
        """The media type of the body without parameters, lower case; "" when absent."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def content_length(self) -> int | None:
        raw = self.headers.get("content-length")
        return int(raw) if raw is not None and raw.isdigit() else None

    async def body(self, limit: int) -> bytes:
        """The whole body; BodyTooLarge as soon as it passes ``limit`` bytes."""
        length = self.content_length
        if length is not None and length > limit:
            raise BodyTooLarge
        message = await self._receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            body = message.get("body", b"")  # all in one message: most bodies
            if len(body) > limit:
                raise BodyTooLarge
            return body if type(body) is bytes else bytes(body)
        data = bytearray()
        while True:
            if message["type"] != "http.request":
                return bytes(data)  # the client went away mid-body
            data += message.get("body", b"")
            if len(data) > limit:
                raise BodyTooLarge
            if not message.get("more_body", False):
                return bytes(data)
            message = await self._receive()

    async def disconnected(self) -> None:
        """Return once the client has closed the connection."""
        while (await self._receive())["type"] != "http.disconnect":
            pass


class Hijacked(asyncio.Protocol):
    """A connection taken over after an upgrade: bytes in through :meth:`read`, out
    through :meth:`write`; its loss still reaches uvicorn's protocol, which forgets it."""

    def __init__(self, http_protocol: Any) -> None:
        self._http = http_protocol
        self.transport: asyncio.Transport = http_protocol.transport
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue()
        self.transport.set_protocol(self)

    def data_received(self, data: bytes) -> None:
        self._incoming.put_nowait(data)

    def eof_received(self) -> bool:
        self._incoming.put_nowait(b"")
        return True  # keep writing: the other side may still answer

    def connection_lost(self, exc: Exception | None) -> None:
        self._incoming.put_nowait(b"")
        self._http.connection_lost(exc)

    async def read(self) -> bytes:
        """The next bytes from the client; b"" at its end."""
        return await self._incoming.get()

    def write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.transport.close()


class Response:
    """A whole answer: status, headers and body."""

    __slots__ = ("audit_id", "body", "headers", "pretty", "serialized", "status")

    def __init__(self, body: bytes = b"", status: int = 200, content_type: str | None = None,
                 headers: dict[str, str] | None = None, *, serialized: bool = False,
                 pretty: bool = False) -> None:
        self.status = status
        self.body = body
        # an API object as responsewriters.SerializeObject writes it: gzipped when large and
        # the client accepts it (contentencoding.py), indented when JSON and the client asks
        # (prettyprint.py); never a watch, a log or a proxied body
        self.serialized = serialized
        # its Accept clause asked for "pretty=1" (the query and User-Agent are read later)
        self.pretty = pretty
        # the Audit-Id header, kept apart from the others: it differs on every answer, and
        # the others' framed bytes are cached by their values (written_whole)
        self.audit_id = ""
        self.headers: list[tuple[str, str]] = []
        if content_type is not None:
            self.headers.append(("content-type", content_type))
        if headers:
            self.headers.extend(headers.items())

    def set_header(self, name: str, value: str) -> None:
        name = name.lower()
        self.headers = [(n, v) for n, v in self.headers if n != name]
        self.headers.append((name, value))

    def add_header(self, name: str, value: str) -> None:
        self.headers.append((name.lower(), value))

    def _start(self, headers: list[tuple[bytes, bytes]]) -> Message:
        """The start message, with ``headers`` (extended) before the answer's own."""
        if self.audit_id:
            headers.append((b"audit-id", self.audit_id.encode()))
        for name, value in self.headers:
            # UTF-8, as Go writes header bytes; uvicorn refuses only control characters
            headers.append((name.encode(), value.encode()))
        return {"type": "http.response.start", "status": self.status, "headers": headers}

    async def send(self, send: Send, request: Request) -> None:
        if len(self.body) <= WRITE_PIECE and written_whole(self, send):
            return
        extra = [(b"date", _http_date()), (b"content-length", str(len(self.body)).encode())]
        if len(self.body) > WRITE_PIECE:
            await send(self._start(extra))
            await _send_body(send, self.body, more_body=False, deadline=request.deadline)
            return
        # uvicorn writes each ASGI message as it comes: the head and the body would be two TLS
        # records and two send(2) calls, which cost more than all the rest of a small answer.
        # Its writes are collected while it frames the answer, then written once.
        cycle = getattr(send, "__self__", None)  # uvicorn's RequestResponseCycle
        transport = getattr(cycle, "transport", None)
        if transport is None:
            await send(self._start(extra))
            await send({"type": "http.response.body", "body": self.body})
            return
        once = _OneWrite(transport)
        cycle.transport = once  # type: ignore[union-attr]
        try:
            await send(self._start(extra))
            await send({"type": "http.response.body", "body": self.body})
        finally:
            cycle.transport = transport  # type: ignore[union-attr]
            once.flush()


_HEADER_LINES_KEPT = 1024
_header_lines: dict[tuple[tuple[str, str], ...], bytes | None] = {}
"""An answer's own headers as uvicorn frames them, by the headers (most answers carry one of a
few sets: a content type, the cache control, the priority and fairness match); None for a set
that uvicorn's framing must see (framing headers, or bytes it refuses)."""
_FRAMING = frozenset({b"content-length", b"transfer-encoding", b"connection"})


def _framed_header_lines(headers: tuple[tuple[str, str], ...]) -> bytes | None:
    lines = []
    for name, value in headers:
        raw_name, raw_value = name.encode(), value.encode()
        if HEADER_RE.search(raw_name) or HEADER_VALUE_RE.search(raw_value):
            return None  # uvicorn raises, and answers 500 in its stead
        raw_name = raw_name.lower()
        if raw_name in _FRAMING:
            return None
        lines.append(b"%s: %s\r\n" % (raw_name, raw_value))
    return b"".join(lines)


def framed_whole(response: Response, keep_alive: bool = True) -> bytes | None:
    """``response`` (not HEAD's, at most :data:`WRITE_PIECE` long) as the very bytes
    uvicorn's ``RequestResponseCycle.send`` frames from its two messages, with no default
    headers (status line, the date and content length, the answer's headers in lower case,
    ``connection: close`` when the connection is not kept alive); None when uvicorn must
    frame it (a status it has no line for, headers it refuses or frames itself)."""
    status_line = STATUS_LINE.get(response.status)
    if status_line is None:
        return None
    headers = tuple(response.headers)
    try:
        lines = _header_lines[headers]
    except KeyError:
        lines = _framed_header_lines(headers)
        if len(_header_lines) >= _HEADER_LINES_KEPT:
            _header_lines.clear()
        _header_lines[headers] = lines
    if lines is None:
        return None
    body = response.body
    close = b"" if keep_alive else b"connection: close\r\n"
    audit = b"audit-id: %s\r\n" % response.audit_id.encode() if response.audit_id else b""
    return b"%sdate: %s\r\ncontent-length: %d\r\n%s%s%s\r\n%s" % (
        status_line, _http_date(), len(body), audit, lines, close, body)


def written_whole(response: Response, send: Send) -> bool:
    """Whether ``response`` was written, head and body in one write, as ``framed_whole``
    frames it. Only the plain case is written here: uvicorn's httptools cycle with nothing
    sent yet, no default headers or access log, a client still connected and reading, not
    HEAD, and headers that need no framing of uvicorn's own. Otherwise nothing is written
    and False is returned, for uvicorn to write it."""
    cycle = getattr(send, "__self__", None)
    if type(cycle) is not _HttptoolsCycle or cycle.response_started or cycle.disconnected \
            or cycle.flow.write_paused or cycle.default_headers or cycle.access_log \
            or cycle.scope["method"] == "HEAD":
        return False
    framed = framed_whole(response, cycle.keep_alive)
    if framed is None:
        return False
    cycle.response_started = True
    cycle.waiting_for_100_continue = False
    cycle.chunked_encoding = False
    cycle.expected_content_length = 0
    cycle.transport.write(framed)
    cycle.response_complete = True
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()
    return True


class _OneWrite:
    """A transport that holds what is written until :meth:`flush` writes it all at once."""

    __slots__ = ("parts", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        if self.parts:
            data = b"".join(self.parts)
            self.parts.clear()
            self.transport.write(data)

    def close(self) -> None:  # an answer with "connection: close": written, then closed
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


async def _send_body(send: Send, body: bytes, *, more_body: bool, deadline: float | None,
                     ended: Callable[[], Awaitable[None]] | None = None) -> bool:
    """``body`` sent :data:`WRITE_PIECE` bytes at a time, each once the transport has
    drained below its high-water mark, as Go's ``Write`` blocks on a full socket. The
    connection is aborted, and False returned, when the client has not taken it in by
    ``deadline`` (the request timeout) or when ``ended`` returns first (the producer gave up
    on a client that does not read: a watcher terminated by the watch cache)."""
    cycle: Any = getattr(send, "__self__", None)  # uvicorn's RequestResponseCycle
    flow: Any = getattr(cycle, "flow", None)
    view = memoryview(body)
    start = 0
    while True:
        paused = flow is not None and flow.write_paused and not cycle.disconnected
        if paused and not await _drained(flow.drain(), deadline, ended):
            if not cycle.disconnected:
                cycle.transport.abort()
            return False
        piece = view[start:start + WRITE_PIECE]
        start += WRITE_PIECE
        last = start >= len(view)
        await send({"type": "http.response.body", "body": piece,
                    "more_body": more_body or not last})
        if last:
            return True


async def _drained(drain: Awaitable[None], deadline: float | None,
                   ended: Callable[[], Awaitable[None]] | None) -> bool:
    """Whether ``drain`` finished before ``deadline`` and before ``ended``."""
    loop = asyncio.get_running_loop()
    timeout = None if deadline is None else max(deadline - loop.time(), 0.0)
    drained = asyncio.ensure_future(drain)
    waits: set[asyncio.Future[None]] = {drained}
    if ended is not None:
        waits.add(asyncio.ensure_future(ended()))
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
    return drained.done() and not drained.cancelled()


class StreamResponse(Response):
    """A chunked answer written as ``chunks`` yields; ``on_disconnect`` runs if the client
    leaves first, so that the producer can end.

    A long-running answer (a watch, a log, a proxied stream) has no deadline; one that is
    not (a streamed LIST) is aborted when its client has not read it by the request
    timeout. While the client does not read, ``chunks`` is not asked for more; if
    ``ended`` (awaited only then) returns, the connection is aborted."""

    __slots__ = ("chunks", "ended", "long_running", "on_disconnect")

    def __init__(self, chunks: AsyncIterator[bytes], on_disconnect: Callable[[], None],
                 status: int = 200, content_type: str | None = None, *,
                 long_running: bool = True,
                 ended: Callable[[], Awaitable[None]] | None = None,
                 serialized: bool = False, pretty: bool = False) -> None:
        super().__init__(b"", status, content_type, serialized=serialized, pretty=pretty)
        self.chunks = chunks
        self.on_disconnect = on_disconnect
        self.long_running = long_running
        self.ended = ended

    async def send(self, send: Send, request: Request) -> None:
        await send(self._start([(b"date", _http_date())]))
        # a Go client never writes after its request: the next message is the disconnect
        watcher = asyncio.ensure_future(request.disconnected())
        watcher.add_done_callback(lambda done: done.cancelled() or self.on_disconnect())
        deadline = None if self.long_running else request.deadline
        try:
            async for chunk in self.chunks:
                if not await _send_body(send, chunk, more_body=True, deadline=deadline,
                                        ended=self.ended):
                    return
            await _send_body(send, b"", more_body=False, deadline=deadline, ended=self.ended)
        finally:
            watcher.cancel()
            if isinstance(self.chunks, AsyncGenerator):
                await self.chunks.aclose()  # its clean-up runs now, not at collection


_date_cache: tuple[int, bytes] = (0, b"")


def _http_date() -> bytes:
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, formatdate(now, usegmt=True).encode())
    return _date_cache[1]
