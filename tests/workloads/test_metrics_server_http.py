"""The metrics server's HTTP/1.1 layer (setpoint/workloads/metricsserver/http1.py), over
real TLS on loopback: kept-alive connections, and the bounds of the generic API server's
``http.Server`` (k8s.io/apiserver pkg/server/secure_serving.go: ``MaxHeaderBytes: 1 << 20``,
``ReadHeaderTimeout``, ``IdleTimeout``; pkg/server/config.go ``MaxRequestBodyBytes``): a
request over them is answered 431/413 and its connection closed, whatever the client goes
on sending; nothing grows with it. An answer is bounded by the request timeout
(pkg/server/config.go ``RequestTimeout``, pkg/server/filters/timeout.go).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator

import pytest

from setpoint.workloads.metricsserver import http1
from setpoint.workloads.metricsserver.certs import server_context, serving_certificates
from setpoint.workloads.metricsserver.http1 import HTTPServer, Request, Response
from tests.waiting import wait_for

Exchange = tuple[int, dict[str, str], bytes]
FLOOD_CAP = 256 << 20
"""What a flooding client sends at most: far over every limit (and the loopback's socket
buffers), so a server that buffered instead of answering would let the client send it all
and never answer."""


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[HTTPServer, int, ssl.SSLContext, list[Request]]]:
    made = serving_certificates("metrics-server", "kube-system")
    seen: list[Request] = []

    async def handler(request: Request) -> Response:
        seen.append(request)
        return Response.json(200, {"path": request.path, "query": dict(request.query),
                                   "n": len(seen)})

    server = HTTPServer(handler, server_context(made))
    port = await server.start("127.0.0.1", 0)
    client = ssl.create_default_context(cadata=made.ca_pem.decode())
    try:
        yield server, port, client, seen
    finally:
        await server.stop()


async def connect(port: int, context: ssl.SSLContext
                  ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                         server_hostname="metrics-server.kube-system.svc")


async def read_answer(reader: asyncio.StreamReader) -> Exchange:
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers["content-length"]))
    return status, headers, body


async def closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server ended the connection (EOF or reset) and sent nothing more."""
    try:
        return await reader.read() == b""
    except (ConnectionError, ssl.SSLError):
        return True


def get(path: str, *extra: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: metrics-server.kube-system.svc", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_a_connection_is_kept_alive_across_requests_pipelined_or_not() -> None:
    async with serving() as (server, port, client, seen):
        reader, writer = await connect(port, client)
        writer.write(get("/apis/a?labelSelector=app%3Dx&labelSelector=second&x="))
        status, headers, body = await read_answer(reader)
        assert (status, headers.get("connection")) == (200, None)
        assert json.loads(body) == {"path": "/apis/a",
                                    "query": {"labelSelector": "app=x", "x": ""}, "n": 1}
        # the same connection again, then two requests in one write: answered in order
        writer.write(get("/apis/b"))
        assert json.loads((await read_answer(reader))[2])["n"] == 2
        writer.write(get("/apis/c") + get("/apis/d"))
        answers = [await read_answer(reader), await read_answer(reader)]
        assert [json.loads(b)["path"] for _, _, b in answers] == ["/apis/c", "/apis/d"]
        assert len(server.connections) == 1
        # a client that asks for the end gets its answer, then the connection ends
        writer.write(get("/apis/e", "Connection: close"))
        status, headers, _ = await read_answer(reader)
        assert (status, headers["connection"]) == (200, "close")
        assert await closed(reader)
        writer.close()
        assert [r.path for r in seen] == ["/apis/a", "/apis/b", "/apis/c", "/apis/d",
                                          "/apis/e"]


async def test_too_many_header_fields_are_answered_431_and_the_connection_closed() -> None:
    async with serving() as (_, port, client, seen):
        reader, writer = await connect(port, client)
        fields = [f"X-Remote-Extra-N{i}: v" for i in range(http1.MAX_HEADERS + 1)]
        writer.write(get("/apis/a", *fields) + get("/apis/b"))
        status, headers, _ = await read_answer(reader)
        assert (status, headers["connection"]) == (431, "close")
        assert await closed(reader)
        writer.close()
        assert seen == []  # neither that request nor the one after it reached the handler


async def flood(writer: asyncio.StreamWriter, head: bytes, filler: bytes,
                answered: asyncio.Event) -> int:
    """Send ``head`` then ``filler`` over and over (up to FLOOD_CAP) until the server has
    answered or the connection fails; how much was sent."""
    sent = 0
    try:
        writer.write(head)
        while sent < FLOOD_CAP and not answered.is_set():
            writer.write(filler)
            sent += len(filler)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, RuntimeError):
        pass
    return sent


