"""A client that stops reading costs the server a bounded buffer, then its connection.

kube-apiserver writes an answer through Go's net/http, whose ``Write`` blocks while the
socket's send buffer is full, so a LIST (responsewriters/writers.go ``SerializeObject``,
streamed by ``StreamingEncoder`` since 1.32) stops being encoded while its client does not
read; the generic API server's timeout filter (k8s.io/apiserver pkg/server/filters/
timeout.go) then ends a non-long-running request at ``RequestTimeout`` (60 s,
pkg/server/config.go), aborting the connection (``http.ErrAbortHandler``) when the answer
was begun. A watch is long-running; a watcher whose buffer stays full is terminated by the
watch cache (pkg/storage/cacher/cache_watcher.go ``add``: ``nonblockingAdd``, then a wait
bounded by the dispatch budget, then ``forget``/``stopLocked``), which ends its answer.

The client here is a real TLS client over loopback that sends its request and never reads.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import aiohttp
import orjson
import pytest
import uvloop

from setpoint.cluster import RunningCluster, serve
from setpoint.cluster.endpoints import collections as collection_reads
from setpoint.cluster.endpoints import http as http_module
from setpoint.cluster.endpoints import listencoding
from setpoint.cluster.endpoints.connections import ConnectionLimits
from setpoint.cluster.endpoints.listencoding import LIST_CHUNK_BYTES
from setpoint.cluster.storage import store as store_module
from setpoint.testing.waiting import wait_for
from tests.cluster.conftest import API
from tests.waiting import quiet_period

MiB = 1 << 20
VALUE = "x" * (34 * 1024)  # a ConfigMap of ~35 KiB: 600 of them make a 20 MiB LIST


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _kernel_send_buffer() -> int:
    with open("/proc/sys/net/ipv4/tcp_wmem") as limits:
        return int(limits.read().split()[2])


# asyncio.run or uvloop.run: their TLS transports differ (connections.py _tls_protocol_class)
RUNNERS = pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
Scenario = Callable[[RunningCluster, API], Awaitable[None]]


def _run(runner: Callable[[Any], Any], scenario: Scenario) -> None:
    """``scenario`` against a server whose request timeout is 3 s (60 s by default)."""
    async def main() -> None:
        async with serve(limits=ConnectionLimits(request_timeout_s=3.0)) as cluster:
            headers = {"Authorization": f"Bearer {cluster.token}"}
            async with aiohttp.ClientSession(headers=headers) as session:
                await scenario(cluster, API(cluster, session))
    runner(main())


def _stalled_client(cluster: RunningCluster, path: str) -> ssl.SSLSocket:
    """A TLS connection that has sent a GET of ``path`` and will read nothing."""
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # before connect
    raw.connect((host, int(port)))
    context = ssl.create_default_context(cafile=str(cluster.ca_file))
    tls = context.wrap_socket(raw, server_hostname=host)
    tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
                f"Authorization: Bearer {cluster.token}\r\n\r\n".encode())
    return tls


async def _populate(api: API, ns: str, count: int) -> None:
    async def create(i: int) -> None:
        status, body = await api.post(f"/api/v1/namespaces/{ns}/configmaps",
                                      {"metadata": {"name": f"cm-{i:04d}"},
                                       "data": {"v": VALUE}})
        assert status == 201, body
    for start in range(0, count, 50):
        await asyncio.gather(*(create(i) for i in range(start, min(count, start + 50))))


class _Produced:
    """Counts the parts a streamed answer's producer yields, and notes when it is closed
    (the server gave up the answer, or finished it)."""

    def __init__(self) -> None:
        self.parts = 0
        self.bytes = 0
        self.closed = asyncio.Event()

    def wrap(self, produce: Any) -> Any:
        async def wrapped(*args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
            try:
                async for part in produce(*args, **kwargs):
                    self.parts += 1
                    self.bytes += len(part)
                    yield part
            finally:
                self.closed.set()
        return wrapped


async def _until(condition: Callable[[], bool], what: str) -> None:
    await wait_for(condition, timeout=30.0, message=what)


def _read_to_end(client: ssl.SSLSocket) -> bytes:
    """Everything the server still sends, until it closes the connection."""
    client.settimeout(30.0)
    data = bytearray()
    try:
        while chunk := client.recv(1 << 20):
            data += chunk
    except (ssl.SSLError, ConnectionResetError):
        pass  # an abort can reach the client as a reset
    finally:
        client.close()
    return bytes(data)


STALL_QUIET_S = 1.0
"""Long enough for a server that ignored back-pressure to encode and buffer the whole LIST
(it did so within the first tenth of a second), to show that it stopped."""


@RUNNERS
def test_a_list_the_client_does_not_read_stops_being_encoded_and_is_dropped(
        runner: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """20 MiB of ConfigMaps, chunked: while the client reads nothing, the server encodes no
    more than the socket's buffers hold, its memory stays far below the answer's size, and
    the connection is dropped at the request timeout (3 s here, 60 s by default)."""
    _run(runner, partial(_stalled_list, monkeypatch=monkeypatch))


async def _stalled_list(slow_cluster: RunningCluster, api: API, *,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    await _populate(api, "default", 600)
    produced = _Produced()
    monkeypatch.setattr(collection_reads, "json_parts", produced.wrap(listencoding.json_parts))
    size = len(orjson.dumps((await api.get("/api/v1/namespaces/default/configmaps"))[1]))
    assert size > 20 * MiB
    produced.parts = produced.bytes = 0
    produced.closed.clear()
    before = _rss()

    client = await asyncio.to_thread(_stalled_client, slow_cluster,
                                     "/api/v1/namespaces/default/configmaps")
    await _until(lambda: produced.parts > 0, "the LIST begun")
    await quiet_period(STALL_QUIET_S)
    grown = _rss() - before
    assert not produced.closed.is_set()
    # what the kernel's send buffer takes (it grows to tcp_wmem's maximum, 4 MiB by default)
    # and a chunk in flight, no more
    assert produced.bytes < _kernel_send_buffer() + 2 * LIST_CHUNK_BYTES < size, (
        produced.bytes, size)
    assert grown < 12 * MiB, f"RSS grew {grown / MiB:.1f} MiB for a {size / MiB:.1f} MiB LIST"

    await _until(produced.closed.is_set, "the answer dropped at the request timeout")
    received = await asyncio.to_thread(_read_to_end, client)
    assert received.startswith(b"HTTP/1.1 200 ")
    assert len(received) < size and not received.endswith(b"0\r\n\r\n")


@RUNNERS
def test_a_whole_answer_the_client_does_not_read_is_dropped_at_the_request_timeout(
        runner: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A LIST page of 400 ConfigMaps (14 MiB, answered whole with a Content-Length) is
    handed to the transport a piece at a time, and the connection is aborted when its
    client has not taken it by the request timeout."""
    _run(runner, partial(_stalled_page, monkeypatch=monkeypatch))


