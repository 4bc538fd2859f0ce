"""The OpenAPI endpoints: ``/openapi/v2`` and ``/openapi/v3[/<path>]``.

kube-openapi's handlers (k8s.io/kube-openapi pkg/handler for v2, pkg/handler3 for v3) serve
the server's own documents; the aggregator's ``specProxier`` lists each remote APIService's
v3 paths beside them and proxies a request for one to its backend
(k8s.io/kube-aggregator pkg/controllers/openapiv3/aggregator). The documents are built on
first request: importing their builders costs start-up time.
"""

from __future__ import annotations

import datetime
import time
from email.utils import formatdate, parsedate_to_datetime
from functools import cached_property
from typing import TYPE_CHECKING

import orjson

from setpoint.cluster.endpoints import contentencoding
from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.responses import text_response
from setpoint.machinery import gojson
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.aggregator import Aggregator
    from setpoint.cluster.openapi.v2 import OpenAPIV2Service
    from setpoint.cluster.openapi.v3 import OpenAPIService
    from setpoint.cluster.registry import Registry


class OpenAPIHandler:
    """The answers under ``/openapi``, from the served types and the aggregator's remote
    APIServices."""

    def __init__(self, registry: Registry, aggregator: Aggregator) -> None:
        self.registry = registry
        self.aggregator = aggregator

    @cached_property
    def v3(self) -> OpenAPIService:
        from setpoint.cluster.openapi.v3 import OpenAPIService

        return OpenAPIService(self.registry)

    @cached_property
    def v2(self) -> OpenAPIV2Service:
        from setpoint.cluster.openapi.v2 import OpenAPIV2Service

        return OpenAPIV2Service(self.registry, self.aggregator.openapi_v2)

    def remote_v3(self, segments: list[str]) -> Obj | None:
        """The remote APIService whose backend lists this /openapi/v3 path (and this server
        does not), or None."""
        if len(segments) < 3 or segments[1] != "v3":
            return None
        path = "/".join(segments[2:])
        found = self.aggregator.openapi_v3.paths().get(path)
        if found is None or self.v3.document(path) is not None:
            return None
        for apiservice in self.aggregator.remote_apiservices():
            if apiservice["metadata"]["name"] == found[0]:
                return apiservice
        return None

    def serve(self, request: Request, segments: list[str]) -> Response:
        """The answer to a request under ``/openapi`` that this server serves itself."""
        if request.path == "/openapi/v2":
            return self._v2(request)
        if len(segments) < 2 or segments[1] != "v3":
            return text_response("404 page not found\n", 404)
        service = self.v3
        if request.path == "/openapi/v3":
            index = service.index()
            remote = self.aggregator.openapi_v3.paths()
            if remote:  # specProxier: the backends' paths beside the server's own
                doc = orjson.loads(index)
                for path, (_, entry) in remote.items():
                    doc["paths"].setdefault(path, entry)
                index = gojson.dumps(doc)
            # specProxier.handleDiscovery: http.ServeContent, modified now
            return serve_content(request, index, "text/plain; charset=utf-8", {},
                                 int(time.time()))
        # specProxier.handleGroupVersion: the path after "/openapi/v3/" as it is, so that
        # "/openapi/v3/" and a trailing slash name no document
        path = request.path.removeprefix("/openapi/v3/")
        body = service.document(path) if path and path.strip("/") == path else None
        if body is None:
            return Response(status=404)  # the aggregator's specProxier: no such path
        return _group_version(request, path, body, service.hash(path) or "",
                              service.last_modified(path) or 0)

    def _v2(self, request: Request) -> Response:
        return contentencoding.openapi_v2(self._v2_answer(request), request)

    def _v2_answer(self, request: Request) -> Response:
        # kube-openapi: Accept picks JSON or gnostic protobuf (else 406), one ETag for both
        from setpoint.cluster.openapi import v2 as openapi_v2

        service = self.v2
        content_type = openapi_v2.negotiate(request.headers.get("accept"))
        headers = {"Vary": "Accept"}
        if content_type is None:
            return Response(status=406, headers=headers)
        headers["ETag"] = service.etag
        if service.not_modified(request.headers.get("if-none-match"),
                                request.headers.get("if-modified-since")):
            return Response(status=304, headers=headers)
        body = service.json() if content_type == openapi_v2.JSON else service.protobuf()
        headers["Last-Modified"] = service.last_modified
        return Response(body, 200, content_type, headers)


def _group_version(request: Request, path: str, body: bytes, etag: str,
                   last_modified: int) -> Response:
    """kube-openapi handler3 ``HandleGroupVersion``: the JSON document for the first Accept
    clause it matches (else 406), under its quoted ETag; with ``?hash=``, the document's own
    hash is cached for good (``public, immutable``, a year's ``Expires``) and another is a
    301 to the URL of the current one.

    The gnostic protobuf form is not served here: a clause asking only for it is skipped.
    """
    from setpoint.cluster.openapi.v2 import accept_clauses

    headers = {"Vary": "Accept"}
    if not any(kind in ("application", "*") and subtype in ("json", "*")
               for kind, subtype in accept_clauses(request.headers.get("accept") or "*/*")):
        return Response(status=406, headers=headers)
    headers["ETag"] = f'"{etag}"'
    wanted = request.query.get("hash")
    if wanted:
        if wanted != etag:
            # http.Redirect after Content-Type was set: no HTML body
            headers["Location"] = f"/openapi/v3/{path}?hash={etag}"
            return Response(b"", 301, "application/json", headers)
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = _a_year_from_now()
    return serve_content(request, body, "application/json", headers, last_modified)


def serve_content(request: Request, body: bytes, content_type: str, headers: dict[str, str],
                  last_modified: int) -> Response:
    """Go's ``http.ServeContent`` for a GET: ``Last-Modified``, ``Accept-Ranges``, and a 304
    when ``If-None-Match`` names the ETag or, without it, ``If-Modified-Since`` is not
    before the modification (net/http fs.go ``checkPreconditions``)."""
    from setpoint.cluster.openapi.v2 import etag_matches

    headers = {**headers, "Last-Modified": formatdate(last_modified, usegmt=True)}
    etag = headers.get("ETag")
    if_none_match = request.headers.get("if-none-match")
    if if_none_match:
        not_modified = etag is not None and etag_matches(if_none_match, etag)
    else:
        not_modified = _not_modified_since(request.headers.get("if-modified-since"),
                                           last_modified)
    if not_modified and request.method in ("GET", "HEAD"):
        if etag is not None:  # writeNotModified
            del headers["Last-Modified"]
        return Response(status=304, headers=headers)
    headers["Accept-Ranges"] = "bytes"
    return Response(body, 200, content_type, headers)


def _not_modified_since(header: str | None, last_modified: int) -> bool:
    if not header:
        return False
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
    return last_modified <= since.timestamp()


def _a_year_from_now() -> str:
    """``time.Now().AddDate(1, 0, 0).Format(time.RFC1123)`` on a UTC host (Go normalizes
    29 February to 1 March)."""
    now = datetime.datetime.now(datetime.UTC)
    try:
        then = now.replace(year=now.year + 1)
    except ValueError:
        then = now.replace(year=now.year + 1, month=3, day=1)
    return then.strftime("%a, %d %b %Y %H:%M:%S UTC")
