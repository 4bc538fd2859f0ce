"""A request's context variables stay its own on a keep-alive connection.

Go's net/http server (which kube-apiserver serves with, k8s.io/apiserver/pkg/server/
secure_serving.go) gives every request a context derived from the server's base context
(net/http/server.go, ``conn.serve``: ``ctx`` per connection, then ``context.WithCancel``
per request), never from the request before it. uvicorn starts a pipelined request from
inside the task of the request it waited for, so without care that request's context
variables leaked into the next (CPython issue 140947). The server here is the embedded
server's HTTP layer (``HTTPServer``) on loopback, with a handler that reads and then sets
a context variable.
"""

from __future__ import annotations

import asyncio
import contextvars
import socket

from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.httpserver import HTTPServer
from tests.waiting import quiet_period, wait_for

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


async def _handler(request: Request) -> Response:
    """Answers what the context held when the request began, then changes it."""
    before = _seen.get()
    _seen.set(f"set by {request.path}")
    if request.path == "/wait":
        # an answer after one trip through the loop (a callback the loop runs next)
        turn = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(turn.set_result, None)
        await turn
    return Response(before.encode(), 200, "text/plain")


async def _answers(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    bodies = []
    for _ in range(n):
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
        bodies.append(await reader.readexactly(length))
    return bodies


async def test_pipelined_requests_do_not_see_each_others_context() -> None:
    """Requests sent back to back on one connection (each waiting for the one before, as
    HTTP/1.1 answers in order) each begin in the program's context, as the first does."""
    _seen.set("the program's")
    server = HTTPServer(_handler)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    await server.start(sock, None)
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        paths = ["/a", "/wait", "/b", "/c"]
        writer.write(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths))
        assert await _answers(reader, len(paths)) == [b"the program's"] * len(paths)
        # and a request sent after the others were answered, on the same connection
        writer.write(b"GET /d HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await _answers(reader, 1) == [b"the program's"]
        writer.close()
        await writer.wait_closed()
    finally:
        await server.stop()


_release: list[asyncio.Future[None]] = []


async def _slow_handler(request: Request) -> Response:
    if request.path == "/slow":
        _release.append(asyncio.get_running_loop().create_future())
        await _release[-1]
    return Response(request.path.encode(), 200, "text/plain")


async def test_a_request_pipelined_after_one_answered_at_once_keeps_its_connection() -> None:
    """A request pipelined behind one answered at once, in the same bytes, does not lose
    its connection to the idle (keep-alive) timeout while it runs: Go's ``IdleTimeout``
    counts only between requests (net/http server.go). (An eager start of requests, tried
    in the eleventh pass on gets, armed that timer as the first answer completed.)"""
    from setpoint.cluster.endpoints.connections import ConnectionLimits

    idle_s = 0.2
    _release.clear()
    server = HTTPServer(_slow_handler, ConnectionLimits(idle_timeout_s=idle_s))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    await server.start(sock, None)
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        writer.write(b"GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")  # (the task is made)
        assert await _answers(reader, 1) == [b"/warm"]
        writer.write(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        await wait_for(lambda: _release)  # the slow request is being handled
        await quiet_period(5 * idle_s)  # longer than the idle timeout: the connection stays
        _release[0].set_result(None)
        assert await _answers(reader, 2) == [b"/a", b"/slow"]
        writer.close()
        await writer.wait_closed()
    finally:
        await server.stop()
