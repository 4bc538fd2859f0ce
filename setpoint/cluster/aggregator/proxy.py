"""The aggregator's proxy transport: a request for an APIService sent to its backend.

As kube-aggregator's ``proxyHandler`` (pkg/apiserver/handler_proxy.go, 1.32): HTTPS to the
address the resolver finds, verifying the backend as ``<service>.<namespace>.svc`` against
``spec.caBundle`` (or not at all with ``insecureSkipTLSVerify``), presenting the front-proxy
client certificate, the caller's identity in ``X-Remote-*`` headers
(client-go transport ``SetAuthProxyHeaders``), never the caller's credentials. One pooled
aiohttp session serves every APIService; what a backend may cost is bounded by the
connect timeout, header size limits, and (for answers that are not watches) a total time.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from setpoint.cluster.aggregator.resolver import ServiceRef, host_port, resolve_endpoint
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    import aiohttp

    from setpoint.cluster.aggregator.frontproxy import FrontProxy
    from setpoint.cluster.storage import Reader

# Go's net/http: hop-by-hop headers are not forwarded (httputil.ReverseProxy)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                        "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"})
# what authenticated the caller stays here (filters/authentication.go deletes Authorization;
# impersonation.go the Impersonate-* headers); X-Remote-* are set afresh
_DROPPED_PREFIXES = ("impersonate-", "x-remote-")
_DROPPED = HOP_BY_HOP | {"authorization", "host", "content-length"}
CONNECT_TIMEOUT_S = 30.0  # Go's net.Dialer in the proxy transport
TLS_HANDSHAKE_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 60.0  # kube-apiserver's --request-timeout for what is not long-running
MAX_HEADER_BYTES = 8190
MAX_RESPONSE_HEAD = 64 * 1024  # an upgrade answer's status line and headers
PATH_SAFE = "/:@!$&()*+,;=-._~"  # Go's URL.EscapedPath leaves these as they are
MAX_CONTEXTS = 64  # TLS contexts kept, one per distinct caBundle
_HEADER_KEY_SAFE = set("!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def header_key_escape(key: str) -> str:
    """client-go's ``headerKeyEscape``: an extra's key percent-encoded where it is not a
    legal header token character."""
    return "".join(c if c in _HEADER_KEY_SAFE else "".join(f"%{b:02X}" for b in c.encode())
                   for c in key)


def auth_proxy_headers(user: Obj) -> list[tuple[str, str]]:
    """``SetAuthProxyHeaders``: the user, each group, each extra value, one header each."""
    headers = [("X-Remote-User", str(user.get("username", "")))]
    headers.extend(("X-Remote-Group", str(g)) for g in user.get("groups") or [])
    for key, values in (user.get("extra") or {}).items():
        headers.extend((f"X-Remote-Extra-{header_key_escape(key)}", str(v)) for v in values)
    return headers


def forwarded_headers(headers: Iterable[tuple[str, str]], user: Obj) -> list[tuple[str, str]]:
    """The caller's headers less its credentials and hop-by-hop ones, plus who it is."""
    kept = [(n, v) for n, v in headers
            if n.lower() not in _DROPPED and not n.lower().startswith(_DROPPED_PREFIXES)]
    return kept + auth_proxy_headers(user)


def go_error_text(exc: BaseException, target: str) -> str:
    """A transport failure worded as Go's, which the proxy answers as its 503's body."""
    import aiohttp

    if isinstance(exc, ssl.SSLCertVerificationError):  # the upgrade path's own dial
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if isinstance(exc, ssl.SSLError):
        return f"remote error: tls: {exc.reason or exc}"
    if isinstance(exc, ConnectionError | OSError) and not isinstance(
            exc, aiohttp.ClientError | TimeoutError):
        import os

        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        return f"dial tcp {target}: connect: {reason.lower()}"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"remote error: tls: {exc}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        import os

        errno = exc.os_error.errno
        reason = (os.strerror(errno) if errno else str(exc.os_error)).lower()
        return f"dial tcp {target}: connect: {reason}"
    if isinstance(exc, TimeoutError):
        return f"dial tcp {target}: i/o timeout"
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class Target:
    """Where one request goes: address and the name its certificate must carry."""

    address: str
    server_name: str


