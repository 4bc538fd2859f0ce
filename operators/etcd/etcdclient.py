"""An etcd v3 client over etcd's HTTP/JSON gateway (``/v3/...``), enough for an operator.

etcd serves its gRPC API as JSON on the client port (grpc-gateway): a POST with a JSON body
per RPC, byte strings in base64, 64-bit integers as decimal strings (etcd's
``Documentation/dev-guide/api_grpc_gateway.md``; the paths are those of
``api/etcdserverpb/rpc.proto``). That needs no etcd library and works the same for
etcd 3.4 and 3.5. Errors come back as ``{"error": ..., "code": <gRPC code>}``.

Only what the operator and its tests use: cluster membership (list, add as a learner,
promote, remove), a member's status, and a few KV calls and the snapshot stream.
"""

from __future__ import annotations

import base64
import json
import ssl
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import aiohttp

DEFAULT_TIMEOUT = 3.0
CLIENT_TLS: ContextVar[ssl.SSLContext | None] = ContextVar("etcd_client_tls", default=None)
"""The TLS context for ``https`` endpoints of the cluster being reconciled (its CA and the
operator's client certificate): set once per reconcile, so every client made in it, in
any module, dials that cluster's members with it."""


class EtcdError(Exception):
    """etcd answered with an error (``code`` is the gRPC status code, when given)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class Unreachable(EtcdError):
    """No answer at all: refused, timed out, or not HTTP."""


@dataclass(frozen=True)
class Member:
    """One member as ``MemberList`` reports it; ``name`` is empty until it first starts."""

    id: int
    name: str
    peer_urls: tuple[str, ...]
    client_urls: tuple[str, ...]
    is_learner: bool

    @property
    def started(self) -> bool:
        return bool(self.name)

    @property
    def hex_id(self) -> str:
        """The id as etcdctl prints it."""
        return f"{self.id:x}"


@dataclass(frozen=True)
class MemberStatus:
    """One member's own view (``Maintenance.Status``)."""

    id: int
    version: str
    leader: int
    revision: int
    raft_index: int
    is_learner: bool
    db_size: int


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def _member(raw: dict[str, Any]) -> Member:
    return Member(id=int(raw.get("ID") or 0), name=str(raw.get("name") or ""),
                  peer_urls=tuple(raw.get("peerURLs") or ()),
                  client_urls=tuple(raw.get("clientURLs") or ()),
                  is_learner=bool(raw.get("isLearner")))


