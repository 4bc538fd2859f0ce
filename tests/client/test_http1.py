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
import gzip
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import orjson
import pytest
import uvloop

from setpoint.client.config import ClusterConfig
from setpoint.client.errors import TransportError
from setpoint.client.http1 import StreamAnswer
from setpoint.client.transport import NO_RETRIES, StreamResponse, Transport
from setpoint.client.watch import Watch
from tests.client.stubserver import stub_server
from tests.waiting import quiet_period, wait_for

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


def watch_answer(*events: bytes, split: int = 7, end: bool = True) -> bytes:
    """A watch's answer as kube-apiserver frames it: chunked, one JSON event per line
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go flushes each event),
    here cut into chunks of ``split`` bytes that fall inside the events."""
    body = b"".join(e + b"\n" for e in events)
    chunks = [body[i:i + split] for i in range(0, len(body), split)]
    framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + framed + (b"0\r\n\r\n" if end else b""))


ADDED = b'{"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}}'
BOOKMARK = b'{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}'


def watch(transport: Transport) -> Watch[dict[str, Any]]:
    def opener() -> AbstractAsyncContextManager[StreamResponse]:
        return transport.stream("GET", "/api/v1/configmaps", params={"watch": True})

    return Watch(opener, lambda obj: obj)


@pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_a_watch_streams_over_the_same_kept_alive_connections(runner: Runner) -> None:
    """Events cut anywhere by the chunks arrive whole and in order; a stream the server
    ended (its terminal chunk) leaves its connection to the next request, as unary
    requests do: watches and requests share one HTTP/1.1 client."""
    async def exercise(transport: Transport) -> None:
        async with transport.stream("GET", "/api/v1/configmaps") as resp:
            assert isinstance(resp, StreamAnswer)  # not aiohttp's
        w = watch(transport)
        assert [(t, o["metadata"]) async for t, o in w] == [
            ("ADDED", {"name": "a", "resourceVersion": "5"}),
            ("BOOKMARK", {"resourceVersion": "9"})]
        assert w.resource_version == "9"
        assert (await transport.request("GET", "/version")).body == b"{}"

    raw = run(runner, [watch_answer(), watch_answer(ADDED, BOOKMARK),
                       b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"], exercise)
    assert raw.connections == 1
    assert raw.requests[1].startswith(b"GET /api/v1/configmaps?watch=true HTTP/1.1\r\n")


def test_a_watch_whose_connection_drops_ends_quietly_after_what_arrived() -> None:
    """As client-go's StreamWatcher: a stream that ends mid-way ends the watch (its
    caller watches again from the last resourceVersion), no error."""
    async def exercise(transport: Transport) -> None:
        w = watch(transport)
        assert [t async for t, _ in w] == ["ADDED"]
        assert w.resource_version == "5"

    # the server closes the connection in the middle of the second event
    run(asyncio.run, [watch_answer(ADDED, BOOKMARK, end=False)[:-20]], exercise)


def test_a_silent_watch_ends_after_its_read_timeout() -> None:
    async def exercise(transport: Transport) -> None:
        async with transport.stream("GET", "/api/v1/configmaps", read_timeout=0.2) as resp:
            with pytest.raises(TimeoutError):
                async for _ in resp.content.iter_any():
                    pass

    # an answer whose body never comes (RawServer waits for the next request)
    run(asyncio.run, [watch_answer(end=False), b""], exercise)


@pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_a_watch_bounds_the_silence_between_events_not_its_whole_length(
        runner: Runner) -> None:
    """``read_timeout`` bounds each wait for the next part of a watch (aiohttp's
    ``sock_read``; the connection keeps one timer for it, moved on as events come): a
    watch whose events come more often than that lives on past it, for as long as they
    come, and ends with ``TimeoutError`` once they stop."""
    # each silence a tenth of the read timeout (a stalled loop on a busy machine has room),
    # all of them together half as long again as it
    events, gap, read_timeout = 15, 0.1, 1.0

    async def main() -> int:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            for _ in range(events):
                line = ADDED + b"\n"
                writer.write(b"%x\r\n%s\r\n" % (len(line), line))
                await writer.drain()
                await quiet_period(gap)  # the server's silence between two events
            await reader.read()  # then silence, the connection open

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = Transport(ClusterConfig(server=f"http://127.0.0.1:{port}"))
        seen = 0
        try:
            async with transport.stream("GET", "/api/v1/configmaps",
                                        read_timeout=read_timeout) as resp:
                with pytest.raises(TimeoutError):
                    async for chunk in resp.content.iter_any():
                        seen += chunk.count(b"\n")
        finally:
            await transport.close()
            server.close()
        return seen

    seen: list[int] = []

    async def record() -> None:
        seen.append(await main())

    runner(record())
    assert seen == [events]


@pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_a_request_unanswered_by_its_deadline_fails_and_its_connection_is_dropped(
        runner: Runner) -> None:
    """A request is bounded by its timeout (one timer per connection, moved only when an
    exchange must end sooner than it fires): after a request given 30 s left it armed far
    ahead, the next one on the same connection, given 0.2 s, ends at its own deadline, as
    aiohttp's total timeout did; the connection it timed out on is not used again."""
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

    async def exercise(transport: Transport) -> None:
        transport.retry = NO_RETRIES
        assert (await transport.request("GET", "/version", timeout=30)).body == b"{}"
        async with asyncio.timeout(20):  # generous; the 30 s timer alone would take 30 s
            with pytest.raises(TransportError, match="timed out"):
                await transport.request("GET", "/version", timeout=0.2)
        assert (await transport.request("GET", "/version")).body == b"{}"

    # the second answer is nothing at all: the server reads on, the client gives up
    raw = run(runner, [ok, b"", ok], exercise)
    assert raw.connections == 2
    assert len(raw.requests) == 3


@pytest.mark.parametrize("server", ["https://127.0.0.1:6443", "https://127.0.0.1:6443/",
                                    "http://127.0.0.1:8001/k8s/clusters/c-1"])
@pytest.mark.parametrize(("path", "query"), [
    ("/api/v1/namespaces/default/configmaps/w00001-cfg", None),
    ("/apis/bench.setpoint.dev/v1/namespaces/ns-1/widgets/w.1/status",
     {"fieldManager": "widget-operator", "dryRun": "All"}),
    ("/api/v1/namespaces/default/configmaps", {"labelSelector": "app in (a,b),tier!=x"}),
    ("/api/v1/namespaces/default/configmaps/a b%2Fc", {"fieldSelector": "metadata.name=a"}),
    ("/api/v1/namespaces/default/../kube-system/secrets/./x", None),
    ("/api/v1/namespaces/ü/configmaps/~x_y", {"q": "ü", "e": ""}),
])
def test_request_target_is_what_aiohttp_sends(server: str, path: str,
                                              query: dict[str, str] | None) -> None:
    """The fast path writes the path and query itself, without a yarl URL when nothing in
    them needs escaping: what it writes must be what aiohttp wrote from yarl's URL (the
    answer of every request depends on it: kube-apiserver routes by the escaped path)."""
    from yarl import URL

    transport = Transport(ClusterConfig(server=server))
    base = URL(server)
    url = base.with_path(base.path.rstrip("/") + path, encoded=False)
    expected = (url.extend_query(query) if query else url).raw_path_qs
    assert transport.request_target(path, query) == expected


def test_requests_beyond_the_connection_bound_wait_for_a_kept_alive_connection() -> None:
    """A burst of requests larger than ``max_connections`` opens that many connections and
    no more; the requests beyond it, and every later one, go over the kept-alive ones (as
    client-go's transport keeps ``MaxIdleConnsPerHost`` 25 of them, transport/cache.go;
    each new connection is a TLS handshake on both sides)."""
    bound, burst = 3, 12
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

    async def main() -> tuple[int, int]:
        opened = 0
        in_flight = most = 0
        all_busy = asyncio.Event()  # the first answers wait until every connection is used

        def opening() -> None:
            nonlocal opened
            opened += 1

        async def respond(_: bytes) -> bytes:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            if in_flight >= bound:
                all_busy.set()
            await asyncio.wait_for(all_busy.wait(), 30)
            in_flight -= 1
            return answer

        async with stub_server(respond, opening) as url:
            transport = Transport(ClusterConfig(server=url), max_connections=bound)
            try:
                for _ in range(2):
                    answers = await asyncio.gather(*(
                        transport.request("GET", f"/api/v1/namespaces/default/pods/p{i}")
                        for i in range(burst)))
                    assert [a.body for a in answers] == [b"{}"] * burst
            finally:
                await transport.close()
        return opened, most

    opened, most = asyncio.run(main())
    assert opened == bound  # the second burst opened none
    assert most <= bound


def _gzipped_answer(body: bytes, *, chunked: bool, encoding: str = "gzip") -> bytes:
    data = gzip.compress(body)
    if chunked:  # cut in two chunks mid-stream, as Go's chunkWriter may
        half = len(data) // 2
        framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (data[:half], data[half:]))
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: "
                + encoding.encode() + b"\r\nVary: Accept-Encoding\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n")
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: "
            + encoding.encode() + b"\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))


