"""HTTP to one API server: pooled connections, TLS, credentials, retries, metrics.

:class:`Transport` knows nothing of Kubernetes resources; it sends a method, a path and a
body, and either returns a 2xx :class:`Response` or raises the :mod:`setpoint.client.errors`
exception for the answer. Retries follow :class:`RetryPolicy`:

- 429 is retried for every verb (the server refused the request before doing anything),
  waiting at least the ``Retry-After`` the server asked for;
- other 5xx (not 501/505, which will not change) are retried for idempotent requests, and for
  non-idempotent ones only when the server sent ``Retry-After``;
- a connection that could not be opened is retried for every verb (nothing was sent),
  unless the policy says not to (the platform commands, as kubectl);
  a connection dropped or timed out mid-request only for idempotent requests;
- any other 4xx is the caller's mistake and is raised at once. A 401 is retried once after
  the authenticator forgot its cached credentials, which picks up rotated tokens.

With a client-side rate limiter (:mod:`setpoint.client.flowcontrol`), every attempt, the
first and each retry, and the opening of every watch first waits for its token, as
client-go's ``Request.tryThrottle`` does; the wait is not counted in the request's timeout.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import random
import re
import ssl
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from multidict import CIMultiDictProxy
from yarl import URL

from setpoint.client.auth import Credentials
from setpoint.client.config import ClusterConfig
from setpoint.client.errors import (
    ApiError,
    ConfigError,
    TransportError,
    api_error_from_response,
)
from setpoint.client.flowcontrol import RateLimiter
from setpoint.client.http1 import (
    Answer,
    ClientOSError,
    ConnectFailed,
    ConnectionPool,
    ServerDisconnectedError,
    StreamAnswer,
    failures,
)
from setpoint.machinery.frozen import quick_init

if TYPE_CHECKING:  # loaded on first use: most programs never need it (setpoint.client.http1)
    import aiohttp

log = logging.getLogger(__name__)

USER_AGENT = "setpoint/0.1.0 (python; asyncio)"
_NOT_RETRIED_5XX = frozenset({501, 505})
_DEFAULT_PORTS = {"http": 80, "https": 443}
IDLE_CONNS_PER_HOST = 25
"""client-go's kept-alive HTTP/1.1 connections per API server (k8s.io/client-go/transport
cache.go ``idleConnsPerHost``, its transport's ``MaxIdleConnsPerHost``). A client whose
requests come in bursts (a controller's pod creates) and that is given this as its
``max_connections`` keeps one set of connections: a burst waits for a kept-alive one
rather than opening, and paying a TLS handshake on both sides for, one per request in
flight, as client-go's HTTP/2 connection carries them all on one."""
_NO_CREDENTIALS = Credentials()

_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
# client-go's request.go: throttling waits worth a log line, and worth one at info level
_LONG_THROTTLE = 0.05
_EXTRA_LONG_THROTTLE = 1.0

_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._~/-]*")
"""A path that yarl sends as it is: unreserved characters and slashes (RFC 3986, 2.3)."""
_PLAIN_QUERY = re.compile(r"[A-Za-z0-9._~-]*")

