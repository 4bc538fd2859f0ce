"""A whole answer written in one piece is the very bytes uvicorn frames.

``Response.send`` writes a small answer's status line, headers and body itself, in one write
(``http.written_whole``), instead of handing uvicorn's ``RequestResponseCycle.send`` a start
and a body message. The wire must not change: for every kind of answer and connection, the
bytes a client reads are compared with those of the same server with the fast path off
(uvicorn framing every answer, as before it), the date pinned so that a second boundary
cannot differ. The server is the embedded server's HTTP layer (``HTTPServer``) on loopback.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from setpoint.cluster.endpoints import http
from setpoint.cluster.endpoints.http import WRITE_PIECE, Request, Response
from setpoint.cluster.endpoints.httpserver import HTTPServer

_DATE = b"Thu, 01 Jan 2026 00:00:00 GMT"
_WRITTEN_WHOLE = http.written_whole


async def _handler(request: Request) -> Response:
    path = request.path
    if path == "/json":
        response = Response(b'{"kind":"ConfigMap"}', 200, "application/json")
        response.headers.append(("cache-control", "no-cache, private"))
        return response
    if path == "/headers":  # names in any case, a UTF-8 value, a repeated name
        response = Response(b"made", 201, "text/plain; charset=utf-8",
                            headers={"Warning": '299 - "deprecated"',
                                     "X-Kubernetes-PF-FlowSchema-UID": "u-1"})
        response.add_header("Audit-ID", "é-1")
        response.headers.append(("warning", '299 - "again"'))
        return response
    if path == "/empty":
        return Response(status=204)
    if path == "/close":  # the answer closes its connection itself
        return Response(b"bye", 200, "text/plain", headers={"Connection": "close"})
    if path == "/bad-value":  # a header uvicorn refuses: the connection closed
        return Response(b"x", 200, "text/plain", headers={"x-bad": "a\nb"})
    if path == "/bad-status":  # a status uvicorn has no line for: the same
        return Response(b"x", 999, "text/plain")
    if path == "/large":
        return Response(b"z" * (WRITE_PIECE + 10), 200, "application/octet-stream")
    return Response(b"404 page not found\n", 404, "text/plain; charset=utf-8")


def _get(path: str, *, version: str = "1.1", close: bool = False, method: str = "GET",
         ) -> bytes:
    extra = "Connection: close\r\n" if close else ""
    return f"{method} {path} HTTP/{version}\r\nHost: x\r\n{extra}\r\n".encode()


# each a connection's requests, sent at once (pipelined); the last one ends the connection
CONVERSATIONS = {
    "pipelined": [_get("/json"), _get("/headers"), _get("/empty"), _get("/missing"),
                  _get("/json"), _get("/large"), _get("/json", close=True)],
    "head": [_get("/json", method="HEAD"), _get("/headers", close=True)],
    "answer closes": [_get("/json"), _get("/close")],
    "http/1.0": [_get("/json", version="1.0")],
    "bad header value": [_get("/json"), _get("/bad-value")],
    "bad status": [_get("/bad-status")],
}


async def _conversation(port: int, requests: list[bytes]) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"".join(requests))
        return await asyncio.wait_for(reader.read(), 30)  # to the server's close
    finally:
        writer.close()


async def _wire(fast: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    seen: list[bool] = []

    def recorded(response: Response, send: http.Send) -> bool:
        seen.append(_WRITTEN_WHOLE(response, send) if fast else False)
        return seen[-1]

    monkeypatch.setattr(http, "written_whole", recorded)
    server = HTTPServer(_handler)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    await server.start(sock, None)
    try:
        port = sock.getsockname()[1]
        wire = {name: await _conversation(port, requests)
                for name, requests in CONVERSATIONS.items()}
    finally:
        await server.stop()
    assert any(seen) == fast  # the path under test was taken (and the other never)
    return wire


async def test_answers_written_whole_are_the_bytes_uvicorn_frames(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "_http_date", lambda: _DATE)
    http._header_lines.clear()
    slow = await _wire(False, monkeypatch)
    fast = await _wire(True, monkeypatch)
    for name in CONVERSATIONS:
        assert fast[name] == slow[name], name
    # and what the comparison covered: uvicorn's framing as kube clients read it
    assert slow["pipelined"].count(b"HTTP/1.1 200 OK\r\ndate: " + _DATE) == 4
    assert b"HTTP/1.1 201 Created\r\ndate: " + _DATE + (
        b"\r\ncontent-length: 4\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b'warning: 299 - "deprecated"\r\nx-kubernetes-pf-flowschema-uid: u-1\r\n'
        b'audit-id: \xc3\xa9-1\r\nwarning: 299 - "again"\r\n\r\nmade') in slow["pipelined"]
    assert slow["pipelined"].endswith(b"connection: close\r\n\r\n{\"kind\":\"ConfigMap\"}")
    # a header or status uvicorn refuses: the connection closed, nothing of the answer
    assert slow["bad header value"].count(b"HTTP/1.1") == 1 and slow["bad status"] == b""
    assert slow["head"].startswith(b"HTTP/1.1 200 OK\r\ndate: " + _DATE +
                                   b"\r\ncontent-length: 20\r\n")
    assert b'{"kind"' not in slow["head"].split(b"HTTP/1.1 201")[0]  # HEAD: no body


async def test_header_lines_are_remembered_per_header_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same headers in another order, or one changed, are framed anew."""
    monkeypatch.setattr(http, "_http_date", lambda: _DATE)
    a = http._framed_header_lines((("Content-Type", "a"), ("x-b", "c")))
    b = http._framed_header_lines((("x-b", "c"), ("Content-Type", "a")))
    assert a == b"content-type: a\r\nx-b: c\r\n"
    assert b == b"x-b: c\r\ncontent-type: a\r\n"
    assert http._framed_header_lines((("Content-Length", "1"),)) is None
    assert http._framed_header_lines((("x", "a\rb"),)) is None
    assert http._framed_header_lines((("bad name", "v"),)) is None
