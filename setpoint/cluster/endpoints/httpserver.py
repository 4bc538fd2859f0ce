"""The embedded server's listener: uvicorn's HTTP protocol (httptools) on a socket we bound,
serving every request with one handler through the small request and response of
``http.py``, within the connection limits of ``connections.py``."""

from __future__ import annotations

import asyncio
import contextvars
import socket
import ssl
from collections.abc import Awaitable, Callable
import logging
from typing import Any
from urllib.parse import unquote

from setpoint.cluster.endpoints.connections import ConnectionGuard, ConnectionLimits
from setpoint.cluster.endpoints.http import (
    CONNECTION_KEY,
    LONG_PATH_KEY,
    LONG_QUERY_KEY,
    WRITE_PIECE,
    Message,
    Receive,
    Request,
    Response,
    Send,
    written_whole,
)
from setpoint.cluster.endpoints.uvicornparts import Config, ServerState

log = logging.getLogger("setpoint.cluster")

_PARSE_URL_MAX = 0xFFFF  # http-parser's uint16_t field offsets and lengths


Handler = Callable[[Request], Awaitable[Response]]
AtOnce = Callable[[Message], "Response | None"]
"""A handler's answer to a request it can give from the scope alone, there and then (nothing
to wait for: no body, no I/O; everything it depends on decided by the connection's earlier
requests, their authentication included), or None, having done nothing, for the handler to
serve it as usual. Such an answer is written by the HTTP layer without a task of its own."""


