"""A loopback HTTP proxy in front of an API server: where faults are injected and requests
counted, without touching the server or the operator under test.

The operator is given the proxy's kubeconfig (plain HTTP on 127.0.0.1, a bearer token of
the proxy's own); the proxy forwards every request to the real server with the real
credentials and TLS (a request bearing another token, such as an operator's service account
token, is forwarded with that token: the server decides what it may do), streaming
watches through chunk by chunk. This works the same for the embedded cluster and for any
real cluster, and for any client (Setpoint, kopf, kubectl).

    async with ApiProxy(load_kubeconfig(path)) as proxy:
        proxy.faults.fail(verb="create", resource="configmaps", status=500)
        config = proxy.client_config(namespace="default")
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import aiohttp
import orjson
import yaml
from aiohttp import web
from multidict import CIMultiDict

from setpoint.client import ClusterConfig, TokenAuth
from setpoint.client.auth import Credentials
from setpoint.client.transport import build_ssl_context
from setpoint.testing.faults import Faults
from setpoint.testing.requestinfo import RequestInfo, request_info

_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "host", "content-length", "authorization",
})

RequestObserver = Callable[[RequestInfo, int | None], None]


@dataclass
class RequestCounts:
    """Requests seen by a proxy, by Kubernetes verb and by ``verb resource``."""

    by_verb: Counter[str] = field(default_factory=Counter)
    by_resource: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)

    def __call__(self, info: RequestInfo, status: int | None) -> None:
        self.by_verb[info.verb] += 1
        self.by_resource[f"{info.verb} {info.full_resource or info.path}"] += 1
        if status is not None:
            self.by_status[status] += 1

    def total(self, *, watches: bool = True) -> int:
        return sum(n for verb, n in self.by_verb.items() if watches or verb != "watch")

    def reset(self) -> None:
        self.by_verb.clear()
        self.by_resource.clear()
        self.by_status.clear()

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {"by_verb": dict(self.by_verb), "by_resource": dict(self.by_resource),
                "by_status": {str(k): v for k, v in self.by_status.items()}}


@dataclass(eq=False)
class _OpenWatch:
    info: RequestInfo
    request: web.Request
    upstream: aiohttp.ClientResponse
    dropped: bool = False


class ApiProxy:
    """Forwards ``http://127.0.0.1:<port>`` to the server of ``upstream`` (see module doc).

    ``faults`` are consulted before each request is forwarded; every observer is called
    with each request and the status answered (None when the connection failed).
    """

    def __init__(self, upstream: ClusterConfig, *, faults: Faults | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.upstream = upstream
        self.faults = faults or Faults()
        self.faults.attach(self._drop_watches)
        self.counts = RequestCounts()
        self.observers: list[RequestObserver] = [self.counts]
        self.token = secrets.token_urlsafe(24)
        self._host, self._port = host, port
        self._watches: set[_OpenWatch] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._base = upstream.server.rstrip("/")
        self.url = ""

    def __repr__(self) -> str:
        return f"ApiProxy({self.url or 'not started'} -> {self._base})"

    async def __aenter__(self) -> ApiProxy:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    @property
    def open_watches(self) -> list[RequestInfo]:
        return [w.info for w in self._watches]

    async def start(self) -> None:
        """Listen on a loopback port (``url`` is set once this returns)."""
        ssl_context = None
        if self._base.startswith("https://"):
            ssl_context = build_ssl_context(
                self.upstream.certificate_authority_data, self.upstream.insecure_skip_tls_verify,
                self.upstream.client_certificate_data, self.upstream.client_key_data)
        connector = aiohttp.TCPConnector(limit=0, ssl=ssl_context if ssl_context else True)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                              timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, self._port))
        sock.listen(512)
        sock.setblocking(False)
        await web.SockSite(self._runner, sock).start()
        self.url = f"http://{self._host}:{sock.getsockname()[1]}"

    async def stop(self) -> None:
        """Cut open watches and stop listening."""
        self._drop_watches(lambda info: True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- what clients are given ------------------------------------------------------------

    def client_config(self, namespace: str | None = None) -> ClusterConfig:
        """A client configuration that reaches the server through this proxy."""
        return ClusterConfig(server=self.url, namespace=namespace or self.upstream.namespace,
                             auth=TokenAuth(self.token), context="setpoint-proxy")

    def write_kubeconfig(self, path: Path, namespace: str | None = None) -> Path:
        """A kubeconfig for any client (kopf, kubectl) that goes through this proxy."""
        name = "setpoint-proxy"
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {"token": self.token}}],
            "contexts": [{"name": name, "context": {
                "cluster": name, "user": name,
                "namespace": namespace or self.upstream.namespace}}],
        }
        # it carries the token: 0600 from the first byte, not written and tightened after
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(yaml.safe_dump(doc, sort_keys=False))
        return path

    # -- forwarding ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        info = request_info(request.method, request.path, request.query)
        authorization = request.headers.get("Authorization", "")
        if not authorization.startswith("Bearer "):
            self._observe(info, 401)
            return web.json_response({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}, status=401)
        body = await request.read() if request.body_exists else None
        if info.verb == "create" and body and self.faults.rules:
            info = dataclasses.replace(info, name=_name_in(body))  # for rules on names
        injected = await self.faults.intercept(info)
        if injected is not None:
            self._observe(info, injected.status)
            return injected
        assert self._session is not None
        headers = CIMultiDict((k, v) for k, v in request.headers.items()
                              if k.lower() not in _HOP_BY_HOP)
        if authorization == f"Bearer {self.token}":
            creds = await self.upstream.auth.credentials() if self.upstream.auth \
                else Credentials()
            if creds.authorization:
                headers["Authorization"] = creds.authorization
        else:
            # a client with a token of its own (an operator run as its service account):
            # forwarded as it came, for the server to judge, as it would be in a cluster
            headers["Authorization"] = authorization
        try:
            # a body sent without a Content-Type must reach the server without one (aiohttp
            # would add application/octet-stream, which the apiserver refuses)
            upstream = await self._session.request(
                request.method, self._base + request.rel_url.raw_path_qs, headers=headers,
                data=body, allow_redirects=False,
                skip_auto_headers=() if "Content-Type" in headers else ("Content-Type",))
        except (aiohttp.ClientError, OSError) as exc:
            self._observe(info, None)
            return web.Response(status=502, text=f"proxy: upstream unreachable: {exc}")
        self._observe(info, upstream.status)
        reply_headers = CIMultiDict((k, v) for k, v in upstream.headers.items()
                                    if k.lower() not in _HOP_BY_HOP)
        if not (info.is_watch and upstream.status == 200):
            async with upstream:
                data = await upstream.read()
            return web.Response(status=upstream.status, body=data, headers=reply_headers)
        return await self._stream(request, info, upstream, reply_headers)

    async def _stream(self, request: web.Request, info: RequestInfo,
                      upstream: aiohttp.ClientResponse,
                      headers: CIMultiDict[str]) -> web.StreamResponse:
        reply = web.StreamResponse(status=upstream.status, headers=headers)
        reply.enable_chunked_encoding()
        await reply.prepare(request)
        watch = _OpenWatch(info, request, upstream)
        self._watches.add(watch)
        try:
            async for chunk in upstream.content.iter_any():
                await reply.write(chunk)
        except (aiohttp.ClientError, ConnectionError):
            # the client went away, or the server (or a drop) cut the stream: either way
            # there is no one left to tell
            watch.dropped = True
        except asyncio.CancelledError:
            if not watch.dropped:
                raise
        finally:
            self._watches.discard(watch)
            upstream.close()
        if watch.dropped:
            # a cut connection, not a clean end of the stream: no final chunk
            if request.transport is not None:
                request.transport.abort()
            return reply
        with contextlib.suppress(ConnectionError):
            await reply.write_eof()
        return reply

    def _drop_watches(self, matches: Callable[[RequestInfo], bool]) -> int:
        cut = 0
        for watch in list(self._watches):
            if matches(watch.info):
                watch.dropped = True
                watch.upstream.close()
                if watch.request.transport is not None:
                    watch.request.transport.abort()
                cut += 1
        return cut

    def _observe(self, info: RequestInfo, status: int | None) -> None:
        for observer in self.observers:
            observer(info, status)


def _name_in(body: bytes) -> str:
    """``metadata.name`` of a JSON object being created ("" when there is none)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return ""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""