class EtcdClient:
    """Calls one etcd endpoint (``http://host:2379``). One aiohttp session per client;
    ``async with EtcdClient(url) as etcd: await etcd.member_list()``."""

    def __init__(self, endpoint: str, timeout: float = DEFAULT_TIMEOUT,
                 tls: ssl.SSLContext | None = None, server_hostname: str | None = None
                 ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.server_hostname = server_hostname
        """The name the server's certificate must carry, when dialing it by address."""
        self.timeout = timeout
        self.tls = tls if tls is not None else CLIENT_TLS.get()
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"EtcdClient({self.endpoint})"

    async def __aenter__(self) -> EtcdClient:
        if self.endpoint.startswith("https://") and self.tls is None:
            raise Unreachable(f"{self.endpoint}: https without a client TLS context")
        connector = aiohttp.TCPConnector(ssl=self.tls) if self.tls is not None else None
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def call(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """POST ``body`` to ``/v3/<path>``; the decoded answer or :class:`EtcdError`."""
        assert self._session is not None, "use EtcdClient in `async with`"
        try:
            async with self._session.post(f"{self.endpoint}/v3/{path}", json=body or {},
                                          server_hostname=self.server_hostname
                                          ) as response:
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise Unreachable(f"{self.endpoint}: {exc or type(exc).__name__}") from exc
        try:
            answer = json.loads(text) if text else {}
        except ValueError as exc:
            raise Unreachable(f"{self.endpoint}: not JSON: {text[:200]!r}") from exc
        if response.status != 200 or "error" in answer:
            message = answer.get("message") or answer.get("error") or text[:200]
            raise EtcdError(f"{path}: {message}", answer.get("code"))
        return dict(answer)

    # cluster membership (rpc Cluster)
    async def member_list(self, *, linearizable: bool = True) -> list[Member]:
        """The membership, asked of the leader through this member (``linearizable``), or
        this member's own view of it, which it has even without a quorum."""
        answer = await self.call("cluster/member/list", {"linearizable": linearizable})
        return [_member(m) for m in answer.get("members") or ()]

    async def member_add_learner(self, peer_url: str) -> Member:
        answer = await self.call("cluster/member/add",
                                 {"peerURLs": [peer_url], "isLearner": True})
        return _member(answer["member"])

    async def member_promote(self, member_id: int) -> None:
        await self.call("cluster/member/promote", {"ID": str(member_id)})

    async def member_remove(self, member_id: int) -> None:
        await self.call("cluster/member/remove", {"ID": str(member_id)})

    # maintenance
    async def status(self) -> MemberStatus:
        answer = await self.call("maintenance/status")
        header = answer.get("header") or {}
        return MemberStatus(id=int(header.get("member_id") or 0),
                            version=str(answer.get("version") or ""),
                            leader=int(answer.get("leader") or 0),
                            revision=int(header.get("revision") or 0),
                            raft_index=int(answer.get("raftIndex") or 0),
                            is_learner=bool(answer.get("isLearner")),
                            db_size=int(answer.get("dbSize") or 0))

    async def move_leader(self, target_id: int) -> None:
        await self.call("maintenance/transfer-leadership", {"targetID": str(target_id)})

    async def snapshot_chunks(self) -> AsyncIterator[bytes]:
        """The backend database, streamed: grpc-gateway sends one JSON object per line,
        ``{"result": {"blob": <base64>, "remaining_bytes": n}}``, the last one with
        ``remaining_bytes`` 0 (etcd's ``v3rpc/maintenance.go`` ``Snapshot``). A stream
        cut or ended before that last chunk raises :class:`Unreachable` (whatever was
        yielded is not a snapshot); an error etcd sends in the stream, :class:`EtcdError`."""
        assert self._session is not None, "use EtcdClient in `async with`"
        remaining: int | None = None
        try:
            async with self._session.post(
                    f"{self.endpoint}/v3/maintenance/snapshot", json={},
                    server_hostname=self.server_hostname,
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=30)) as response:
                if response.status != 200:
                    text = await response.text()
                    raise EtcdError(f"snapshot: HTTP {response.status}: {text[:200]}")
                async for line in response.content:
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    if "error" in item:
                        error = item["error"]
                        message = error.get("message") if isinstance(error, dict) else error
                        raise EtcdError(f"snapshot: {message}")
                    result = item.get("result") or {}
                    remaining = int(result.get("remaining_bytes") or 0)
                    blob = result.get("blob")
                    if blob:
                        yield base64.b64decode(blob)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise Unreachable(f"{self.endpoint}: snapshot stream cut: "
                              f"{exc or type(exc).__name__}") from exc
        except ValueError as exc:  # a line that is not JSON, or a blob not base64
            raise Unreachable(f"{self.endpoint}: snapshot stream garbled: {exc}") from exc
        if remaining != 0:
            raise Unreachable(f"{self.endpoint}: snapshot stream ended with "
                              f"{remaining if remaining is not None else 'every'} byte(s) "
                              "still to come")

    # key-value (rpc KV)
    async def put(self, key: str, value: str) -> int:
        """Write ``key``; the revision of the write."""
        answer = await self.call("kv/put", {"key": _b64(key), "value": _b64(value)})
        return int((answer.get("header") or {}).get("revision") or 0)

    async def get(self, key: str) -> str | None:
        answer = await self.call("kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or ()
        return base64.b64decode(kvs[0]["value"]).decode() if kvs and "value" in kvs[0] \
            else ("" if kvs else None)

    async def get_prefix(self, prefix: str, *, serializable: bool = False) -> dict[str, str]:
        """Every key under ``prefix`` with its value; ``serializable`` reads this member's
        own copy instead of going through the leader."""
        raw = prefix.encode()
        end = raw[:-1] + bytes([raw[-1] + 1]) if raw else b"\0"
        answer = await self.call("kv/range", {"key": _b64(raw), "range_end": _b64(end),
                                              "serializable": serializable})
        return {base64.b64decode(kv["key"]).decode():
                base64.b64decode(kv.get("value", "")).decode()
                for kv in answer.get("kvs") or ()}