def asgi(handler: Handler, on_authenticated: Callable[[Any], None] = lambda client: None,
         request_timeout_s: float = 60.0,
         ) -> Callable[[Message, Receive, Send], Awaitable[None]]:
    """The ASGI application that serves every request with ``handler``;
    ``on_authenticated(client address)`` learns of connections that proved who they are.
    An answer not taken in by its client ``request_timeout_s`` after the request came has
    its connection aborted (k8s.io/apiserver pkg/server/filters/timeout.go)."""

    async def app(scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan is off and websockets are not served
        request = Request(scope, receive)
        request.received = asyncio.get_running_loop().time()
        request.deadline = request.received + request_timeout_s
        response = await handler(request)
        if request.authenticated:
            on_authenticated(scope.get("client"))
        await response.send(send, request)

    return app


def _answered(response: Response, request_timeout_s: float,
              ) -> Callable[[Message, Receive, Send], Awaitable[None]]:
    """An ASGI application that sends ``response``, decided already (an answer given at
    once that could not be written whole there and then)."""

    async def app(scope: Message, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        request.deadline = asyncio.get_running_loop().time() + request_timeout_s
        await response.send(send, request)

    return app


class _Held:
    """The transport the answers given at once are framed into while a read is parsed; what
    it holds is written in one TLS record, and one send(2), when the read is done."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.parts.append(data)


def _quiet_upgrades(protocol: type, at_once: AtOnce | None = None,
                    request_timeout_s: float = 60.0) -> type:
    """uvicorn's protocol without its warning on upgrade requests, with its own face in
    the scope, and each request in the connection's context.

    kubectl's exec, attach and port-forward ask for SPDY or WebSocket, which the pod streams
    proxy byte for byte to the kubelet after hijacking the connection
    (:meth:`Request.hijack`), so uvicorn's advice to install a WebSocket library would only
    mislead.

    uvicorn starts a pipelined request when the answer before it is complete, from inside
    that request's task, so the new task would copy that request's context variables
    (CPython issue 140947). Its ``reset_contextvars`` answers that with an empty context,
    which would also drop what the embedding program set; here the answer's completion runs
    in a copy of the context the connection was made in, as the connection's first request
    does: each request sees the program's context, never another request's.

    With ``at_once``, a request on an idle connection (nothing before it unanswered, so its
    answer is next in order) is first offered to it, from the parser's callback, before a
    task is made for it. The answers it gives while one read is parsed are held and written
    together once the read is parsed (the load of pipelined GETs a client sends in one
    write gets its answers in one write, as Go's buffered writer flushes when no request
    is left to read), and the keep-alive timer is armed once then, if the connection is
    idle, not after each answer: a request pipelined behind one answered at once may still
    be running (``test_a_request_pipelined_after_one_answered_at_once_keeps_its_connection``)."""

    # a base class known only at run time (uvicorn's config): mypy wants a static one
    class Protocol(protocol):  # type: ignore[misc]
        _peer_certificate: bytes | None  # (set at the first request that asks)

        def connection_made(self, transport: Any) -> None:
            self._context = contextvars.copy_context()
            self.memo: dict[Any, Any] = {}  # Request.connection_memo
            self._held: _Held | None = None  # while a read is parsed (with at_once)
            self._idle_due = False  # an answer given at once completed in this read
            super().connection_made(transport)

        if at_once is not None:
            def data_received(self, data: bytes) -> None:
                self._held = held = _Held()
                try:
                    super().data_received(data)
                finally:
                    self._held = None
                    self._write_held(held)
                if self._idle_due:
                    self._idle_due = False
                    cycle = self.cycle
                    if self.timeout_keep_alive_task is None and not self.pipeline \
                            and (cycle is None or cycle.response_complete) \
                            and not self.transport.is_closing():
                        self.timeout_keep_alive_task = self.loop.call_later(
                            self.timeout_keep_alive, self.timeout_keep_alive_handler)

            def _write_held(self, held: _Held) -> None:
                if held.parts and not self.transport.is_closing():
                    parts, held.parts = held.parts, []
                    self.transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

            def send_400_response(self, msg: str) -> None:
                if self._held is not None:  # the answers before it go first
                    self._write_held(self._held)
                super().send_400_response(msg)

            def _start_asgi_task(self, cycle: Any, app: Any) -> None:
                held = self._held
                if held is not None and app is self.app and cycle.keep_alive \
                        and not cycle.flow.write_paused and not cycle.disconnected:
                    try:
                        response = at_once(cycle.scope)
                    except Exception:  # (a bug: the task's answer tells the client)
                        log.exception("answering a request at once")
                        response = None
                    if response is not None:
                        transport, cycle.transport = cycle.transport, held
                        try:
                            written = len(response.body) <= WRITE_PIECE \
                                and written_whole(response, cycle.send)
                        finally:
                            cycle.transport = transport
                        if written:
                            return
                        app = _answered(response, request_timeout_s)
                super()._start_asgi_task(cycle, app)

        def peer_certificate(self) -> bytes | None:
            """The client's certificate, read once per connection: it is fixed by the
            handshake (the listener refuses renegotiation, as Go's server never
            renegotiates; ``ConnectionState().PeerCertificates`` is what Go's x509
            authenticator reads)."""
            try:
                known: bytes | None = self._peer_certificate
            except AttributeError:
                ssl_object = self.transport.get_extra_info("ssl_object")
                known = ssl_object.getpeercert(binary_form=True) \
                    if ssl_object is not None else None
                self._peer_certificate = known
            return known

        def _unsupported_upgrade_warning(self) -> None:
            pass

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope[CONNECTION_KEY] = self  # Request.hijack takes the connection

        def on_headers_complete(self) -> None:
            # uvicorn splits the URL with httptools.parse_url, whose offsets are 16 bits:
            # a longer URL would be a plain-text 400 ("url is too long"), though Go reads
            # any request line within MaxHeaderBytes (a long label selector is served, a
            # GET of a long name is a 404 Status). The query, and a long path, are split off
            # here and handed on beside the scope.
            url: bytes = self.url  # type: ignore[has-type]
            if len(url) > _PARSE_URL_MAX:
                path, sep, query = url.partition(b"?")
                if sep:
                    self.url = path
                    self.scope[LONG_QUERY_KEY] = query.partition(b"#")[0]
                path = path.partition(b"#")[0]
                if len(path) > _PARSE_URL_MAX and path.startswith(b"/") and path.isascii():
                    # (an absolute-form URL is left to the parser's refusal)
                    self.url = b"/"
                    self.scope[LONG_PATH_KEY] = unquote(path.decode("ascii"),
                                                        errors="surrogateescape")
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            if self._held is not None and not self.pipeline:
                # answered at once (nothing else completes while a read is parsed): what
                # uvicorn does but arm the keep-alive timer, which data_received does once
                self.server_state.total_requests += 1
                if not self.transport.is_closing():
                    self.flow.resume_reading()
                    self._idle_due = True
                return
            # (a copy each time: an eager task factory could complete the next request, and
            # call this again, while this one's context is still entered)
            self._context.copy().run(super().on_response_complete)

    return Protocol


class HTTPServer:
    """uvicorn's HTTP protocol on a socket we bound, inside the caller's event loop.

    uvicorn's ``Server`` installs signal handlers and sleeps before it shuts down; an
    embedded server must do neither, so this runs the listener and its shutdown itself.
    Connections are held to the limits of ``connections.py``.
    """

    def __init__(self, handler: Handler, limits: ConnectionLimits | None = None, *,
                 at_once: AtOnce | None = None) -> None:
        self.limits = limits or ConnectionLimits()
        self._at_once = at_once
        self.guard = ConnectionGuard(self.limits)
        self._config = Config(
            asgi(handler, self.guard.authenticated, self.limits.request_timeout_s),
            http="httptools", ws="none",
            lifespan="off", interface="asgi3", log_config=None, access_log=False,
            server_header=False, date_header=False, proxy_headers=False,
            timeout_keep_alive=int(self.limits.idle_timeout_s))
        self._config.timeout_keep_alive = self.limits.idle_timeout_s  # type: ignore[assignment]
        self._state = ServerState()
        self._listener: asyncio.Server | None = None

    async def start(self, sock: socket.socket, ssl_context: ssl.SSLContext | None) -> None:
        config, state = self._config, self._state
        if not config.loaded:
            config.load()
            config.http_protocol_class = _quiet_upgrades(
                config.http_protocol_class, self._at_once, self.limits.request_timeout_s)
        loop = asyncio.get_running_loop()
        factory = self.guard.protocol_factory(loop, config, state, ssl_context)
        # TLS is set up by the factory, so that a connection still in its handshake can be
        # told apart and closed: asyncio's own ssl= would hide it until the handshake ends
        self._listener = await loop.create_server(factory, sock=sock, backlog=config.backlog)

    async def stop(self, grace_s: float = 1.0) -> None:
        """Stop listening, let requests in flight finish for ``grace_s``, then cancel them."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.close()
        state = self._state
        for connection in list(state.connections):
            connection.shutdown()  # idle ones close now, busy ones after their answer
        if state.tasks:
            _, pending = await asyncio.wait(set(state.tasks), timeout=grace_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        for connection in list(state.connections):
            connection.transport.close()
