"""The HTTP side of the aggregator: a request for a remote APIService, proxied and streamed.

kube-aggregator's ``proxyHandler.ServeHTTP`` (pkg/apiserver/handler_proxy.go, 1.32): an
APIService that is not ``Available``, or whose backend cannot be resolved, is answered
``503 service unavailable`` in plain text (``http.Error``); a transport failure is the 503
the upgrade-aware proxy's responder writes with Go's error text (a backend that does not
answer within the request timeout, 60 s, gets the timeout filter's 504 Status instead);
otherwise the backend's status, headers and body come back as they are, the body streamed
as it arrives (a watch stays open until either side ends it). A redirect from the backend
is refused, as ``--aggregator-reject-forwarding-redirect`` (on by default) does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from setpoint.cluster.aggregator.apiservices import is_available
from setpoint.cluster.aggregator.proxy import HOP_BY_HOP, forwarded_headers, go_error_text
from setpoint.cluster.aggregator.resolver import ResolveError, service_ref
from setpoint.cluster.endpoints.http import BodyTooLarge, Request, Response, StreamResponse
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    import aiohttp

    from setpoint.cluster.aggregator import Aggregator

log = logging.getLogger("setpoint.cluster")

MAX_PROXIED_BODY = 3 * 1024 * 1024  # the server's own request body limit
_NOT_COPIED = HOP_BY_HOP | {"content-length", "date"}


def http_error(message: str, status: int) -> Response:
    """Go's ``http.Error``: plain text, the message and a newline."""
    return Response(f"{message}\n".encode(), status, "text/plain; charset=utf-8",
                    {"X-Content-Type-Options": "nosniff"})


def _long_running(request: Request) -> bool:
    # the apiserver's long-running check: watches (and the watch path prefix)
    watch = request.query.get("watch", "").lower() in ("true", "1")
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
    try:
        body = await request.body(MAX_PROXIED_BODY)
    except BodyTooLarge:
        return http_error("request entity too large", 413)
    headers = forwarded_headers(request.raw_header_items(), request.user or {})
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
    answer = StreamResponse(_body(resp), resp.close, resp.status)
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