Params = Mapping[str, str | int | bool | None] | None
_Response: TypeAlias = "aiohttp.ClientResponse | Answer | StreamAnswer"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently failed requests are retried.

    The n-th retry waits a random time up to ``min(backoff_max, backoff_initial *
    backoff_factor**n)`` ("full jitter", so many clients do not retry in step), but never
    less than a ``Retry-After`` the server asked for (capped at ``max_retry_after``).

    ``refused_connections`` False gives up at once on a connection the server refused, as
    kubectl does: client-go's ``Request.request`` (rest/request.go) retries a failed GET
    only on a reset connection, an unexpected EOF or a lost HTTP/2 connection, so a
    one-shot command pointed at the wrong host or port says so at once.
    """

    max_retries: int = 5
    backoff_initial: float = 0.1
    backoff_factor: float = 2.0
    backoff_max: float = 10.0
    max_retry_after: float = 60.0
    refused_connections: bool = True

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        ceiling = min(self.backoff_max, self.backoff_initial * self.backoff_factor ** retry)
        wait = random.uniform(0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(float(retry_after), self.max_retry_after))
        return wait


NO_RETRIES = RetryPolicy(max_retries=0)


@quick_init
@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One HTTP attempt, as handed to the ``on_request`` hook.

    ``template`` is the path with names replaced by placeholders
    (``/api/v1/namespaces/{namespace}/configmaps/{name}``) so metrics stay low-cardinality;
    ``code`` is None when no answer came (connection error, timeout); ``attempt`` counts
    from 0.
    """

    method: str
    host: str
    path: str
    template: str
    code: int | None
    duration: float
    attempt: int
    error: str | None = None


RequestHook = Callable[[RequestRecord], None]


class BodyReader(Protocol):
    """A streamed body, read as it arrives."""

    def iter_any(self) -> AsyncIterator[bytes]: ...
    def at_eof(self) -> bool: ...


class StreamResponse(Protocol):
    """A 2xx answer whose body is read as it arrives (a watch): a
    :class:`~setpoint.client.http1.StreamAnswer`, or aiohttp's response when aiohttp
    opened the connection."""

    @property
    def status(self) -> int: ...
    @property
    def headers(self) -> CIMultiDictProxy[str]: ...
    @property
    def content(self) -> BodyReader: ...
    def close(self) -> None: ...


@quick_init
@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds allowed: for the whole request (None: unbounded), to connect, and between
    two reads of a streamed answer (None: unbounded)."""

    total: float | None
    connect: float
    read: float | None = None

    def for_aiohttp(self) -> aiohttp.ClientTimeout:
        import aiohttp

        return aiohttp.ClientTimeout(total=self.total, sock_connect=self.connect,
                                     sock_read=self.read)


@quick_init
@dataclass(frozen=True, slots=True)
class Response:
    """A 2xx answer, read in full."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes

    def __repr__(self) -> str:
        return f"Response(status={self.status}, body=<{len(self.body)} bytes>)"