async def _stalled_page(slow_cluster: RunningCluster, api: API, *,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    await _populate(api, "default", 400)
    outcomes: list[bool] = []
    send_body = http_module._send_body

    async def recorded(*args: Any, **kwargs: Any) -> bool:
        outcomes.append(await send_body(*args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(http_module, "_send_body", recorded)
    client = await asyncio.to_thread(_stalled_client, slow_cluster,
                                     "/api/v1/namespaces/default/configmaps?limit=400")
    await _until(lambda: False in outcomes, "the answer dropped at the request timeout")
    received = await asyncio.to_thread(_read_to_end, client)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    assert length > 400 * len(VALUE)
    assert len(body) < length


@RUNNERS
def test_a_watch_the_client_does_not_read_is_terminated_when_its_backlog_fills(
        runner: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch has no request timeout; its events pile up in the watcher's backlog while
    the client does not read, and when the backlog is full the watcher is terminated and the
    connection dropped (cache_watcher.go: the watcher whose buffer stays full is stopped)."""
    _run(runner, partial(_stalled_watch, monkeypatch=monkeypatch))


async def _stalled_watch(slow_cluster: RunningCluster, api: API, *,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    # (50,000 events by default; bursts of 50 creates stay below 100)
    monkeypatch.setattr(store_module, "WATCHER_BACKLOG", 100)
    produced = _Produced()
    monkeypatch.setattr(collection_reads.CollectionReads, "_watch_events",
                        produced.wrap(collection_reads.CollectionReads._watch_events))
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "watched"}}))[0] == 201
    client = await asyncio.to_thread(_stalled_client, slow_cluster,
                                     "/api/v1/namespaces/watched/configmaps?watch=1")
    await _until(lambda: bool(store_watchers(slow_cluster)), "the watch begun")
    # events of 10 MiB more than the kernel's send buffer takes: more than the backlog
    count = (_kernel_send_buffer() + 10 * MiB) // len(VALUE)
    await _populate(api, "watched", count)
    await _until(produced.closed.is_set, "the watch terminated")
    # the events after the stall (a batch of up to 50 in flight) were never encoded
    assert produced.bytes < _kernel_send_buffer() + 4 * MiB, produced.bytes
    received = await asyncio.to_thread(_read_to_end, client)
    assert received.startswith(b"HTTP/1.1 200 ")
    assert not received.endswith(b"0\r\n\r\n")


WATCH_TIMEOUT_S = 8
"""The stalled watch's timeoutSeconds: long enough for the events that stall it to be
written first (the watch is meant to end stalled, not before), far below its backlog."""


def test_a_watch_the_client_does_not_read_ends_at_its_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """timeoutSeconds ends a watch whatever its client does: the handler's select leaves at
    ``timeoutCh`` (k8s.io/apiserver pkg/endpoints/handlers/watch.go ``HandleHTTP``); a
    client that stopped reading cannot take a clean end, so its connection is dropped, long
    before the watcher's backlog would fill."""
    _run(asyncio.run, partial(_watch_stalled_past_timeout, monkeypatch=monkeypatch))


async def _watch_stalled_past_timeout(slow_cluster: RunningCluster, api: API, *,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    produced = _Produced()
    monkeypatch.setattr(collection_reads.CollectionReads, "_watch_events",
                        produced.wrap(collection_reads.CollectionReads._watch_events))
    assert (await api.post("/api/v1/namespaces", {"metadata": {"name": "watched"}}))[0] == 201
    client = await asyncio.to_thread(
        _stalled_client, slow_cluster,
        f"/api/v1/namespaces/watched/configmaps?watch=1&timeoutSeconds={WATCH_TIMEOUT_S}")
    await _until(lambda: bool(store_watchers(slow_cluster)), "the watch begun")
    # events of 2 MiB more than the kernel's send buffer takes: the writer stalls, while
    # the backlog (50,000 events) stays far from full
    await _populate(api, "watched", (_kernel_send_buffer() + 2 * MiB) // len(VALUE))
    await _until(produced.closed.is_set, "the watch ended at its timeout")
    await _until(lambda: not store_watchers(slow_cluster), "the watcher gone")
    received = await asyncio.to_thread(_read_to_end, client)
    assert received.startswith(b"HTTP/1.1 200 ")


def store_watchers(cluster: RunningCluster) -> list[Any]:
    """The store's watchers of ConfigMaps in the namespace ``watched``."""
    return [w for w in cluster.api.store._watchers.get("/configmaps", ())
            if w.namespace == "watched"]

