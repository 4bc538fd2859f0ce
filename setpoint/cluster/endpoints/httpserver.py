"""The embedded server's listener: uvicorn's HTTP protocol (httptools) on a socket we bound,
serving every request with one handler through the small request and response of
``http.py``, within the connection limits of ``connections.py``."""

from __future__ import annotations

import asyncio
import contextvars
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from setpoint.cluster.endpoints.atonce import AtOnce, answering_at_once
from setpoint.cluster.endpoints.connections import ConnectionGuard, ConnectionLimits
from setpoint.cluster.endpoints.http import (
    CONNECTION_KEY,
    LONG_PATH_KEY,
    LONG_QUERY_KEY,
    Message,
    Receive,
    Request,
    Response,
    Send,
)
from setpoint.cluster.endpoints.uvicornparts import Config, ServerState

_PARSE_URL_MAX = 0xFFFF  # http-parser's uint16_t field offsets and lengths


Handler = Callable[[Request], Awaitable[Response]]


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


def _quiet_upgrades(protocol: type) -> type:
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
    does: each request sees the program's context, never another request's."""

    # a base class known only at run time (uvicorn's config): mypy wants a static one
    class Protocol(protocol):  # type: ignore[misc]
        _peer_certificate: bytes | None  # (set at the first request that asks)
        access_log: bool  # (uvicorn's, typed here: its base is known at run time only)

        def connection_made(self, transport: Any) -> None:
            self._context = contextvars.copy_context()
            self.memo: dict[Any, Any] = {}  # Request.connection_memo
            # no access log when the config says so: uvicorn logs whenever its access
            # logger has handlers, and a program's own (a test's log capture) may give it
            # some; answers logged are framed by uvicorn, not written whole nor at once
            self.access_log = self.access_log and self.config.access_log
            super().connection_made(transport)

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
        """``at_once``: the handler's answers it can give without a task (atonce.py)."""
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
            config.http_protocol_class = _quiet_upgrades(config.http_protocol_class)
            if self._at_once is not None:
                config.http_protocol_class = answering_at_once(
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