class Transport:
    """One connection pool to one API server, with its credentials and retry policy.

    Connections are opened on first use inside the running event loop; call :meth:`close`
    (or use the owning client as an async context manager) to release them.
    """

    def __init__(
        self, config: ClusterConfig, *, retry: RetryPolicy | None = None,
        on_request: RequestHook | None = None, timeout: float = 30.0,
        connect_timeout: float = 10.0, max_connections: int = 100,
        user_agent: str = USER_AGENT, rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.config = config
        self.rate_limiter = rate_limiter
        """Waited on before every attempt; None: no client-side limit."""
        self.retry = retry or RetryPolicy()
        self.on_request = on_request
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.user_agent = user_agent
        self._base = URL(config.server)
        self._base_path = self._base.path.rstrip("/")
        if self._base.scheme not in ("http", "https"):
            raise ConfigError(f"server {config.server!r}: only http and https are supported")
        if config.proxy_url and not config.proxy_url.startswith(("http://", "https://")):
            raise ConfigError(f"proxy-url {config.proxy_url!r}: only http(s) proxies are supported")
        self._session: aiohttp.ClientSession | None = None
        self._pool: tuple[asyncio.AbstractEventLoop, ConnectionPool] | None = None
        """The fast path's connections (``http1``), for the loop they were opened on."""
        host = self._base.raw_host or ""
        port = self._base.explicit_port
        self._host_header = (f"[{host}]" if ":" in host else host) + (
            f":{port}" if port is not None and port != _DEFAULT_PORTS[self._base.scheme]
            else "")
        # the request metrics' label of every request: made once, not per request
        self._host_label = f"{self._base.host}:{port}" if port else str(self._base.host)
        self._ssl_contexts: dict[tuple[bytes | None, bytes | None], ssl.SSLContext] = {}
        self._header_blocks: dict[tuple[str | None, str | None, str], str | None] = {}
        self._timeouts = Timeouts(timeout, connect_timeout)
        """The last request's timeouts (a frozen record; issue 12, sixteenth pass)."""
        self._plain_queries: dict[tuple[tuple[str, str], ...], str | None] = {}
        self._warned: set[str] = set()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        """How backoff waits are awaited (a test seam: replace it to observe the waits)."""

    def __repr__(self) -> str:
        return f"Transport(server={self.config.server!r}, retry={self.retry!r})"

    @property
    def host(self) -> str:
        """``host:port`` of the server, the ``host`` label of request metrics."""
        return self._host_label

    async def close(self) -> None:
        """Close the connection pool; the transport may be used again afterwards."""
        if self._pool is not None:
            self._pool[1].close()
            self._pool = None
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def request(
        self, method: str, path: str, *, params: Params = None, body: bytes | None = None,
        content_type: str = "application/json", idempotent: bool | None = None,
        template: str | None = None, timeout: float | None = None,
    ) -> Response:
        """Send one request, retrying as the policy allows, and return the 2xx answer.

        ``idempotent`` defaults to True for GET, HEAD, PUT and DELETE. Raises an
        :class:`ApiError` subclass for a non-2xx answer, :class:`TransportError` when the
        server could not be reached.
        """
        total = timeout or self.timeout
        timeouts = self._timeouts
        if timeouts.total != total or timeouts.connect != self.connect_timeout:
            # the same for nearly every request: made again only when one asks otherwise
            timeouts = self._timeouts = Timeouts(total, self.connect_timeout)
        resp = await self._attempts(
            method, path, params, body, content_type, idempotent, template, timeouts)
        if type(resp) is Answer:  # read whole already, nothing to release
            return Response(resp.status, resp.headers, resp.body)
        try:
            data = await resp.read()
        finally:
            resp.release()
        return Response(resp.status, resp.headers, data)

    @asynccontextmanager
    async def stream(
        self, method: str, path: str, *, params: Params = None, template: str | None = None,
        read_timeout: float | None = None,
    ) -> AsyncIterator[StreamResponse]:
        """Open a streaming request (a watch) and yield the 2xx response, unread.

        Opening the stream is retried like any idempotent GET; once it is open, reading it
        is the caller's business. ``read_timeout`` bounds the wait for the answer and the
        silence between two chunks.
        """
        resp = await self._attempts(
            method, path, params, None, "application/json", True, template,
            Timeouts(None, self.connect_timeout, read_timeout), stream=True,
        )
        try:
            assert not isinstance(resp, Answer)
            try:
                yield resp
            finally:
                # A stream left mid-way cannot go back to the pool: its connection is closed.
                if not resp.content.at_eof():
                    resp.close()
        finally:
            resp.release()

    # -------------------------------------------------------------------------------------

    async def _attempts(
        self, method: str, path: str, params: Params, body: bytes | None, content_type: str,
        idempotent: bool | None, template: str | None, timeout: Timeouts,
        stream: bool = False,
    ) -> _Response:
        """Send until a 2xx answer, which the caller reads and must release; raise the
        error of the last attempt otherwise. (A coroutine, not a context manager: a
        request's answer is read at once, and an operator sends thousands a second.)"""
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
        template = template or path
        attempt = 0
        reauthenticated = False
        while True:
            retry_after: float | None = None
            if self.rate_limiter is not None:
                await self._throttle(method, path)
            started = time.perf_counter()
            resp: _Response | None = None
            try:
                resp = await self._send(method, path, params, body, content_type, timeout,
                                        stream)
            except Exception as exc:
                if not isinstance(exc, failures()):
                    raise
                self._record(method, path, template, None, started, attempt, exc)
                aiohttp = sys.modules.get("aiohttp")  # its errors: only if it was used
                if aiohttp is not None and isinstance(exc, aiohttp.ClientSSLError):
                    raise TransportError(
                        f"TLS error talking to {self.host}: {_failure_text(exc)}") from exc
                # Only a refused connection guarantees the request never reached the server.
                sent = aiohttp is None or not isinstance(exc, aiohttp.ClientConnectorError)
                if (
                    (sent and not idempotent) or attempt >= self.retry.max_retries
                    or (not sent and not self.retry.refused_connections)
                ):
                    raise TransportError(
                        f"{method} {path} to {self.host} failed: {_failure_text(exc)}"
                    ) from exc
                failure: BaseException = exc
            else:
                self._record(method, path, template, resp.status, started, attempt, None)
                if "Warning" in resp.headers:  # asked inline: a call per request otherwise
                    self._log_warnings(resp)
                if 200 <= resp.status < 300:
                    return resp
                error = await self._error(method, resp)
                if (
                    resp.status == 401 and not reauthenticated
                    and self.config.auth is not None and self.config.auth.invalidate()
                ):
                    reauthenticated = True
                    continue
                if not self._retryable(resp, idempotent) or attempt >= self.retry.max_retries:
                    raise error
                retry_after = error.retry_after if "Retry-After" in resp.headers else None
                failure = error
            wait = self.retry.delay(attempt, retry_after)
            log.debug(
                "request_retry method=%s path=%s attempt=%d wait=%.3f error=%s",
                method, path, attempt, wait, failure,
            )
            await self.sleep(wait)
            attempt += 1

    async def _throttle(self, method: str, path: str) -> None:
        waited = await self.rate_limiter.wait() if self.rate_limiter is not None else 0.0
        if waited > _LONG_THROTTLE:
            # client-go's words, so that a slow operator is not blamed on the server
            log.log(logging.INFO if waited > _EXTRA_LONG_THROTTLE else logging.DEBUG,
                    "client_throttled waited=%.3fs method=%s path=%s "
                    "reason=\"client-side throttling, not priority and fairness\"",
                    waited, method, path)

    async def _send(
        self, method: str, path: str, params: Params, body: bytes | None, content_type: str,
        timeout: Timeouts, stream: bool = False,
    ) -> _Response:
        auth = self.config.auth
        creds = _NO_CREDENTIALS if auth is None else auth.known() or await auth.credentials()
        tls = self._ssl_context(creds) if self._base.scheme == "https" else None
        server_hostname = self.config.tls_server_name or None if tls is not None else None
        query = _encode_params(params)
        if not self.config.proxy_url and method != "HEAD":
            # setpoint.client.http1; a connection it cannot open is left to aiohttp below,
            # which reports the failure as it always has
            block = self._header_block(creds.authorization,
                                       content_type if body is not None else None)
            if block is not None:  # else a header holds a line break: aiohttp says so
                try:
                    return await self._send_fast(method, self.request_target(path, query),
                                                 block, body, timeout, tls, server_hostname,
                                                 stream)
                except ConnectFailed:
                    pass
        kwargs: dict[str, Any] = {}
        if tls is not None:
            kwargs["ssl"] = tls
            if server_hostname:
                kwargs["server_hostname"] = server_hostname
        headers = self._headers(creds.authorization, content_type if body is not None else None)
        if self.config.proxy_url:
            kwargs["proxy"] = self.config.proxy_url
        url = self._base.with_path(self._base_path + path, encoded=False)
        return await self._get_session().request(
            method, url, params=query, data=body, headers=headers,
            timeout=timeout.for_aiohttp(), allow_redirects=False, **kwargs,
        )

    def _headers(self, authorization: str | None, content_type: str | None,
                 ) -> dict[str, str]:
        # Go's http.Transport asks for gzip itself (client-go leaves its compression on);
        # both clients here decode it (http1.gzip_decoder, aiohttp's auto_decompress)
        headers = {"Accept": "application/json", "User-Agent": self.user_agent,
                   "Accept-Encoding": "gzip"}
        if authorization:
            headers["Authorization"] = authorization
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    def _header_block(self, authorization: str | None, content_type: str | None,
                      ) -> str | None:
        """The header lines of a request after its Host line, but its Content-Length:
        the same for every request with these credentials and body type, so made once
        (the few there are: a rotated token replaces the old; issue 12, fourteenth pass).
        None when a header holds a line break."""
        key = (authorization, content_type, self.user_agent)
        if key in self._header_blocks:
            return self._header_blocks[key]
        headers = self._headers(authorization, content_type)
        made = None if any("\r" in v or "\n" in v for v in headers.values()) else \
            "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        if len(self._header_blocks) >= 16:
            self._header_blocks.clear()
        self._header_blocks[key] = made
        return made

    def request_target(self, path: str, query: Mapping[str, str] | None = None) -> str:
        """The path and query of a request as they go on the wire, encoded as yarl
        encodes them for aiohttp. Built without yarl when nothing in them needs escaping
        or normalizing (every Kubernetes name and the usual parameters are such), which
        spares an operator a URL object per request."""
        full = self._base_path + path
        if _PLAIN_PATH.fullmatch(full) is not None and "/." not in full:
            if not query:
                return full
            plain = self._plain_query(query)
            if plain is not None:
                return f"{full}?{plain}"
        url = self._base.with_path(full, encoded=False)
        return (url.extend_query(query) if query else url).raw_path_qs

    def _plain_query(self, query: Mapping[str, str]) -> str | None:
        """The query as it goes on the wire when nothing in it needs escaping, else None;
        remembered, as a write's query is the same for every write (``fieldManager``)."""
        items = tuple(query.items())
        known = self._plain_queries
        if items in known:  # not get() and cast(): a Python call per request
            return known[items]
        plain = "&".join(f"{k}={v}" for k, v in items) if all(
            _PLAIN_QUERY.fullmatch(k) is not None and _PLAIN_QUERY.fullmatch(v) is not None
            for k, v in items) else None
        if len(self._plain_queries) >= 256:  # a watch's resume point makes each its own
            self._plain_queries.clear()
        self._plain_queries[items] = plain
        return plain

    async def _send_fast(
        self, method: str, target: str, header_block: str, body: bytes | None,
        timeout: Timeouts, tls: ssl.SSLContext | None, server_hostname: str | None,
        stream: bool = False,
    ) -> Answer | StreamAnswer:
        length = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        request = (f"{method} {target} HTTP/1.1\r\nHost: {self._host_header}\r\n"
                   f"{header_block}{length}\r\n").encode("latin-1")
        if body:
            request += body
        # as aiohttp does (RFC 9112, 9.3.1): an idempotent request whose connection drops
        # is sent once more on a new one before the drop counts as an attempt
        resend = method in _IDEMPOTENT_METHODS
        loop = asyncio.get_running_loop()  # once: 3.11 asks the process id each time
        pool = self._connection_pool(loop)
        if not stream:
            # the pool bounds the request by its deadline (a timer per connection)
            deadline = None if timeout.total is None else loop.time() + timeout.total
            while True:
                try:
                    return await pool.send(request, tls, server_hostname, deadline)
                except (ClientOSError, ServerDisconnectedError):
                    if not resend:
                        raise
                    resend = False
        async with asyncio.timeout(timeout.total):
            while True:
                try:
                    return await pool.open_stream(request, tls, server_hostname, timeout.read)
                except (ClientOSError, ServerDisconnectedError):
                    if not resend:
                        raise
                    resend = False

    def _connection_pool(self, loop: asyncio.AbstractEventLoop) -> ConnectionPool:
        if self._pool is None or self._pool[0] is not loop:
            self._pool = (loop, ConnectionPool(
                self._base.raw_host or "", self._base.port or _DEFAULT_PORTS[self._base.scheme],
                limit=self.max_connections, connect_timeout=self.connect_timeout))
        return self._pool[1]

    @staticmethod
    async def _error(method: str, resp: _Response) -> ApiError:
        try:
            body = await resp.read()
        except failures():
            body = b""
        finally:
            resp.release()
        return api_error_from_response(resp.status, body, resp.headers, method)

    @staticmethod
    def _retryable(resp: _Response, idempotent: bool) -> bool:
        if resp.status == 429:
            return True
        if resp.status >= 500 and resp.status not in _NOT_RETRIED_5XX:
            return idempotent or "Retry-After" in resp.headers
        return False

    def _get_session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, skip_auto_headers=())
        return self._session

    def _ssl_context(self, creds: Credentials) -> ssl.SSLContext:
        cert = creds.client_certificate_data or self.config.client_certificate_data
        key = creds.client_key_data or self.config.client_key_data
        ctx = self._ssl_contexts.get((cert, key))
        if ctx is None:
            if len(self._ssl_contexts) >= 4:  # exec plugins rotate certificates; keep few
                self._ssl_contexts.clear()
            ctx = build_ssl_context(
                self.config.certificate_authority_data, self.config.insecure_skip_tls_verify,
                cert, key,
            )
            self._ssl_contexts[(cert, key)] = ctx
        return ctx

    def _record(
        self, method: str, path: str, template: str, code: int | None, started: float,
        attempt: int, error: BaseException | None,
    ) -> None:
        if self.on_request is None:
            return
        # positional: a frozen dataclass's keywords cost twice as much, twice per event
        record = RequestRecord(
            method, self._host_label, path, template, code, time.perf_counter() - started,
            attempt, type(error).__name__ if error is not None else None)
        try:
            self.on_request(record)
        except Exception:  # a metrics bug must never fail the request it measures
            log.exception("on_request hook failed")

    def _log_warnings(self, resp: _Response) -> None:
        for value in resp.headers.getall("Warning", ()):
            if value not in self._warned and len(self._warned) < 1000:
                self._warned.add(value)
                log.warning("api_server_warning warning=%s", value)


