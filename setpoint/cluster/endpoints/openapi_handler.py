"""The OpenAPI endpoints: ``/openapi/v2`` and ``/openapi/v3[/<path>]``.

kube-openapi's handlers (k8s.io/kube-openapi pkg/handler for v2, pkg/handler3 for v3) serve
the server's own documents; the aggregator's ``specProxier`` lists each remote APIService's
v3 paths beside them and proxies a request for one to its backend
(k8s.io/kube-aggregator pkg/controllers/openapiv3/aggregator). The documents are built on
first request: importing their builders costs start-up time.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import orjson

from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.responses import text_response
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.openapi.v2 import OpenAPIV2Service
    from setpoint.cluster.openapi.v3 import OpenAPIService


class OpenAPIHandler:
    """The answers under ``/openapi``, from the API server's registry and aggregator."""

    def __init__(self, api: APIServer) -> None:
        self.api = api

    @cached_property
    def v3(self) -> OpenAPIService:
        from setpoint.cluster.openapi.v3 import OpenAPIService

        return OpenAPIService(self.api.registry)

    @cached_property
    def v2(self) -> OpenAPIV2Service:
        from setpoint.cluster.openapi.v2 import OpenAPIV2Service

        return OpenAPIV2Service(self.api.registry, self.api.aggregator.openapi_v2)

    def remote_v3(self, segments: list[str]) -> Obj | None:
        """The remote APIService whose backend lists this /openapi/v3 path (and this server
        does not), or None."""
        if len(segments) < 3 or segments[1] != "v3":
            return None
        path = "/".join(segments[2:])
        found = self.api.aggregator.openapi_v3.paths().get(path)
        if found is None or self.v3.document(path) is not None:
            return None
        for apiservice in self.api.aggregator.remote_apiservices():
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
        if len(segments) == 2:
            index = service.index()
            remote = self.api.aggregator.openapi_v3.paths()
            if remote:  # specProxier: the backends' paths beside the server's own
                doc = orjson.loads(index)
                for path, (_, entry) in remote.items():
                    doc["paths"].setdefault(path, entry)
                index = orjson.dumps(doc)
            return Response(index, 200, "text/plain; charset=utf-8")
        path = "/".join(segments[2:])
        body = service.document(path)
        if body is None:
            return Response(status=404)
        etag = service.etag(path)
        if etag and request.headers.get("if-none-match") == etag:
            return Response(status=304, headers={"ETag": etag})
        resp = Response(body, 200, "application/json")
        if etag:
            resp.add_header("ETag", etag)
        resp.add_header("Cache-Control", "public, immutable" if request.query.get("hash")
                        else "no-cache, private")
        return resp

    def _v2(self, request: Request) -> Response:
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
