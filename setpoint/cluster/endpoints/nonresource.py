"""The HTTP rules of the apiserver's non-resource answers: discovery's negotiation and
caching headers, go-restful's GET-only routes, and the chain's ``WithCacheControl``."""

from __future__ import annotations

import orjson

from setpoint.cluster.endpoints.discovery_service import DiscoveryService
from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.negotiation import MediaType, negotiate_discovery
from setpoint.cluster.endpoints.responses import encode, json_response, text_response
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj


def discovery_root(disc: DiscoveryService, request: Request, *, legacy: bool) -> Response:
    """``/api`` or ``/apis``: the aggregated list when Accept asks for it, else the
    APIVersions or APIGroupList."""
    media = negotiate_discovery(request.headers.get("accept", ""), aggregated=True)
    if media.as_kind == "APIGroupDiscoveryList":
        # aggregated/etag.go ServeHTTPWithETag: ETag, Vary and a public Cache-Control on
        # the answer and on its 304 alike
        body, etag = disc.aggregated(legacy=legacy, version=media.version)
        headers = {"ETag": etag, "Vary": "Accept", "Cache-Control": "public"}
        if request.headers.get("if-none-match") == etag:
            return Response(status=304, headers=headers)
        if media.type != "application/json":  # (one ETag for every representation)
            body = encode(orjson.loads(body), media)
        return Response(body, 200, media.content_type, headers, serialized=True,
                        pretty=media.pretty)
    resp = json_response(_typed(disc.versions() if legacy else disc.groups(), media),
                         media=media)
    resp.add_header("Vary", "Accept")
    return resp


def _typed(document: Obj, media: MediaType) -> Obj:
    """A document without apiVersion (``/api``, ``/api/v1``: discovery/legacy.go's
    stripVersionNegotiatedSerializer) has an empty one in its protobuf envelope."""
    if media.is_protobuf and "apiVersion" not in document:
        return {"apiVersion": "", **document}
    return document


def discovery_document(request: Request, document: Obj | None) -> Response:
    """``/api/v1``, ``/apis/<group>``, ``/apis/<group>/<version>``: JSON or YAML as
    Accept asks (``DefaultEndpointRestrictions``)."""
    media = negotiate_discovery(request.headers.get("accept", ""), aggregated=False)
    return json_response(document if document is None else _typed(document, media),
                         media=media)


def restful_get(request: Request) -> None:
    """``/version``, ``/api``, ``/api/v1``, ``/apis/<group>/<version>`` and the issuer
    discovery documents are go-restful routes for GET alone (routes/version.go, discovery's
    ``GenerateWebService`` and ``APIResourceLister`` routes, routes/openidmetadata.go):
    another method, HEAD and OPTIONS included, is the router's 405. ``/apis`` and
    ``/apis/<group>`` are the aggregator's plain handlers and take any."""
    if request.method != "GET":
        raise errors.method_not_allowed()


def cache_control(response: Response) -> Response:
    """``WithCacheControl`` (k8s.io/apiserver pkg/endpoints/filters/cachecontrol.go), outside
    authentication in the handler chain: an answer that sets no ``Cache-Control`` of its own
    (the OpenAPI v3 documents asked for by hash do) is ``no-cache, private``."""
    for name, _ in response.headers:  # (a loop: this runs for every answer)
        if name.lower() == "cache-control":
            return response
    response.headers.append(("cache-control", "no-cache, private"))
    return response


def discovered(request: Request, document: Obj | None) -> Response:
    """A group's or version's discovery document; None where only CRDs not yet
    Established serve it: the CRD discovery handlers know nothing of them and hand the
    request to the delegate, whose end is ``http.NotFound`` (apiextensions-apiserver
    customresource_discovery.go versionDiscoveryHandler / groupDiscoveryHandler)."""
    if document is None:
        return text_response("404 page not found\n", 404)
    return discovery_document(request, document)
