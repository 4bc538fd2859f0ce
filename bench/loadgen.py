"""A load generator cheap enough that the server, not the client, is what a benchmark measures.

aiohttp spends about as much CPU per request as the server's own HTTP floor, so a benchmark
driven by one aiohttp process measured its client. This one runs the requests from
``processes`` worker processes (each on uvloop), each holding ``connections`` keep-alive TLS
connections with ``depth`` requests pipelined on each (HTTP/1.1 pipelining: the server answers
in order). Requests are built as bytes up front and answers are parsed only as far as their
status and Content-Length; every answer's status is checked.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson


@dataclass(frozen=True)
class Target:
    url: str
    ca_pem: str
    token: str


@dataclass(frozen=True)
class Phase:
    """``count`` requests: POSTs of ``body(i)`` to ``path`` or GETs of ``path % i``."""

    method: str  # "POST" or "GET"
    path: str  # for GET a format string with one %s: the object's name
    names: list[str]
    expected_status: int
    bodies: list[bytes] | None = None


class _Connection(asyncio.Protocol):
    def __init__(self, requests: Iterator[bytes], expected: int, depth: int,
                 done: asyncio.Future[None]) -> None:
        self.requests = requests
        self.expected = expected
        self.depth = depth
        self.done = done
        self.buffer = bytearray()
        self.in_flight = 0
        self.answered = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def start(self) -> None:
        self._fill()

    def _fill(self) -> None:
        assert self.transport is not None
        batch = []
        while self.in_flight < self.depth:
            request = next(self.requests, None)
            if request is None:
                break
            batch.append(request)
            self.in_flight += 1
        if batch:
            self.transport.write(b"".join(batch))
        elif self.in_flight == 0 and not self.done.done():
            self.done.set_result(None)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = bytes(buffer[:end]).lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self._fail(f"an answer without Content-Length: {head[:200]!r}")
                return
            line_end = head.find(b"\r\n", at + 2)
            length = int(head[at + 17:line_end if line_end >= 0 else len(head)])
            if len(buffer) < end + 4 + length:
                break
            status = int(head[9:12])
            if status != self.expected:
                body = bytes(buffer[end + 4:end + 4 + length])
                self._fail(f"status {status}, wanted {self.expected}: {body[:300]!r}")
                return
            del buffer[:end + 4 + length]
            self.in_flight -= 1
            self.answered += 1
        self._fill()

    def _fail(self, message: str) -> None:
        if not self.done.done():
            self.done.set_exception(AssertionError(message))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.in_flight or not self.done.done():
            self._fail(f"connection lost with {self.in_flight} requests in flight: {exc}")


def _requests(target: Target, phase: Phase, share: range) -> Iterator[bytes]:
    split = urlsplit(target.url)
    host = f"{split.hostname}:{split.port}".encode()
    common = (b"Host: " + host + b"\r\nAuthorization: Bearer " + target.token.encode()
              + b"\r\nAccept: application/json\r\n")
    for i in share:
        if phase.method == "POST":
            assert phase.bodies is not None
            body = phase.bodies[i]
            yield (b"POST " + phase.path.encode() + b" HTTP/1.1\r\n" + common
                   + b"Content-Type: application/json\r\nContent-Length: "
                   + str(len(body)).encode() + b"\r\n\r\n" + body)
        else:
            yield (b"GET " + (phase.path % phase.names[i]).encode() + b" HTTP/1.1\r\n"
                   + common + b"\r\n")


def _returning(conn: _Connection) -> Callable[[], _Connection]:
    """The protocol factory of one connection made beforehand."""
    return lambda: conn


async def _run(target: Target, connections: int, depth: int, pipe: Any) -> None:
    split = urlsplit(target.url)
    host, port = split.hostname, split.port
    if host is None or port is None:
        raise ValueError(f"the target's URL names no host and port: {target.url}")
    ctx = ssl.create_default_context(cadata=target.ca_pem)
    loop = asyncio.get_running_loop()
    while True:
        message = pipe.recv()
        if message is None:
            return
        phase, share = message
        requests = iter(list(_requests(target, phase, share)))  # built before the clock
        conns: list[_Connection] = []
        for _ in range(connections):
            conn = _Connection(requests, phase.expected_status, depth, loop.create_future())
            await loop.create_connection(_returning(conn), host, port, ssl=ctx)
            conns.append(conn)
        pipe.send("ready")
        pipe.recv()  # go
        cpu = time.process_time()
        for conn in conns:
            conn.start()
        try:
            await asyncio.gather(*(c.done for c in conns))
            pipe.send(("ok", time.process_time() - cpu, sum(c.answered for c in conns)))
        except AssertionError as e:
            pipe.send(("error", str(e), 0))
        for conn in conns:
            assert conn.transport is not None
            conn.transport.close()


def _worker(target: Target, connections: int, depth: int, pipe: Any) -> None:
    import uvloop

    uvloop.run(_run(target, connections, depth, pipe))


class LoadGenerator:
    """``processes`` client processes; :meth:`run` sends one phase's requests from all."""

    def __init__(self, target: Target, processes: int = 2, connections: int = 8,
                 depth: int = 4) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.pipes = []
        self.procs = []
        for _ in range(processes):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(target, connections, depth, theirs),
                               daemon=True)
            proc.start()
            self.pipes.append(ours)
            self.procs.append(proc)

    def run(self, phase: Phase, meter: Callable[[], float] = lambda: 0.0,
            ) -> tuple[float, float, float]:
        """Send every request of ``phase`` on connections opened beforehand: the wall seconds
        from the first to the last, the CPU seconds the client processes spent meanwhile,
        and how much ``meter`` (the server's CPU seconds) grew meanwhile."""
        n = len(phase.names)
        for k, pipe in enumerate(self.pipes):
            pipe.send((phase, range(k, n, len(self.pipes))))
        for pipe in self.pipes:
            assert pipe.recv() == "ready"
        metered = meter()
        started = time.perf_counter()
        for pipe in self.pipes:
            pipe.send("go")
        answers = [pipe.recv() for pipe in self.pipes]
        elapsed = time.perf_counter() - started
        metered = meter() - metered
        for status, detail, _ in answers:
            if status != "ok":
                raise AssertionError(detail)
        assert sum(a[2] for a in answers) == n
        return elapsed, sum(a[1] for a in answers), metered

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(None)
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


def post_phase(path: str, objects: list[dict[str, Any]]) -> Phase:
    return Phase("POST", path, [o["metadata"]["name"] for o in objects], 201,
                 [orjson.dumps(o) for o in objects])


def get_phase(path_format: str, names: list[str]) -> Phase:
    return Phase("GET", path_format, names, 200)
