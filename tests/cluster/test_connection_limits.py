"""Connections without credentials cannot lock authenticated clients out.

kube-apiserver (k8s.io/apiserver/pkg/server/secure_serving.go) serves with
``ReadHeaderTimeout: 32s`` (bounding the TLS handshake too) and ``IdleTimeout: 90s``. These
tests run the server in a subprocess whose file limit is small (``resource.setrlimit``), on
loopback, and hold more idle connections than it has descriptors.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

NOFILE = 256


@pytest.fixture(params=["uvloop", "asyncio"])
def event_loop_kind(request: pytest.FixtureRequest) -> str:
    """The server's event loop: each has its own TLS protocol (connections.py)."""
    return str(request.param)


@pytest.fixture
def limited_server(request: pytest.FixtureRequest,
                   event_loop_kind: str) -> Iterator[dict[str, Any]]:
    timeout_s = getattr(request, "param", 32.0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.cluster.serve_limited", str(NOFILE), str(timeout_s),
         event_loop_kind],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        host, port = info["url"].removeprefix("https://").rsplit(":", 1)
        info["address"] = (host, int(port))
        yield info
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)


def _tls(info: dict[str, Any]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=info["ca_file"])


def _get(info: dict[str, Any], path: str, *, token: str | None) -> bytes:
    """One request on a fresh connection; the whole answer (generous timeout: a server that
    locked its clients out never answers)."""
    with socket.create_connection(info["address"], timeout=30) as raw, \
            _tls(info).wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
                     .encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        return data


def _exchange(conn: socket.socket, token: str) -> bytes:
    """One authenticated request on a kept-alive connection; its whole answer."""
    conn.sendall(f"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {token}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        body += conn.recv(65536)
    return head


def test_idle_unauthenticated_connections_cannot_exhaust_the_server(
        limited_server: dict[str, Any]) -> None:
    """More idle connections than the server has descriptors, half of them stuck before their
    TLS handshake and half after it, and an authenticated client is still served."""
    info = limited_server
    held: list[socket.socket] = []
    try:
        for i in range(NOFILE + 50):
            raw = socket.create_connection(info["address"], timeout=30)
            if i % 2:
                raw = _tls(info).wrap_socket(raw, server_hostname="127.0.0.1")
            held.append(raw)
        answer = _get(info, "/api/v1/namespaces/default/configmaps", token=info["token"])
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        # once authenticated, a connection is kept while unauthenticated ones make room
        with socket.create_connection(info["address"], timeout=30) as raw, \
                _tls(info).wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            assert _exchange(conn, info["token"]).startswith(b"HTTP/1.1 200")
            for _ in range(NOFILE):
                held.append(socket.create_connection(info["address"], timeout=30))
            assert _exchange(conn, info["token"]).startswith(b"HTTP/1.1 200")
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize("limited_server", [1.0], indirect=True)
def test_a_connection_that_sends_no_request_is_closed(limited_server: dict[str, Any]) -> None:
    """Neither a handshake nor a request header may be withheld past ReadHeaderTimeout."""
    info = limited_server
    with socket.create_connection(info["address"], timeout=30) as raw:
        assert _closed_by_server(raw)  # no handshake
    with socket.create_connection(info["address"], timeout=30) as raw, \
            _tls(info).wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        conn.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")  # headers never finish
        assert _closed_by_server(conn)
    # on a kept-alive connection, the deadline holds for each request's headers, not only
    # the first's (the timer is re-armed lazily: connections.py)
    with socket.create_connection(info["address"], timeout=30) as raw, \
            _tls(info).wrap_socket(raw, server_hostname="127.0.0.1") as conn:
        assert _exchange(conn, info["token"]).startswith(b"HTTP/1.1 200")
        assert _exchange(conn, info["token"]).startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        assert _closed_by_server(conn)


def _closed_by_server(conn: socket.socket) -> bool:
    """Wait (up to the socket's timeout) for the server to close; an abort may reset."""
    try:
        return conn.recv(1) == b""
    except (ssl.SSLError, ConnectionError):
        return True
