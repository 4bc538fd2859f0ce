"""The transport's fast path for unary requests (setpoint/client/http1.py) against a raw
HTTP/1.1 server: every framing an API server may use is read whole, connections are kept
alive and reused, and it works on uvloop (what ``setpoint run`` uses) as on asyncio.

kube-apiserver is Go's net/http: an answer whose handler set no Content-Length and wrote
more than the server's buffer goes out chunked (net/http/server.go, ``chunkWriter``), and
a ``Connection: close`` answer may end with the connection instead of a length (RFC 9112,
6.3, rule 8).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
import uvloop

from setpoint.client.config import ClusterConfig
from setpoint.client.transport import Transport

CHUNKED = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n"
           b"7\r\n{\"a\": 1\r\n3\r\n, \"\r\n8\r\nb\": [2]}\r\n0\r\n\r\n")
LENGTH = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nWarning: 299 - \"note\"\r\n\r\n{}"
UNTIL_CLOSE = (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json"
               b"\r\n\r\n{\"until\": \"close\"}")

# asyncio.run or uvloop.run: each takes a coroutine, not any awaitable
Runner = Callable[[Coroutine[Any, Any, None]], None]


class RawServer:
    """Answers each request with the next canned answer; counts connections and requests."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = answers
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                self.requests.append(head + body)
                answer = self.answers.pop(0)
                writer.write(answer)
                await writer.drain()
                if b"Connection: close" in answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def run(runner: Runner, answers: list[bytes],
        exercise: Callable[[Transport], Awaitable[None]]) -> RawServer:
    raw = RawServer(answers)

    async def main() -> None:
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = Transport(ClusterConfig(server=f"http://127.0.0.1:{port}"))
        try:
            await exercise(transport)
        finally:
            await transport.close()
            server.close()
            await server.wait_closed()

    runner(main())
    return raw


@pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_answers_framed_by_length_by_chunks_or_by_the_end_are_read_whole(
        runner: Runner) -> None:
    async def exercise(transport: Transport) -> None:
        created = await transport.request("POST", "/api/v1/namespaces/default/configmaps",
                                          body=b'{"kind": "ConfigMap"}')
        assert (created.status, created.body) == (201, b"{}")
        assert created.headers.getall("Warning") == ['299 - "note"']
        chunked = await transport.request("GET", "/api/v1/namespaces/default/configmaps/a",
                                          params={"labelSelector": "app in (a,b)"})
        assert chunked.body == b'{"a": 1, "b": [2]}'
        closed = await transport.request("GET", "/version")
        assert closed.body == b'{"until": "close"}'

    raw = run(runner, [LENGTH, CHUNKED, UNTIL_CLOSE], exercise)
    # one connection for the two kept-alive answers; the third ended its connection
    assert raw.connections == 1
    post, get, _ = raw.requests
    assert post.startswith(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n")
    assert b"\r\nContent-Length: 21\r\n" in post and post.endswith(b'{"kind": "ConfigMap"}')
    assert get.startswith(b"GET /api/v1/namespaces/default/configmaps/a?"
                          b"labelSelector=app+in+(a,b) HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:" in get


def test_a_connection_ended_by_the_server_is_not_used_again() -> None:
    async def exercise(transport: Transport) -> None:
        for _ in range(3):
            assert (await transport.request("GET", "/version")).body == b'{"until": "close"}'

    raw = run(asyncio.run, [UNTIL_CLOSE] * 3, exercise)
    assert raw.connections == 3
