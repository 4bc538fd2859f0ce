"""HTTP/1.1 requests on kept-alive connections: the transport's own client.

An operator's requests are small and many (two writes per change of a watched object), and
aiohttp's client costs more CPU per request than the API server's own HTTP layer: its
request and response objects, headers multidicts, timers and payload writers are built in
Python for every request; importing it costs a program's start more than the rest of the
SDK (its connector loads the system's CA store at import). A :class:`ConnectionPool` sends
a request as one write of bytes built in one go, and parses the answer with ``httptools``
(llhttp, in C: status, headers, ``Content-Length`` or chunked bodies), on connections kept
open between requests.

It covers what :class:`~setpoint.client.transport.Transport` sends: a request with a whole
body in, and either a whole body out (:meth:`ConnectionPool.send`) or a body read as it
arrives (:meth:`ConnectionPool.open_stream`: a watch, one JSON event per line of a chunked
body). What stays with aiohttp: proxies, ``HEAD`` (whose answer has no body although it
may announce one), and opening connections that fail: the pool raises
:class:`ConnectFailed` before anything was sent, and the transport then lets aiohttp
connect, so a refused connection or a certificate error is reported exactly as before.
Once a request is written, a dropped connection is :class:`ServerDisconnectedError` (or
:class:`ClientOSError`), an answer that is not HTTP :class:`ClientPayloadError` and a
timeout ``TimeoutError``: the names and meanings of aiohttp's own errors, which the
transport's retry rules and its records already tell apart from a refused connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import cast

import httptools
from multidict import CIMultiDict, CIMultiDictProxy

_FRAMING = frozenset((b"content-length", b"transfer-encoding"))
"""The headers that frame a body; without either it ends with the connection."""
_FRAMING_LENGTHS = frozenset(len(name) for name in _FRAMING)

_PAUSE_AT = 1 << 20
"""Bytes of a streamed body held unread before the connection stops reading (the server
then waits, as a watch's server does for a slow client)."""
_RESUME_AT = 1 << 18


class ConnectFailed(Exception):
    """No connection could be opened; nothing was sent."""


class ClientPayloadError(ValueError):
    """The answer is not valid HTTP (aiohttp's name for it)."""


class ServerDisconnectedError(ConnectionError):
    """The server closed the connection before its answer was complete."""

    def __init__(self, message: str = "Server disconnected") -> None:
        super().__init__(message)


class ClientOSError(ConnectionError):
    """The connection failed (an OS error) before the answer was complete."""


def failures() -> tuple[type[Exception], ...]:
    """What an exchange raises when the connection or the answer fails after the request
    was sent: this module's errors, ``TimeoutError``, and aiohttp's ``ClientError`` once
    aiohttp is loaded (only requests it sent raise them, so it need not be loaded to tell)."""
    aiohttp = sys.modules.get("aiohttp")
    client_error = getattr(aiohttp, "ClientError", None)
    own = (ClientPayloadError, ServerDisconnectedError, ClientOSError, TimeoutError)
    return own if client_error is None else (*own, client_error)


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
    """One connection; one request at a time, the answer parsed as it arrives, its body
    read as a whole or chunk by chunk."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser: httptools.HttpResponseParser | None = None
        self._headers: list[tuple[str, str]] = []
        self._body: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._headers_done = False
        self._framed = False
        """Whether the answer says where its body ends (else the connection's end does)."""
        self._keep_alive = False
        self._complete = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._deadline: float | None = None
        """When the exchange under way must have ended (the loop's clock), if bounded."""
        self._timer: asyncio.TimerHandle | None = None
        self._whole = False
        """Whether the exchange under way reads its answer whole (:meth:`exchange`): then
        only the answer's end or a failure wakes the waiting request, not each part."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._silence_limit: float | None = None
        """When the bounded read under way (:meth:`_wait` with a timeout) gives up."""
        self._silence_timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not subclasses of asyncio.Transport)
        self.transport = cast(asyncio.Transport, transport)
        self._loop = asyncio.get_running_loop()  # asked once: 3.11's lookup asks the pid

    def data_received(self, data: bytes) -> None:
        if self._parser is None or self._complete:
            self.close()  # an answer nobody asked for: the connection is not usable
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ClientPayloadError(f"invalid HTTP answer: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        if self._headers_done and not self._complete and self._parser is not None \
                and self._parser.get_status_code() and not self._framed:
            self.on_message_complete()  # a body that ends with the connection
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is None:
            self._fail(ServerDisconnectedError())
        else:
            self._fail(ClientOSError(*getattr(exc, "args", ())))

    # -- httptools callbacks ---------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1"), value.decode("latin-1")))
        # told per header (by length first) rather than by a set of every name per answer
        if len(name) in _FRAMING_LENGTHS and name.lower() in _FRAMING:
            self._framed = True

    def on_headers_complete(self) -> None:
        self._headers_done = True
        # llhttp answers this only until the message is complete
        self._keep_alive = self._parser is not None and self._parser.should_keep_alive()
        if not self._whole:
            self._wake()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        if self._whole:
            return  # read at the answer's end; never paused (the caller holds it whole)
        self._buffered += len(body)
        if self._buffered > _PAUSE_AT and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._complete = True
        self._wake()

    # -- use -------------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        return not self.closed and self.transport is not None \
            and not self.transport.is_closing()

    @property
    def at_eof(self) -> bool:
        """The whole answer arrived and was read."""
        return self._complete and not self._body

    @property
    def reusable(self) -> bool:
        """Whether the connection may carry another request."""
        return self.at_eof and self._keep_alive and self.usable

    async def open(self, request: bytes, timeout: float | None = None) -> Answer:
        """Write ``request`` and read its answer's status and headers (the body: with
        :meth:`read_chunk`); ``timeout`` bounds the wait."""
        parser = self._begin(request, whole=False)
        while not self._headers_done:
            await self._wait(timeout)
        return Answer(parser.get_status_code(),
                      CIMultiDictProxy(CIMultiDict(self._headers)), b"")

    def _begin(self, request: bytes, *, whole: bool) -> httptools.HttpResponseParser:
        """Make the connection ready for the answer to ``request``, and send it."""
        assert self.transport is not None
        parser = self._parser = httptools.HttpResponseParser(self)
        self._headers = []
        self._body.clear()
        self._buffered = 0
        self._headers_done = self._complete = self._framed = self._keep_alive = False
        self._whole = whole
        self._error = None
        self.transport.write(request)
        return parser

    async def read_chunk(self, timeout: float | None = None) -> bytes:
        """The next part of the body as it arrived; ``b""`` at its end. ``timeout`` bounds
        the silence before it."""
        while not self._body:
            if self._complete:
                return b""
            await self._wait(timeout)
        chunk = self._body.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered < _RESUME_AT and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    async def exchange(self, request: bytes, deadline: float | None = None) -> Answer:
        """Write ``request`` and read its whole answer; ``TimeoutError`` (the connection
        then closed) if it has not ended by ``deadline`` (the loop's clock)."""
        if deadline is not None:
            self._arm(deadline)
        try:
            # one wait for the whole answer, woken at its end (or failure), not a wait for
            # the headers and another per part of the body
            parser = self._begin(request, whole=True)
            while not self._complete:
                await self._wait(None)
        finally:
            self._deadline = None
            self._whole = False
        answer = Answer(parser.get_status_code(),
                        CIMultiDictProxy(CIMultiDict(self._headers)), b"".join(self._body))
        self._body.clear()
        decoder = gzip_decoder(answer)
        if decoder is not None:
            answer.body = _inflated(decoder, answer.body, final=True)
        if not self._keep_alive:
            self.close()
        self._parser = None
        return answer

    def _arm(self, deadline: float) -> None:
        """Bound the exchange under way by ``deadline``. The connection keeps one timer
        for all its exchanges, moved only when one must end sooner than it fires: a timer
        (and the ``asyncio.timeout`` around it) per request costs an operator more CPU
        than the rest of its request path, for an answer that takes a millisecond."""
        self._deadline = deadline
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = asyncio.get_running_loop().call_at(deadline, self._expire)

    def _expire(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None:
            return  # no exchange under way: the next one arms the timer again
        loop = asyncio.get_running_loop()
        if loop.time() < deadline:  # a later exchange, with a later deadline
            self._timer = loop.call_at(deadline, self._expire)
            return
        self._fail(TimeoutError())
        self.close()

    async def _wait(self, timeout: float | None) -> None:
        """Wait for the parser's next news (the callers loop: a failure is raised on their
        next call, once what arrived before it was read)."""
        if self._error is not None:
            raise self._error
        loop = self._loop or asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        if timeout is not None:
            # one timer per connection, moved on only when it fires early (a watch waits
            # here for each of its events: an asyncio.timeout per event cost more than the
            # wait's own work; issue 12, fifteenth pass)
            self._silence_limit = deadline = loop.time() + timeout
            timer = self._silence_timer
            if timer is None or timer.when() > deadline:
                if timer is not None:
                    timer.cancel()
                self._silence_timer = loop.call_at(deadline, self._silence_over)
        try:
            await waiter
        finally:
            self._waiter = None
            self._silence_limit = None

    def _silence_over(self) -> None:
        """The silence timer fired: the waiting read, if its own limit passed, ends with
        ``TimeoutError`` (the connection stays as it is: the caller decides); a read still
        within its limit moves the timer on to it."""
        self._silence_timer = None
        limit = self._silence_limit
        if limit is None:
            return  # nobody waits: the next bounded wait arms it again
        loop = self._loop or asyncio.get_running_loop()
        if loop.time() < limit:
            self._silence_timer = loop.call_at(limit, self._silence_over)
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _fail(self, exc: Exception) -> None:
        if self._parser is not None and not self._complete and self._error is None:
            self._error = exc
            self._wake()

    def close(self) -> None:
        self.closed = True
        for timer in (self._timer, self._silence_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._silence_timer = None
        if self.transport is not None:
            self.transport.close()


def gzip_decoder(answer: Answer) -> zlib._Decompress | None:
    """A decoder of the body when the answer is gzipped, its headers then rid of
    Content-Encoding and Content-Length: Go's http.Transport, which client-go leaves
    compressing (``DisableCompression`` false), asks for gzip and hands the caller the body
    decoded with those headers removed (net/http transport.go ``persistConn.readLoop``)."""
    if answer.headers.get("content-encoding", "").lower() != "gzip":
        return None
    headers = CIMultiDict(answer.headers)
    headers.popall("content-encoding")
    headers.popall("content-length", None)
    answer.headers = CIMultiDictProxy(headers)
    return zlib.decompressobj(16 + zlib.MAX_WBITS)


def _inflated(decoder: zlib._Decompress, data: bytes, *, final: bool) -> bytes:
    """``data`` decoded; a body that is no gzip, or ends before its gzip does, is a
    :class:`ClientPayloadError` (Go's reader fails the read)."""
    try:
        out = decoder.decompress(data)
        if final:
            out += decoder.flush()
            if not decoder.eof:
                raise ClientPayloadError("gzip body ended early: unexpected EOF")
    except zlib.error as exc:
        raise ClientPayloadError(f"gzip: invalid body: {exc}") from exc
    return out


class StreamAnswer:
    """A response whose body is read as it arrives (a watch): the parts of
    ``aiohttp.ClientResponse`` the transport and :class:`~setpoint.client.watch.Watch`
    use, ``content.iter_any()`` and ``content.at_eof()`` included."""

    def __init__(self, conn: _Connection, head: Answer, read_timeout: float | None,
                 done: Callable[[_Connection], None]) -> None:
        self.status = head.status
        self._decoder = gzip_decoder(head)
        self.headers = head.headers
        self._conn = conn
        self._read_timeout = read_timeout
        self._done: Callable[[_Connection], None] | None = done

    @property
    def content(self) -> StreamAnswer:
        return self

    async def iter_any(self) -> AsyncIterator[bytes]:
        """Each part of the body as it arrives; ``TimeoutError`` after ``read_timeout`` of
        silence."""
        decoder = self._decoder
        while chunk := await self._conn.read_chunk(self._read_timeout):
            if decoder is None or (chunk := _inflated(decoder, chunk, final=False)):
                yield chunk
        if decoder is not None and (rest := _inflated(decoder, b"", final=True)):
            yield rest

    def at_eof(self) -> bool:
        return self._conn.at_eof

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.iter_any()])

    def close(self) -> None:
        """Drop the connection (a body left unread cannot go back to the pool)."""
        self._conn.close()
        self.release()

    def release(self) -> None:
        """Give the connection back to the pool (or close it), once."""
        done, self._done = self._done, None
        if done is not None:
            done(self._conn)


class _Slots:
    """A counting semaphore whose free case is one plain call (asyncio's ``Semaphore``
    runs a coroutine and a generator expression per acquire, and a method more per
    release: twice per request). A slot given back goes straight to the longest waiter.

    Waiters' deadlines share one timer, armed for the earliest of them and moved on only
    when it fires (as a connection's timer for its exchanges): with every connection busy
    (a controller's burst of creates) most requests wait here, and a timer made and
    cancelled per waiting request was most of its wait's cost (issue 12, seventeenth
    pass)."""

    __slots__ = ("_timer", "_waiters", "free")

    def __init__(self, limit: int) -> None:
        self.free = limit
        self._waiters: deque[tuple[asyncio.Future[None], float | None]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def waiting(self) -> int:
        """How many wait for a slot now."""
        return sum(not waiter.done() for waiter, _ in self._waiters)

    def take_now(self) -> bool:
        """Take a slot if one is free and nobody waits for one; whether it was taken."""
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def take(self, deadline: float | None = None) -> None:
        """Take a slot, waiting for one; ``TimeoutError`` if none came by ``deadline``
        (the loop's clock)."""
        if self.take_now():
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((waiter, deadline))
        if deadline is not None:
            timer = self._timer
            if timer is None or timer.when() > deadline:
                if timer is not None:
                    timer.cancel()
                self._timer = loop.call_at(deadline, self._expire)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot as it was cancelled: pass it on
            raise

    def _expire(self) -> None:
        """The timer fired: every waiter whose deadline passed gives up (a slot handed to
        one just before stays with it: it is done, and ``take`` returns); the timer is
        armed again for the earliest deadline still waiting."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        earliest: float | None = None
        for waiter, deadline in self._waiters:
            if deadline is None or waiter.done():
                continue
            if deadline <= now:
                waiter.set_exception(TimeoutError())
            elif earliest is None or deadline < earliest:
                earliest = deadline
        if earliest is not None:
            self._timer = loop.call_at(earliest, self._expire)

    def give(self) -> None:
        """Give a slot back: to the first waiter still waiting, else to the free ones."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()[0]
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1
        if self._timer is not None:  # nobody waits: nothing for it to end
            self._timer.cancel()
            self._timer = None


class ConnectionPool:
    """Kept-alive connections to one server (``host``/``port``, TLS when ``ssl`` is given
    per request), at most ``limit`` of them at once for whole answers and as many again
    for streams (two pools of aiohttp's size before: a stream never waits for a request,
    nor a request for the streams a manager keeps open)."""

    def __init__(self, host: str, port: int, *, limit: int = 100,
                 connect_timeout: float = 10.0) -> None:
        self.host, self.port = host, port
        self.connect_timeout = connect_timeout
        self._idle: dict[tuple[int, str | None], deque[_Connection]] = {}
        self._slots = _Slots(limit)
        self._stream_slots = _Slots(limit)
        self._closing = False

    def __repr__(self) -> str:
        idle = sum(len(q) for q in self._idle.values())
        return f"ConnectionPool({self.host}:{self.port}, idle={idle}, waiting={self.waiting})"

    @property
    def waiting(self) -> int:
        """How many requests wait for one of the ``limit`` connections now."""
        return self._slots.waiting

    async def send(self, request: bytes, tls: ssl.SSLContext | None,
                   server_hostname: str | None, deadline: float | None = None) -> Answer:
        """Send the bytes of one request and return its answer; :class:`ConnectFailed`
        when no connection could be opened, ``TimeoutError`` when the answer has not
        ended by ``deadline`` (the loop's clock; waiting for a connection included)."""
        key = (id(tls), server_hostname)
        slots = self._slots
        if not slots.take_now():
            await slots.take(deadline)
        try:
            conn = self._take(key)
            if conn is None:
                async with asyncio.timeout_at(deadline):
                    conn = await self._connect(tls, server_hostname)
            try:
                answer = await conn.exchange(request, deadline)
            except BaseException:
                conn.close()  # mid-request: what is left on it belongs to no one
                raise
            self._give_back(key, conn)
            return answer
        finally:
            slots.give()

    async def open_stream(self, request: bytes, tls: ssl.SSLContext | None,
                          server_hostname: str | None,
                          read_timeout: float | None = None) -> StreamAnswer:
        """Send one request and return its answer once its headers are in; its body is
        read from the :class:`StreamAnswer`, which must be released (or closed)."""
        key = (id(tls), server_hostname)
        if not self._stream_slots.take_now():
            await self._stream_slots.take()
        try:
            conn = self._take(key) or await self._connect(tls, server_hostname)
            try:
                head = await conn.open(request, read_timeout)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            self._stream_slots.give()
            raise

        def done(conn: _Connection) -> None:
            self._stream_slots.give()
            if conn.reusable:
                self._give_back(key, conn)
            else:
                conn.close()

        return StreamAnswer(conn, head, read_timeout, done)

    def _give_back(self, key: tuple[int, str | None], conn: _Connection) -> None:
        transport = conn.transport  # conn.usable, inline (a property call per request)
        if not conn.closed and transport is not None and not transport.is_closing() \
                and not self._closing:
            idle = self._idle.get(key)
            if idle is None:  # not setdefault: a deque made per request to be dropped
                idle = self._idle[key] = deque()
            idle.append(conn)

    def _take(self, key: tuple[int, str | None]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            transport = conn.transport  # conn.usable, inline (a property call per request)
            if not conn.closed and transport is not None and not transport.is_closing():
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
