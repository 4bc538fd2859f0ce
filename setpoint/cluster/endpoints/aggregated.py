"""The HTTP side of the aggregator: a request for a remote APIService, proxied and streamed.

kube-aggregator's ``proxyHandler.ServeHTTP`` (pkg/apiserver/handler_proxy.go, 1.32): an
APIService that is not ``Available``, or whose backend cannot be resolved, is answered
``503 service unavailable`` in plain text (``http.Error``); a transport failure is the 503
the upgrade-aware proxy's responder writes with Go's error text (a backend that does not
answer within the request timeout, 60 s, gets the timeout filter's 504 Status instead);
otherwise the backend's status, headers and body come back as they are, the body streamed
as it arrives (a watch stays open until either side ends it). A redirect from the backend
is refused, as ``--aggregator-reject-forwarding-redirect`` (on by default) does.

An upgrade request (``Connection: Upgrade``: exec, attach, port-forward over SPDY or
WebSocket) takes the upgrade-aware handler's other path (apimachinery
pkg/util/proxy/upgradeaware.go ``tryUpgrade``): a connection of its own to the backend with
the proxy's TLS configuration, the request written with its ``Connection``/``Upgrade``
headers, the caller's identity set as ``X-Remote-*`` beforehand (``SetAuthProxyHeaders``,
since the direct dial bypasses the round tripper) and the caller's address appended to
``X-Forwarded-For``. A ``101`` joins the two connections byte for byte; an error answer
(``>= 400``) is handed back as it is; any other status is the responder's 503
``invalid upgrade response: status code <n>``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING
from urllib.parse import quote

from setpoint.cluster.aggregator.apiservices import is_available
from setpoint.cluster.aggregator.proxy import (
    HOP_BY_HOP,
    PATH_SAFE,
    Target,
    forwarded_headers,
    go_error_text,
)
from setpoint.cluster.aggregator.resolver import ResolveError, service_ref
from setpoint.cluster.endpoints.http import BodyTooLarge, Request, Response, StreamResponse
from setpoint.cluster.endpoints.podstreams import (
    TunnelResponse,
    is_upgrade_request,
    parse_head,
)
from setpoint.cluster.registry.options import query_flag
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    import aiohttp

    from setpoint.cluster.aggregator import Aggregator

log = logging.getLogger("setpoint.cluster")

MAX_PROXIED_BODY = 3 * 1024 * 1024  # the server's own request body limit
_NOT_COPIED = HOP_BY_HOP | {"content-length", "date"}
MAX_UPGRADE_ERROR_BODY = 1024 * 1024  # an error answer to an upgrade, handed back whole
UPGRADE_ERROR_DEADLINE_S = 10.0  # tryUpgrade's read/write deadline for echoing it


def http_error(message: str, status: int) -> Response:
    """Go's ``http.Error``: plain text, the message and a newline."""
    return Response(f"{message}\n".encode(), status, "text/plain; charset=utf-8",
                    {"X-Content-Type-Options": "nosniff"})


def _long_running(request: Request) -> bool:
    # the apiserver's long-running check: watches (and the watch path prefix)
    watch = query_flag(request.query, "watch")
    return watch or "/watch/" in request.path


async def proxy(request: Request, aggregator: Aggregator, apiservice: Obj) -> Response:
    """Send ``request`` to ``apiservice``'s backend as ``request.user``."""
    ref = service_ref(apiservice)
    if ref is None or not is_available(apiservice):
        return http_error("service unavailable", 503)
    try:
        target = aggregator.transport.resolve(ref)
    except ResolveError as exc:
        log.info("error resolving %s/%s: %s", ref.namespace, ref.name, exc)
        return http_error("service unavailable", 503)
    if is_upgrade_request(request):
        return await _proxy_upgrade(request, aggregator, apiservice, target)
    try:
        body = await request.body(MAX_PROXIED_BODY)
    except BodyTooLarge:
        return http_error("request entity too large", 413)
    headers = _proxied_headers(request)
    try:
        resp = await aggregator.transport.send(
            apiservice, target, request.method, request.path,
            request.raw_query.decode("latin-1"), headers, body,
            long_running=_long_running(request))
    except Exception as exc:  # the responder answers every transport error
        import aiohttp

        if isinstance(exc, TimeoutError) and not isinstance(exc, aiohttp.ClientError):
            # no answer within the request's time: the apiserver's timeout filter
            # (filters/timeout.go) answers before the proxy does
            raise errors.timeout("request did not complete within the allotted timeout",
                                 0) from None
        log.info("proxying to %s failed: %r", target.address, exc)
        return http_error(go_error_text(exc, target.address), 503)
    if 300 <= resp.status < 400 and resp.headers.get("Location"):
        resp.release()
        return http_error("the backend attempted to redirect this request, which is not "
                          "permitted", 502)
    # a proxied answer that is not long-running is held to the request timeout as well
    answer = StreamResponse(_body(resp), resp.close, resp.status,
                            long_running=_long_running(request))
    answer.headers = [(name.lower(), value) for name, value in resp.headers.items()
                      if name.lower() not in _NOT_COPIED]
    return answer