class ProxyTransport:
    """HTTPS to APIService backends over one pooled session (opened on first use)."""

    def __init__(self, store: Reader, front_proxy: FrontProxy | None) -> None:
        self._store = store  # Services and Endpoints, to find a backend
        self._front_proxy = front_proxy
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}

    def __repr__(self) -> str:
        return f"ProxyTransport(open={self._session is not None})"

    def resolve(self, ref: ServiceRef) -> Target:
        """The backend's address, or ResolveError."""
        address, port = resolve_endpoint(self._store, ref)
        return Target(host_port(address, port), ref.server_name)

    def _ssl_context(self, apiservice: Obj) -> ssl.SSLContext:
        spec = apiservice.get("spec") or {}
        bundle, insecure = str(spec.get("caBundle") or ""), bool(
            spec.get("insecureSkipTLSVerify"))
        ctx = self._contexts.get((bundle, insecure))
        if ctx is None:
            if insecure:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            elif bundle:
                ctx = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
            else:
                ctx = ssl.create_default_context()  # Go: the system roots
            if self._front_proxy is not None:
                self._front_proxy.client_context(ctx)
            if len(self._contexts) >= MAX_CONTEXTS:
                self._contexts.clear()  # rotated bundles must not pile up
            self._contexts[(bundle, insecure)] = ctx
        return ctx

    def _open_session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=256, limit_per_host=64),
                auto_decompress=False,  # bytes pass through with their Content-Encoding
                max_line_size=MAX_HEADER_BYTES, max_field_size=MAX_HEADER_BYTES,
                skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"))
        return self._session

    async def send(self, apiservice: Obj, target: Target, method: str, path: str,
                   raw_query: str, headers: list[tuple[str, str]], body: bytes, *,
                   long_running: bool) -> aiohttp.ClientResponse:
        """Send one request; the caller reads and releases the answer. Raises aiohttp's
        errors (see :func:`go_error_text`) or TimeoutError."""
        import aiohttp
        from multidict import CIMultiDict
        from yarl import URL

        timeout = aiohttp.ClientTimeout(
            total=None if long_running else REQUEST_TIMEOUT_S,
            connect=CONNECT_TIMEOUT_S + TLS_HANDSHAKE_TIMEOUT_S,
            sock_connect=CONNECT_TIMEOUT_S)
        url = URL(f"https://{target.address}{quote(path, safe=PATH_SAFE)}"
                  + (f"?{raw_query}" if raw_query else ""), encoded=True)
        kwargs: dict[str, Any] = {}
        if not (apiservice.get("spec") or {}).get("insecureSkipTLSVerify"):
            kwargs["server_hostname"] = target.server_name
        return await self._open_session().request(
            method, url, headers=CIMultiDict(headers), data=body or None, timeout=timeout,
            ssl=self._ssl_context(apiservice), allow_redirects=False, **kwargs)

    async def dial(self, apiservice: Obj, target: Target,
                   ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection of its own to the backend, for an upgrade request: the
        upgrade-aware proxy dials directly (``DialForUpgrade``) with the proxy transport's
        TLS configuration, bypassing the pooled round tripper. Raises OSError, ssl.SSLError
        or TimeoutError."""
        host, _, port = target.address.rpartition(":")
        server_hostname = None if (apiservice.get("spec") or {}).get(
            "insecureSkipTLSVerify") else target.server_name
        return await asyncio.wait_for(asyncio.open_connection(
            host.strip("[]"), int(port), ssl=self._ssl_context(apiservice),
            server_hostname=server_hostname, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S,
            limit=MAX_RESPONSE_HEAD), CONNECT_TIMEOUT_S + TLS_HANDSHAKE_TIMEOUT_S)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
