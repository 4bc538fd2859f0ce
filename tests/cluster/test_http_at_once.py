"""Answers given at once by the HTTP layer (``HTTPServer(at_once=...)``), with no task of
their own, keep HTTP/1.1's rules.

An answer given at once is written from the parser's callback, so it must still come in the
order of the requests (RFC 9112 section 9.3.2: pipelined answers in the order of their
requests; Go's net/http serves a connection's requests one after another, ``conn.serve``),
and the keep-alive timeout must count only between requests (Go's ``IdleTimeout``,
net/http server.go ``conn.serve``: set once a request's answer is done and none is read).
The server is the embedded server's HTTP layer on loopback (with no access log, as
configured, though pytest's log capture gives uvicorn's access logger handlers).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from setpoint.cluster.endpoints.connections import ConnectionLimits
from setpoint.cluster.endpoints.http import WRITE_PIECE, Message, Request, Response
from setpoint.cluster.endpoints.httpserver import HTTPServer
from tests.waiting import quiet_period, wait_for

_release: list[asyncio.Future[None]] = []
_at_once: list[str] = []  # the paths answered at once, in turn
_served: list[str] = []  # the paths the handler served


async def _handler(request: Request) -> Response:
    _served.append(request.path)
    if request.path == "/slow":
        _release.append(asyncio.get_running_loop().create_future())
        await _release[-1]
    return Response(request.path.encode(), 200, "text/plain")


def _answer_at_once(scope: Message) -> Response | None:
    path: str = scope["path"]
    if path == "/broken":
        raise RuntimeError("a bug in the handler's at-once answer")
    if not path.startswith("/fast"):
        return None
    _at_once.append(path)
    body = b"x" * (2 * WRITE_PIECE) if path == "/fast-large" else path.encode()
    return Response(body, 200, "text/plain")


@pytest.fixture
async def address() -> AsyncIterator[tuple[str, int]]:
    _release.clear()
    _at_once.clear()
    _served.clear()
    server = HTTPServer(_handler, ConnectionLimits(idle_timeout_s=0.2),
                        at_once=_answer_at_once)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    await server.start(sock, None)
    try:
        yield sock.getsockname()[:2]
    finally:
        await server.stop()


def _gets(*paths: str, close: bool = False) -> bytes:
    extra = "Connection: close\r\n" if close else ""
    return b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode() for p in paths)


async def _answers(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    bodies = []
    for _ in range(n):
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
        bodies.append(await reader.readexactly(length))
    return bodies


async def test_pipelined_answers_keep_their_requests_order(
        address: tuple[str, int]) -> None:
    """Requests pipelined in one write are answered in order: the ones the handler can
    answer at once are, while nothing is unanswered before them; behind one the handler is
    still serving, they wait their turn (and go to the handler as any request would)."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(_gets("/fast-1", "/fast-2", "/other", "/fast-3"))
    assert await _answers(reader, 4) == [b"/fast-1", b"/fast-2", b"/other", b"/fast-3"]
    assert _at_once == ["/fast-1", "/fast-2"] and _served == ["/other", "/fast-3"]

    _at_once.clear()
    _served.clear()
    writer.write(_gets("/slow", "/fast-4"))
    await wait_for(lambda: _release)
    _release[0].set_result(None)
    assert await _answers(reader, 2) == [b"/slow", b"/fast-4"]
    assert _at_once == [] and _served == ["/slow", "/fast-4"]
    writer.close()
    await writer.wait_closed()


async def test_a_request_pipelined_behind_an_answer_at_once_keeps_its_connection(
        address: tuple[str, int]) -> None:
    """A request pipelined behind one answered at once, and still being served, does not
    lose its connection to the keep-alive timeout (0.2 s here)."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(_gets("/fast", "/slow"))
    await wait_for(lambda: _release)
    await quiet_period(1.0)  # five idle timeouts: the connection stays
    _release[0].set_result(None)
    assert await _answers(reader, 2) == [b"/fast", b"/slow"]
    writer.close()
    await writer.wait_closed()


async def test_an_idle_connection_is_closed_after_answers_at_once(
        address: tuple[str, int]) -> None:
    """Once every answer is written, answered at once or not, the keep-alive timeout runs:
    an idle connection is closed by the server."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(_gets("/fast-1", "/fast-2"))
    assert await _answers(reader, 2) == [b"/fast-1", b"/fast-2"]
    assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the server
    writer.close()


async def test_answers_at_once_that_cannot_be_written_whole_are_sent_once(
        address: tuple[str, int]) -> None:
    """An answer too large to be written in one piece is sent as any large answer is,
    given once (the handler not asked again); one whose request asks to close the
    connection goes to the handler; an at-once answer that raises leaves the request to
    the handler."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(_gets("/fast-large", "/broken"))
    assert await _answers(reader, 2) == [b"x" * (2 * WRITE_PIECE), b"/broken"]
    assert _at_once == ["/fast-large"] and _served == ["/broken"]
    writer.write(_gets("/fast-last", close=True))
    assert await _answers(reader, 1) == [b"/fast-last"]
    assert _served == ["/broken", "/fast-last"]
    assert await asyncio.wait_for(reader.read(), 30) == b""
    writer.close()