async def _body(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.content.iter_any():
            yield chunk
    except Exception as exc:  # the backend went away mid-answer: end it
        log.info("proxied answer ended early: %r", exc)
    finally:
        resp.release()


def _proxied_headers(request: Request) -> list[tuple[str, str]]:
    """The caller's headers less its credentials and the hop-by-hop ones, X-Remote-*, the
    caller's address appended to X-Forwarded-For (httputil.ReverseProxy; the upgrade
    path's ``AppendForwardedForHeader``), and the request's Audit-ID set, so that the
    aggregated server's events carry it too (apiserver pkg/util/proxy/proxy.go
    ``NewRequestForProxy``)."""
    items = request.raw_header_items()
    headers = forwarded_headers([(n, v) for n, v in items
                                 if n.lower() not in ("x-forwarded-for", "audit-id")],
                                request.user or {})
    if request.audit_id:
        headers.append(("Audit-ID", request.audit_id))
    forwarded = request.header_values("x-forwarded-for")
    if request.remote_host:
        forwarded.append(request.remote_host)
    if forwarded:
        headers.append(("X-Forwarded-For", ", ".join(forwarded)))
    return headers


def _upgrade_head(request: Request, target: Target, body: bytes) -> bytes:
    """The request as ``DialForUpgrade`` writes it: the proxied headers with the
    hop-by-hop ones an upgrade needs kept."""
    upgrade = [(n, v) for n, v in request.raw_header_items()
               if n.lower() in ("connection", "upgrade")]
    # (a byte of the URL that is not UTF-8 is a surrogate in the path: sent on as it came)
    target_path = quote(request.path, safe=PATH_SAFE, errors="surrogateescape") + (
        f"?{request.raw_query.decode('latin-1')}" if request.raw_query else "")
    lines = [f"{request.method} {target_path} HTTP/1.1", f"Host: {target.address}"]
    lines += [f"{n}: {v}" for n, v in [*upgrade, *_proxied_headers(request)]]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _proxy_upgrade(request: Request, aggregator: Aggregator, apiservice: Obj,
                         target: Target) -> Response:
    body = b""
    if request.content_length:
        try:
            body = await request.body(MAX_PROXIED_BODY)
        except BodyTooLarge:
            return http_error("request entity too large", 413)
    try:
        reader, writer = await aggregator.transport.dial(apiservice, target)
    except (OSError, TimeoutError) as exc:
        log.info("upgrade to %s failed: %r", target.address, exc)
        return http_error(go_error_text(exc, target.address), 503)
    try:
        writer.write(_upgrade_head(request, target, body))
        head = await reader.readuntil(b"\r\n\r\n")
        status, headers, _ = parse_head(head)
    except (OSError, EOFError, ValueError, IndexError, asyncio.LimitOverrunError) as exc:
        writer.close()
        return http_error(go_error_text(exc, target.address) if isinstance(exc, OSError)
                          else "unexpected EOF", 503)
    if status == 101:
        return TunnelResponse(head, reader, writer)
    try:
        if status < 400:
            return http_error(f"invalid upgrade response: status code {status}", 503)
        # the backend's error answer, echoed (within tryUpgrade's deadline) and closed
        length = headers.get("content-length", "")
        async with asyncio.timeout(UPGRADE_ERROR_DEADLINE_S):
            if length.isdigit():
                answer = await reader.readexactly(min(int(length), MAX_UPGRADE_ERROR_BODY))
            else:
                answer = await reader.read(MAX_UPGRADE_ERROR_BODY)
    except (OSError, EOFError, TimeoutError):
        answer = b""
    finally:
        writer.close()
    return TunnelResponse.echoed(head, answer, status)