@pytest.mark.parametrize(("head", "status"), [
    # a header value that never ends
    (b"GET /apis/a HTTP/1.1\r\nHost: metrics-server.kube-system.svc\r\nX-Big: ", 431),
    # a request line that never ends
    (b"GET /apis/", 431),
    # a body over MaxRequestBodyBytes, announced as nearly unbounded
    (b"POST /apis/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1099511627776\r\n\r\n", 413),
])
async def test_an_oversized_request_is_answered_and_closed_while_the_client_still_sends(
        head: bytes, status: int) -> None:
    async with serving() as (_, port, client, seen):
        reader, writer = await connect(port, client)
        answered = asyncio.Event()
        sending = asyncio.create_task(flood(writer, head, b"a" * 65536, answered))
        try:
            got, headers, body = await read_answer(reader)
            answered.set()
            assert (got, headers["connection"]) == (status, "close")
            if status == 413:  # apimachinery errors.NewRequestEntityTooLargeError
                assert json.loads(body)["reason"] == "RequestEntityTooLarge"
            # the server answered before the client had sent all it wanted to
            assert await sending < FLOOD_CAP
            assert await closed(reader)
        finally:
            sending.cancel()
            writer.close()
        assert seen == []


async def test_a_slow_head_and_an_idle_connection_are_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1, "READ_HEADER_TIMEOUT", 0.2)
    monkeypatch.setattr(http1, "IDLE_TIMEOUT", 0.2)
    async with serving() as (_, port, client, seen):
        idle_reader, idle = await connect(port, client)
        slow_reader, slow = await connect(port, client)
        slow.write(b"GET /apis/a HTTP/1.1\r\nHost: x\r\n")
        assert await closed(idle_reader) and await closed(slow_reader)
        idle.close()
        slow.close()
        assert seen == []


async def test_a_request_that_is_not_http_is_answered_400() -> None:
    async with serving() as (_, port, client, seen):
        reader, writer = await connect(port, client)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        status, _, _ = await read_answer(reader)
        assert status == 400 and await closed(reader)
        writer.close()
        assert seen == []


async def test_a_handler_slower_than_the_request_timeout_is_answered_504(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """filters/timeout.go: no answer within the request timeout (60 s; shortened here) is
    the 504 ``NewTimeoutError("request did not complete within the allotted timeout", 0)``,
    and the connection stays usable."""
    monkeypatch.setattr(http1, "REQUEST_TIMEOUT", 0.3)
    never = asyncio.Event()
    made = serving_certificates("metrics-server", "kube-system")

    async def handler(request: Request) -> Response:
        if request.path == "/slow":
            await never.wait()
        return Response.text(200, "ok")

    server = HTTPServer(handler, server_context(made))
    port = await server.start("127.0.0.1", 0)
    try:
        reader, writer = await connect(port, ssl.create_default_context(
            cadata=made.ca_pem.decode()))
        writer.write(get("/slow") + get("/fast"))
        status, _, body = await asyncio.wait_for(read_answer(reader), 30)
        assert status == 504
        assert json.loads(body) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Timeout: request did not complete within the allotted timeout",
            "reason": "Timeout", "details": {}, "code": 504}
        assert (await read_answer(reader))[:1] == (200,)
        writer.close()
    finally:
        await server.stop()


async def test_an_answer_the_client_does_not_read_is_dropped_at_the_request_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeout filter bounds the handler's writes too: once they block on a client
    that does not read, the connection is aborted (``http.ErrAbortHandler``) and the
    server holds nothing of it."""
    monkeypatch.setattr(http1, "REQUEST_TIMEOUT", 0.5)
    made = serving_certificates("metrics-server", "kube-system")
    big = b"x" * (32 << 20)  # far over what the loopback's socket buffers take

    async def handler(request: Request) -> Response:
        return Response(200, big)

    server = HTTPServer(handler, server_context(made))
    port = await server.start("127.0.0.1", 0)
    try:
        reader, writer = await connect(port, ssl.create_default_context(
            cadata=made.ca_pem.decode()))
        writer.write(get("/big"))
        await wait_for(lambda: server.connections)
        await wait_for(lambda: not server.connections)  # dropped, never read
        received = 0
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            while chunk := await reader.read(1 << 20):
                received += len(chunk)
        assert received < len(big)
        writer.close()
    finally:
        await server.stop()
