"""Answers the handler can give at once, written by the HTTP layer with no task of their own.

uvicorn makes an asyncio task for every request, and its framing a request-response cycle
and an ``asyncio.Event``: for a GET answered from memory these were a fifth of the server's
CPU (docs/benchmarks.md, "thirteenth pass: gets"). A handler that can answer some requests
from the scope alone (``AtOnce``: nothing to wait for) is offered each request that is next
in line on its connection (nothing before it unanswered) as soon as its head is parsed, and
what it answers is framed here, as uvicorn would frame it, and held; the answers held while
one read of the socket is parsed are written together when it is (a client's pipelined
requests sent in one write get their answers in one TLS record and one send(2); Go's server
too writes through a buffer that it flushes when no request is left to read). Anything the
handler does not answer at once goes to uvicorn as before.

HTTP/1.1's rules stay: answers in the order of the requests (one is answered at once only
when nothing before it is unanswered, and a held answer is written before anything written
later), and the keep-alive timeout counts only between requests: it is armed when a read
leaves the connection idle, not after each answer, since a request pipelined behind one
answered at once may still be running (Go's ``IdleTimeout``, net/http server.go).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

import httptools

from setpoint.cluster.endpoints.http import (
    WRITE_PIECE,
    Message,
    Receive,
    Request,
    Response,
    Send,
    framed_whole,
)

log = logging.getLogger("setpoint.cluster")

AtOnce = Callable[[Message], "Response | None"]
"""A handler's answer to a GET it can give from the scope alone, there and then (nothing
to wait for: no body, no I/O; everything it depends on decided by the connection's earlier
requests, their authentication included), or None, having done nothing, for the handler to
serve it as usual."""

_PARSE_URL_MAX = 0xFFFF  # longer URLs are split by the protocol below this one


class _Answered:
    """What stands for uvicorn's request-response cycle once a request is answered at
    once: complete, so that the parser's later callbacks for it (a body, its end) and the
    next request find nothing in progress."""

    __slots__ = ()
    response_complete = True
    disconnected = False
    keep_alive = True

    class message_event:  # (the cycle's attribute uvicorn sets on a connection's loss)
        @staticmethod
        def set() -> None:
            pass


_ANSWERED = _Answered()


def _answered(response: Response, request_timeout_s: float,
              ) -> Callable[[Message, Receive, Send], Awaitable[None]]:
    """An ASGI application that sends ``response``, given at once but not to be framed
    here (uvicorn frames it), from the request's own task."""

    async def app(scope: Message, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        request.deadline = asyncio.get_running_loop().time() + request_timeout_s
        await response.send(send, request)

    return app


def answering_at_once(protocol: type, at_once: AtOnce, request_timeout_s: float) -> type:
    """uvicorn's httptools protocol ``protocol`` (or a subclass) offering each request next
    in line to ``at_once`` first."""

    # a base class known only at run time (uvicorn's config): mypy wants a static one
    class AnsweringAtOnce(protocol):  # type: ignore[misc]
        cycle: Any  # (uvicorn's, typed here: its base is known at run time only)
        timeout_keep_alive_task: asyncio.TimerHandle | None
        _held: list[bytes] | None = None  # answers framed while a read is parsed
        _idle_due = False  # an answer given at once was the read's last answer so far
        _given: Response | None = None  # an answer given, for uvicorn to frame

        def data_received(self, data: bytes) -> None:
            held: list[bytes] = []
            self._held = held
            try:
                super().data_received(data)
            finally:
                self._held = None
                self._write(held)
            if self._idle_due:
                self._idle_due = False
                if self.cycle is _ANSWERED and self.timeout_keep_alive_task is None \
                        and not self.transport.is_closing():
                    self.timeout_keep_alive_task = self.loop.call_later(
                        self.timeout_keep_alive, self.timeout_keep_alive_handler)

        def _write(self, held: list[bytes]) -> None:
            if held and not self.transport.is_closing():
                self.transport.write(held[0] if len(held) == 1 else b"".join(held))
                held.clear()

        def send_400_response(self, msg: str) -> None:
            if self._held:  # the answers before it go first
                self._write(self._held)
            super().send_400_response(msg)

        def on_headers_complete(self) -> None:
            if self._held is None or not self._answer_at_once():
                super().on_headers_complete()

        def _answer_at_once(self) -> bool:
            """Whether the request whose head was just parsed was answered (held)."""
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                return False  # an answer before it is still to come
            parser = self.parser
            if parser.get_method() != b"GET":
                return False  # (only reads are answered from what is kept: no double parse)
            if len(self.url) > _PARSE_URL_MAX or parser.get_http_version() != "1.1" \
                    or not parser.should_keep_alive() or parser.should_upgrade() \
                    or self.limit_concurrency is not None or self.flow.write_paused \
                    or self.access_log or self.server_state.default_headers \
                    or self.transport.is_closing():
                return False  # (uvicorn's own framing and checks)
            # the scope as uvicorn's on_headers_complete fills it
            scope = self.scope
            scope["method"] = "GET"
            url = httptools.parse_url(self.url)
            path = url.path.decode("ascii")
            scope["path"] = self.root_path + (unquote(path) if "%" in path else path)
            scope["raw_path"] = self.root_path.encode("ascii") + url.path
            scope["query_string"] = url.query or b""
            try:
                response = at_once(scope)
            except Exception:  # (a bug: the handler's answer in the task tells the client)
                log.exception("answering GET %s at once", scope["path"])
                return False
            if response is None:
                return False
            framed = framed_whole(response) if len(response.body) <= WRITE_PIECE else None
            if framed is None:
                self._given = response  # (for uvicorn to frame, in the request's task)
                return False
            self._held.append(framed)  # type: ignore[union-attr]
            self.cycle = _ANSWERED
            # what uvicorn's on_response_complete does but arm the keep-alive timer (nor
            # resume reading: only a request before it paused it, and it is answered)
            self.server_state.total_requests += 1
            self._idle_due = True
            return True

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            given, self._given = self._given, None
            if given is not None:
                app = _answered(given, request_timeout_s)
            super()._start_asgi_task(cycle, app)

    return AnsweringAtOnce
