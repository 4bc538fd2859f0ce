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

from setpoint.cluster.endpoints.http import HTTPServer, Request, Response

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


_tasks_seen: list[asyncio.Task[object] | None] = []
_never: list[asyncio.Future[None]] = []


async def _task_handler(request: Request) -> Response:
    """Notes the task it runs in; ``/timeout`` waits under a deadline that has passed,
    ``/never`` waits for ever (until the server's shutdown cancels it)."""
    _tasks_seen.append(asyncio.current_task())
    if request.path == "/timeout":
        try:
            async with asyncio.timeout(0):
                await asyncio.get_running_loop().create_future()
        except TimeoutError:
            return Response(b"timed out", 200, "text/plain")
    if request.path == "/never":
        _never.append(asyncio.get_running_loop().create_future())
        await _never[-1]
    return Response(b"ok", 200, "text/plain")


async def test_a_connections_requests_run_in_one_task_with_timeouts_and_shutdown() -> None:
    """The requests of one connection run one after the other in one task (uvicorn's task
    per request cost a GET a tenth of its CPU: docs/benchmarks.md, eleventh pass: gets);
    each still runs inside a task, so a timeout interrupts a request's wait and the next
    request is served as usual; the server's shutdown cancels a request that never ends,
    as it cancelled its task (net/http ``Server.Shutdown`` then ``Close``)."""
    _tasks_seen.clear()
    server = HTTPServer(_task_handler)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    await server.start(sock, None)
    try:
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        for path in ["/a", "/timeout", "/b"]:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            want = b"timed out" if path == "/timeout" else b"ok"
            assert await _answers(reader, 1) == [want]
        paths = ["/c", "/timeout", "/d"]  # pipelined
        writer.write(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths))
        assert await _answers(reader, 3) == [b"ok", b"timed out", b"ok"]
        assert len(_tasks_seen) == 6 and None not in _tasks_seen
        assert len(set(map(id, _tasks_seen))) == 1
        assert not server._state.tasks  # (a task is the server's only while it serves)
        writer.write(b"GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        while not _never:
            await asyncio.sleep(0.01)
        assert server._state.tasks == {_tasks_seen[0]}
        # a second connection's requests run in a task of their own
        reader2, writer2 = await asyncio.open_connection(*sock.getsockname()[:2])
        writer2.write(b"GET /e HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await _answers(reader2, 1) == [b"ok"]
        assert _tasks_seen[-1] is not _tasks_seen[0]
    finally:
        await asyncio.wait_for(server.stop(grace_s=0.1), 60)
    assert _never[0].cancelled()
    assert await reader.read() in (b"", b"HTTP/1.1 500 Internal Server Error\r\n"
                                   b"content-type: text/plain; charset=utf-8\r\n"
                                   b"content-length: 21\r\nconnection: close\r\n\r\n"
                                   b"Internal Server Error")


_release: list[asyncio.Future[None]] = []


async def _slow_handler(request: Request) -> Response:
    if request.path == "/slow":
        _release.append(asyncio.get_running_loop().create_future())
        await _release[-1]
    return Response(request.path.encode(), 200, "text/plain")


async def test_a_request_pipelined_after_one_answered_at_once_keeps_its_connection() -> None:
    """A request answered without waiting arms the idle (keep-alive) timeout as its answer
    completes, while the request pipelined behind it in the same bytes is still to run; that
    one must not lose its connection to the idle timeout while it runs (Go's ``IdleTimeout``
    counts only between requests: net/http server.go)."""
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
        while not _release:
            await asyncio.sleep(0.01)
        quiet_period_longer_than_the_idle_timeout = 5 * idle_s
        await asyncio.sleep(quiet_period_longer_than_the_idle_timeout)
        _release[0].set_result(None)
        assert await _answers(reader, 2) == [b"/a", b"/slow"]
        writer.close()
        await writer.wait_closed()
    finally:
        await server.stop()
