"""A stand-in for mcrouter: the memcached ASCII protocol, routed as an mcrouter
configuration file says, for the ``*/mcrouter:*`` images of the process runtime.

mcrouter is not packaged for the machines this runs on, so the catalog entry runs this
program instead: ``python -m setpoint.workloads.kubelet.process.mcrouter --port=5000
--config-file=/etc/mcrouter/config.json --listen=<podIP>``. It implements the subset of
mcrouter's configuration that the memcached operator generates (operators/memcached/
mcrouter.py), matched to mcrouter's source (facebook/mcrouter, mcrouter/routes/):

- ``pools``: named lists of ``servers`` (``host:port``);
- ``PoolRoute`` (``{"type": "PoolRoute", "pool": ..., "hash": {"hash_func": "Ch3"}}``)
  and ``HashRoute`` (``children``, ``hash_func``): the child is ``furc_hash(key, n)``,
  mcrouter's ``Ch3HashFunc`` (mcrouter/lib/fbi/hash.c: MurmurHash64A with seed
  4193360111 and the bit-tree walk, ported exactly here), over the key's routing part
  (up to a ``|#|`` hash stop, as ``getRoutingKey`` cuts it);
- ``OperationSelectorRoute``: ``operation_policies`` by operation name, else
  ``default_policy``;
- ``AllSyncRoute|Pool|p``: the request to every server, the *worst* reply back
  (mcrouter's ``worseThan`` order: errors worse than misses worse than hits);
- ``LatestRoute|Pool|p``: a failover list (``failover_count`` 5) in an order chosen from
  the proxy's host id, moving to the next server on an error reply (a connection that
  fails or times out), not on a miss, as ``FailoverRoute`` does;
- ``ErrorRoute|message``: ``SERVER_ERROR message`` for everything;
- the configuration file is re-read when its content changes (mcrouter watches its
  ``--config-file``), checked every second; an unreadable new file keeps the old routes.

Commands: ``get``/``gets`` (several keys: each routed on its own), ``set``/``add``/
``replace``/``append``/``prepend``/``cas``, ``delete``, ``incr``/``decr``, ``touch``,
``version``, ``quit``. Not done: the binary and meta protocols, TKO tracking, stats, other
route handles. It stands in for development and tests; real clusters run mcrouter.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEED = 4193360111
MASK = (1 << 64) - 1
M = 0xC6A4A7935BD1E995
FURC_SHIFT = 23
MAX_TRIES = 32
HASH_STOP = b"|#|"
SERVER_TIMEOUT = 1.0  # mcrouter's --server-timeout default (ms 1000)
FAILOVER_COUNT = 5
STORAGE = {"set", "add", "replace", "append", "prepend", "cas"}


def murmur_hash_64a(key: bytes, seed: int) -> int:
    h = (seed ^ (len(key) * M)) & MASK
    whole = len(key) // 8 * 8
    for i in range(0, whole, 8):
        k = int.from_bytes(key[i:i + 8], "little")
        k = (k * M) & MASK
        k ^= k >> 47
        k = (k * M) & MASK
        h ^= k
        h = (h * M) & MASK
    tail = key[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * M) & MASK
    h ^= h >> 47
    h = (h * M) & MASK
    h ^= h >> 47
    return h


def _rehash(k: int) -> int:
    h = (SEED ^ (8 * M)) & MASK
    k = (k * M) & MASK
    k ^= k >> 47
    k = (k * M) & MASK
    h ^= k
    h = (h * M) & MASK
    h ^= h >> 47
    h = (h * M) & MASK
    h ^= h >> 47
    return h


def furc_hash(key: bytes, m: int) -> int:
    """mcrouter's consistent hash (``Ch3``): a value in ``[0, m)``; growing ``m`` moves a
    key only to a new value."""
    if m <= 1:
        return 0
    hashes: list[int] = []

    def bit(index: int) -> int:
        ordinal = index >> 6
        while len(hashes) <= ordinal:
            hashes.append(murmur_hash_64a(key, SEED) if not hashes else _rehash(hashes[-1]))
        return (hashes[ordinal] >> (index & 0x3F)) & 1

    d = 0
    while m > (1 << d):
        d += 1
    a = d
    for _ in range(MAX_TRIES):
        while not bit(a):
            d -= 1
            if d == 0:
                return 0
            a = d
        a += FURC_SHIFT
        num = 1
        for _ in range(d - 1):
            num = (num << 1) | bit(a)
            a += FURC_SHIFT
        if num < m:
            return num
    return 0


def routing_key(key: bytes) -> bytes:
    return key.split(HASH_STOP, 1)[0]


# -- replies ----------------------------------------------------------------------------

def severity(reply: bytes) -> int:
    """How bad a reply is (mcrouter's ``worseThan``): errors > misses > hits."""
    first = reply.split(b" ", 1)[0].strip()
    if first in (b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR"):
        return 2
    if first in (b"NOT_FOUND", b"NOT_STORED", b"EXISTS", b"END"):
        return 1
    return 0


def is_error(reply: bytes) -> bool:
    return severity(reply) == 2


@dataclass
class Request:
    op: str
    key: bytes
    raw: bytes
    """The whole request as the server is sent it (line and data block)."""
    reply_is_value: bool = False


class Destination:
    """One memcached server; a connection per client session, opened on first use."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self.host, self.port = host.strip("[]"), int(port)
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def send(self, request: Request) -> bytes:
        async with self._lock:
            try:
                async with asyncio.timeout(SERVER_TIMEOUT):
                    if self._conn is None:
                        self._conn = await asyncio.open_connection(self.host, self.port)
                    reader, writer = self._conn
                    writer.write(request.raw)
                    await writer.drain()
                    return await self._read_reply(reader, request)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                self.close()
                return f"SERVER_ERROR {self.address}: {exc or type(exc).__name__}\r\n".encode()

    async def _read_reply(self, reader: asyncio.StreamReader, request: Request) -> bytes:
        if not request.reply_is_value:
            return await reader.readuntil(b"\r\n")
        out = b""
        while True:
            line = await reader.readuntil(b"\r\n")
            if not line.startswith(b"VALUE "):
                return out + line  # END, or an error
            size = int(line.split()[3])
            out += line + await reader.readexactly(size + 2)

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None


# -- routes -----------------------------------------------------------------------------

class Route:
    async def route(self, request: Request, session: Session) -> bytes:
        raise NotImplementedError


@dataclass
class ErrorRoute(Route):
    message: str

    async def route(self, request: Request, session: Session) -> bytes:
        return f"SERVER_ERROR {self.message}\r\n".encode()


@dataclass
class HashRoute(Route):
    children: list[Route]

    async def route(self, request: Request, session: Session) -> bytes:
        child = self.children[furc_hash(routing_key(request.key), len(self.children))]
        return await child.route(request, session)


@dataclass
class ServerRoute(Route):
    address: str

    async def route(self, request: Request, session: Session) -> bytes:
        return await session.destination(self.address).send(request)


@dataclass
class AllSyncRoute(Route):
    children: list[Route]

    async def route(self, request: Request, session: Session) -> bytes:
        replies = await asyncio.gather(*(c.route(request, session) for c in self.children))
        return max(replies, key=severity) if replies else b"NOT_FOUND\r\n"


@dataclass
class FailoverRoute(Route):
    children: list[Route]

    async def route(self, request: Request, session: Session) -> bytes:
        reply = b"SERVER_ERROR no destination\r\n"
        for child in self.children:
            reply = await child.route(request, session)
            if not is_error(reply):
                return reply
        return reply


@dataclass
class OperationSelectorRoute(Route):
    policies: dict[str, Route]
    default: Route

    async def route(self, request: Request, session: Session) -> bytes:
        return await self.policies.get(request.op, self.default).route(request, session)


def host_id() -> int:
    """mcrouter's host id: a hash of this host's address, so that proxies spread their
    reads over the replicas (``globals::hostid``); here of the pod's name (``HOSTNAME``)."""
    return zlib.crc32(os.environ.get("HOSTNAME", socket.gethostname()).encode())


def build_route(spec: Any, pools: dict[str, list[str]]) -> Route:
    """A route tree from the configuration's ``route`` (a string or an object)."""
    if isinstance(spec, str):
        head, _, rest = spec.partition("|")
        if head == "ErrorRoute":
            return ErrorRoute(rest)
        if head in ("AllSyncRoute", "LatestRoute", "PoolRoute") and rest.startswith("Pool|"):
            servers = pools[rest.split("|", 1)[1]]
            children: list[Route] = [ServerRoute(s) for s in servers]
            if head == "AllSyncRoute":
                return AllSyncRoute(children)
            if head == "LatestRoute":
                start = host_id() % len(children) if children else 0
                ordered = children[start:] + children[:start]
                return FailoverRoute(ordered[:FAILOVER_COUNT])
            return HashRoute(children)
        raise ValueError(f"route {spec!r} is not supported by the stand-in")
    if not isinstance(spec, dict):
        raise ValueError(f"route {spec!r} is not a string or an object")
    kind = spec.get("type")
    if kind == "PoolRoute":
        _check_hash((spec.get("hash") or {}).get("hash_func", "Ch3"))
        return HashRoute([ServerRoute(s) for s in pools[spec["pool"]]])
    if kind == "HashRoute":
        _check_hash(spec.get("hash_func", "Ch3"))
        return HashRoute([build_route(c, pools) for c in spec.get("children") or ()])
    if kind == "OperationSelectorRoute":
        policies = {op: build_route(r, pools)
                    for op, r in (spec.get("operation_policies") or {}).items()}
        return OperationSelectorRoute(policies, build_route(spec["default_policy"], pools))
    if kind in ("AllSyncRoute", "FailoverRoute"):
        children = [build_route(c, pools) for c in spec.get("children") or ()]
        return AllSyncRoute(children) if kind == "AllSyncRoute" else FailoverRoute(children)
    raise ValueError(f"route type {kind!r} is not supported by the stand-in")


def _check_hash(name: str) -> None:
    if name != "Ch3":
        raise ValueError(f"hash_func {name!r} is not supported (only Ch3)")


def load_config(text: str) -> Route:
    config = json.loads(text)
    pools = {name: [str(s) for s in pool.get("servers") or ()]
             for name, pool in (config.get("pools") or {}).items()}
    return build_route(config["route"], pools)


# -- the server -------------------------------------------------------------------------

class Session:
    """A client connection's own connections to the servers."""

    def __init__(self) -> None:
        self.destinations: dict[str, Destination] = {}

    def destination(self, address: str) -> Destination:
        if address not in self.destinations:
            self.destinations[address] = Destination(address)
        return self.destinations[address]

    def close(self) -> None:
        for destination in self.destinations.values():
            destination.close()


CONFIG_WAIT = 30.0
"""Seconds the stand-in waits for a loadable configuration file before it gives up."""


class Proxy:
    def __init__(self, config_file: Path) -> None:
        self.config_file = config_file
        self.text = ""
        self.route: Route = ErrorRoute("no configuration loaded")

    def reload(self) -> bool:
        """Read the file again; True when the routes changed."""
        try:
            text = self.config_file.read_text()
            if text == self.text:
                return False
            route = load_config(text)
        except (OSError, ValueError, KeyError) as exc:
            print(f"mcrouter stand-in: configuration not loaded: {exc}", flush=True)
            return False
        self.text, self.route = text, route
        print(f"mcrouter stand-in: configuration {self.config_file} loaded", flush=True)
        return True

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.reload()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session()
        try:
            while line := await reader.readuntil(b"\r\n"):
                words = line.split()
                if not words:
                    writer.write(b"ERROR\r\n")
                    continue
                op = words[0].decode(errors="replace").lower()
                if op == "quit":
                    break
                writer.write(await self._one(op, words, line, reader, session))
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            session.close()
            writer.close()

    async def _one(self, op: str, words: Sequence[bytes], line: bytes,
                   reader: asyncio.StreamReader, session: Session) -> bytes:
        if op == "version":
            return b"VERSION mcrouter-standin 1.0\r\n"
        if op in ("get", "gets") and len(words) > 1:
            out = b""
            for key in words[1:]:
                request = Request(op, key, words[0] + b" " + key + b"\r\n", True)
                reply = await self.route.route(request, session)
                if is_error(reply):
                    return reply
                out += reply[:-len(b"END\r\n")] if reply.endswith(b"END\r\n") else reply
            return out + b"END\r\n"
        if op in STORAGE and len(words) >= 5:
            size = int(words[4])
            data = await reader.readexactly(size + 2)
            return await self.route.route(Request(op, words[1], line + data), session)
        if op in ("delete", "incr", "decr", "touch") and len(words) >= 2:
            return await self.route.route(Request(op, words[1], line), session)
        return b"ERROR\r\n"


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="mcrouter (stand-in)")
    parser.add_argument("-p", "--port", type=int, default=5000)
    parser.add_argument("-f", "--config-file", "--config", required=True)
    parser.add_argument("--listen", default="127.0.0.1")
    options, _ = parser.parse_known_args(argv)  # mcrouter's other flags are ignored
    path = options.config_file.removeprefix("file:")
    proxy = Proxy(Path(path))
    # mcrouter serves nothing before its configuration is loaded (it fails to start on one
    # it cannot load): listening earlier would let a readiness probe pass while every
    # request answers SERVER_ERROR. The file may lag the container's start for a moment.
    deadline = asyncio.get_running_loop().time() + CONFIG_WAIT
    while not proxy.reload():
        if asyncio.get_running_loop().time() > deadline:
            raise SystemExit(f"mcrouter stand-in: no configuration loaded from {path} in "
                             f"{CONFIG_WAIT:.0f}s")
        await asyncio.sleep(0.1)
    server = await asyncio.start_server(proxy.serve, options.listen, options.port,
                                        reuse_address=True)
    print(f"mcrouter stand-in listening on {options.listen}:{options.port}", flush=True)
    watcher = asyncio.get_running_loop().create_task(proxy.watch())
    try:
        await server.serve_forever()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