@pytest.mark.parametrize("runner", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_requests_ask_for_gzip_and_a_gzipped_answer_is_decoded(runner: Runner) -> None:
    """client-go leaves Go's transport compression on (rest.Config ``DisableCompression``
    false): net/http transport.go adds ``Accept-Encoding: gzip`` to a request that set
    none, and a ``Content-Encoding: gzip`` answer (``EqualFold``) reaches the caller
    decoded, its Content-Encoding and Content-Length headers removed
    (``persistConn.readLoop``). Both framings, and a stream read as it arrives."""
    body = orjson.dumps({"kind": "ConfigMapList", "items": [{"n": i} for i in range(500)]})

    async def exercise(transport: Transport) -> None:
        by_length = await transport.request("GET", "/api/v1/configmaps")
        assert by_length.body == body
        assert "Content-Encoding" not in by_length.headers
        assert "Content-Length" not in by_length.headers
        chunked = await transport.request("GET", "/api/v1/configmaps")
        assert chunked.body == body
        assert chunked.headers.getall("Vary") == ["Accept-Encoding"]
        upper = await transport.request("GET", "/api/v1/configmaps")
        assert upper.body == body
        async with transport.stream("GET", "/api/v1/configmaps") as resp:
            parts = [part async for part in resp.content.iter_any()]
        assert b"".join(parts) == body
        plain = await transport.request("GET", "/version")
        assert plain.body == b"{}"

    raw = run(runner, [_gzipped_answer(body, chunked=False), _gzipped_answer(body, chunked=True),
                       _gzipped_answer(body, chunked=False, encoding="GZip"),
                       _gzipped_answer(body, chunked=True),
                       b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"], exercise)
    assert all(b"\r\nAccept-Encoding: gzip\r\n" in request for request in raw.requests)


def test_a_gzipped_answer_that_is_no_gzip_is_a_transport_error() -> None:
    """Go's gzip reader fails the body's read (``gzip: invalid header``); the transport
    reports a broken answer, never a traceback of zlib's."""
    bad = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\n"
           b"not gzip!")

    async def exercise(transport: Transport) -> None:
        transport.retry = NO_RETRIES
        with pytest.raises(TransportError, match="gzip"):
            await transport.request("GET", "/api/v1/configmaps")

    run(asyncio.run, [bad], exercise)


def test_a_request_that_gives_up_waiting_for_a_connection_leaves_the_bound_whole() -> None:
    """With every connection busy, a request whose deadline passes while it waits for one
    fails with a timeout and takes nothing with it: once the busy one is answered, later
    requests still have every connection of the bound (the pool's slots are handed from a
    finished request to the next waiter still waiting, never to one that gave up)."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

    async def main() -> int:
        release, arrived = asyncio.Event(), asyncio.Event()
        served = 0

        async def respond(_: bytes) -> bytes:
            nonlocal served
            arrived.set()
            await asyncio.wait_for(release.wait(), 30)
            served += 1
            return answer

        async with stub_server(respond) as url:
            transport = Transport(ClusterConfig(server=url), max_connections=1,
                                  retry=NO_RETRIES)
            try:
                busy = asyncio.create_task(transport.request("GET", "/api/v1/pods/a"))
                await asyncio.wait_for(arrived.wait(), 20)  # it holds the one connection
                with pytest.raises(TransportError, match="timed out"):
                    await transport.request("GET", "/api/v1/pods/b", timeout=0.2)
                release.set()
                assert (await busy).body == b"{}"
                async with asyncio.timeout(20):
                    answers = await asyncio.gather(*(
                        transport.request("GET", f"/api/v1/pods/c{i}") for i in range(3)))
                assert [a.body for a in answers] == [b"{}"] * 3
            finally:
                await transport.close()
        return served

    assert asyncio.run(main()) == 4


def test_a_waiter_with_an_earlier_deadline_behind_a_later_one_gives_up_on_its_own() -> None:
    """The waiters for a connection share one timer (issue 12, seventeenth pass): a
    request that waits behind one with a longer deadline still fails at its own, while
    the earlier waiter keeps waiting and is answered once a connection is free (client-go
    bounds each request by its own context, whatever waits beside it)."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

    async def main() -> None:
        release, arrived = asyncio.Event(), asyncio.Event()

        async def respond(_: bytes) -> bytes:
            arrived.set()
            await asyncio.wait_for(release.wait(), 60)
            return answer

        async with stub_server(respond) as url:
            transport = Transport(ClusterConfig(server=url), max_connections=1,
                                  retry=NO_RETRIES)
            try:
                busy = asyncio.create_task(transport.request("GET", "/api/v1/pods/a"))
                await asyncio.wait_for(arrived.wait(), 20)  # it holds the one connection
                patient = asyncio.create_task(
                    transport.request("GET", "/api/v1/pods/b", timeout=50))
                pool = transport._connection_pool(asyncio.get_running_loop())
                await wait_for(lambda: pool.waiting == 1)  # it waits for the connection first
                async with asyncio.timeout(20):  # far below the patient one's 50 s
                    with pytest.raises(TransportError, match="timed out"):
                        await transport.request("GET", "/api/v1/pods/c", timeout=0.2)
                assert not patient.done()
                release.set()
                async with asyncio.timeout(20):
                    assert (await busy).body == b"{}"
                    assert (await patient).body == b"{}"
            finally:
                await transport.close()

    asyncio.run(main())