def build_ssl_context(
    ca_data: bytes | None, insecure: bool = False, cert_data: bytes | None = None,
    key_data: bytes | None = None,
) -> ssl.SSLContext:
    """A client TLS context: trust ``ca_data`` only (or the system roots when None), and
    present the PEM client certificate and key when given."""
    try:
        if insecure:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_data:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca_data.decode())
        else:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if cert_data and key_data:
            # The ssl module loads certificates only from files; keep them in a private
            # directory just long enough to load. (tempfile, with shutil and its archive
            # modules, loads here: most clients present no certificate, and the workloads'
            # start is issue 12's critical path)
            import tempfile

            with tempfile.TemporaryDirectory(prefix="setpoint-tls-") as tmp:
                cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
                for p, data in ((cert_path, cert_data), (key_path, key_data)):
                    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                ctx.load_cert_chain(cert_path, key_path)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"invalid TLS material: {exc}") from exc
    return ctx


def _encode_params(params: Params) -> dict[str, str] | None:
    if not params:
        return None
    out: dict[str, str] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def _failure_text(exc: BaseException) -> str:
    """Why a request failed, for people: aiohttp's own text of a failed connection shows
    the SSLContext's repr (``ssl:<ssl.SSLContext object at 0x...>``)."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"certificate not accepted: {exc.certificate_error}"
    if aiohttp is not None and isinstance(exc, aiohttp.ClientConnectorError):
        # asyncio's text quotes the address as a Python tuple: the OS's words instead
        cause = exc.os_error
        if cause.errno == errno.ECONNREFUSED:
            # kubectl's words (k8s.io/kubectl/pkg/cmd/util/helpers.go standardErrorMessage)
            return (f"the connection to the server {exc.host}:{exc.port} was refused - "
                    "did you specify the right host or port?")
        reason = os.strerror(cause.errno) if cause.errno else (cause.strerror or str(cause))
        return f"cannot connect to {exc.host}:{exc.port}: {reason}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
