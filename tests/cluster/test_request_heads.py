"""A request's line and headers are bounded as kube-apiserver bounds them.

k8s.io/apiserver/pkg/server/secure_serving.go serves with ``MaxHeaderBytes: 1 << 20``;
net/http (server.go ``initialReadLimitSize``) reads at most that plus 4096 bytes of a head,
then writes ``431 Request Header Fields Too Large`` as plain text and hangs up. Without the
bound a client could send headers for the whole read-header timeout, every byte kept.
"""

from __future__ import annotations

import asyncio
import ssl

import orjson

from setpoint.cluster import RunningCluster

LIMIT = 1 << 20
GO_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
          b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
          b"431 Request Header Fields Too Large")


async def _open(cluster: RunningCluster) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    tls = ssl.create_default_context(cafile=str(cluster.ca_file))
    return await asyncio.open_connection("127.0.0.1", cluster.port, ssl=tls,
                                         server_hostname="127.0.0.1")


def _head(cluster: RunningCluster, path: str, padding: int, *, close: bool) -> bytes:
    connection = "Connection: close\r\n" if close else ""
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {cluster.token}\r\n"
            f"X-Padding: {'a' * padding}\r\n{connection}\r\n").encode()


async def _answer(reader: asyncio.StreamReader) -> bytes:
    """One answer with a Content-Length (the server's own), read whole."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    return head + await reader.readexactly(length)


async def test_a_head_over_max_header_bytes_is_gos_431_and_the_connection_closed(
        cluster: RunningCluster) -> None:
    reader, writer = await _open(cluster)
    try:
        # a head just under the limit is served, and the connection kept alive
        writer.write(_head(cluster, "/version", LIMIT - 4096, close=False))
        assert (await _answer(reader)).startswith(b"HTTP/1.1 200 ")
        # the next request's head is counted afresh, and refused past the limit
        writer.write(_head(cluster, "/version", LIMIT + 8192, close=False))
        assert await reader.read() == GO_431  # read() to EOF: the server hung up
    finally:
        writer.close()


async def test_pipelined_requests_each_get_the_whole_limit(cluster: RunningCluster) -> None:
    """The count starts again with each request, also within one read of the socket."""
    reader, writer = await _open(cluster)
    try:
        writer.write(_head(cluster, "/version", 16, close=False)
                     + _head(cluster, "/version", LIMIT - 4096, close=False)
                     + _head(cluster, "/version", 16, close=True))
        for _ in range(3):
            assert (await _answer(reader)).startswith(b"HTTP/1.1 200 ")
    finally:
        writer.close()


async def test_a_request_line_over_max_header_bytes_is_431(cluster: RunningCluster) -> None:
    """The request line counts too (a selector in the query cannot grow without bound)."""
    reader, writer = await _open(cluster)
    try:
        selector = "a" * (LIMIT + 8192)
        writer.write(_head(cluster, f"/api/v1/configmaps?labelSelector={selector}", 0,
                           close=True))
        assert await reader.read() == GO_431
    finally:
        writer.close()


async def test_a_request_line_longer_than_64_kib_is_served(cluster: RunningCluster) -> None:
    """Go reads any request line within MaxHeaderBytes; httptools' URL parser alone would
    refuse one over 65535 bytes with a plain-text 400. A label selector of 12,000 values
    is a LIST like any other."""
    values = ",".join(f"v{i}" for i in range(12000))
    reader, writer = await _open(cluster)
    try:
        writer.write(_head(cluster, f"/api/v1/configmaps?labelSelector=a+in+({values})", 0,
                           close=True))
        answer = await _answer(reader)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        assert b'"kind":"ConfigMapList"' in answer
    finally:
        writer.close()


async def test_a_path_longer_than_64_kib_gets_its_status(cluster: RunningCluster) -> None:
    """A path is no different: Go's server reads it whole (net/http ``readRequest``) and the
    apiserver answers a GET of a 100,000-byte name with its NotFound Status (a name too long
    for any object), not httptools' plain-text 400; with a query and percent-escapes too."""
    name = "a" * 100_000
    reader, writer = await _open(cluster)
    try:
        writer.write(_head(cluster, f"/api/v1/namespaces/default/configmaps/{name}", 0,
                           close=False))
        answer = await _answer(reader)
        assert answer.startswith(b"HTTP/1.1 404 "), answer[:300]
        status = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert (status["reason"], status["details"]["name"]) == ("NotFound", name)
        # the same connection goes on: a long path with a query, escaped
        writer.write(_head(cluster, f"/api/v1/namespaces/default/configmaps/b%2D{name}"
                                    "?resourceVersion=0", 0, close=True))
        answer = await _answer(reader)
        assert answer.startswith(b"HTTP/1.1 404 "), answer[:300]
        assert orjson.loads(answer.split(b"\r\n\r\n", 1)[1])["details"]["name"] == f"b-{name}"
    finally:
        writer.close()
