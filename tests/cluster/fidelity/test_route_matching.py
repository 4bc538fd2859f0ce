"""Which route a request reaches: go-restful's route detection for built-in resources, the
CRD handler's own dispatch on the RequestInfo for custom resources.

kube-apiserver 1.32:
- github.com/emicklei/go-restful/v3 v3.11.0 (k8s.io/apiserver's go.mod) jsr311.go
  detectRoute and route.go matchesContentType: a built-in PATCH route consumes the four patch
  types (k8s.io/apiserver pkg/endpoints/installer.go ``Consumes(supportedTypes...)``); a
  Content-Type none of them matches is a 415 only when the body has a known length above 0
  (``httpRequest.ContentLength > 0``); otherwise the Accept stage finds no route left and
  answers, for a PATCH without a Content-Length header, "415: Unsupported Media Type\\n\\n
  Available representations: ", for one with "Content-Length: 0" a 406. The apiserver's
  serviceErrorHandler (pkg/server/handler.go) writes them through NewGenericServerResponse:
  go-restful's message, empty details.
- pkg/endpoints/handlers/patch.go PatchResource: the Content-Type up to its first ";", as
  sent (case and spaces kept), must be one of the route's patch types, before the name and
  the Accept are looked at.
- pkg/endpoints/request/requestinfo.go NewRequestInfo: "resource/resourceName/subresource/
  other/stuff/we/don't/interpret": segments after the subresource are ignored, and
  apiextensions-apiserver pkg/apiserver/customresource_handler.go ServeHTTP dispatches on
  that RequestInfo alone (serveStatus, serveScale, or NotFound for another subresource); a
  built-in has no go-restful route for them (404, after authorization).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import GROUP, WIDGETS, create_widget_crd, failure, widget

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
BUILT_IN_TYPES = ("application/json-patch+json, application/merge-patch+json, "
                  "application/strategic-merge-patch+json, application/apply-patch+yaml")
CUSTOM_TYPES = ("application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml")


async def _send(api: API, method: str, path: str, content_type: str, body: bytes | None, *,
                chunked: bool = False, accept: str | None = None) -> tuple[int, Any]:
    """A request with exactly this Content-Type; ``chunked`` sends the body chunked, so with
    no Content-Length header."""
    headers = {"Content-Type": content_type}
    if accept is not None:
        headers["Accept"] = accept
    data: Any = body

    if chunked:
        async def chunks() -> AsyncIterator[bytes]:
            if body:
                yield body

        data = chunks()
    async with api.session.request(method, api.cluster.url + path, data=data, headers=headers,
                                   ssl=api.ssl) as resp:
        return resp.status, orjson.loads(await resp.read())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def objects(module_api: API) -> None:
    status, out = await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "routes"},
                                                             "data": {"a": "1"}})
    assert status == 201, out
    await create_widget_crd(module_api)
    status, out = await module_api.post(WIDGETS, widget("routes"))
    assert status == 201, out


async def test_an_unsupported_patch_type_with_an_empty_body(module_api: API,
                                                            objects: None) -> None:
    """go-restful refuses at the Content-Type stage only a body of known length above 0;
    an empty one reaches the Accept stage with no route left: "Content-Length: 0" is its
    406, no Content-Length (a chunked body) its 415, both naming no representation."""
    path = f"{NS}/configmaps/routes"
    assert await _send(module_api, "PATCH", path, "text/plain", b"") == (406, failure(
        406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: ", {}))
    for body in (b"", b'{"data": {"a": "2"}}'):
        assert await _send(module_api, "PATCH", path, "text/plain", body, chunked=True) == (
            415, failure(415, "UnsupportedMediaType",
                          "415: Unsupported Media Type\n\nAvailable representations: ", {}))
    assert await _send(module_api, "PATCH", path, "text/plain", b"{}") == (415, failure(
        415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))
    # the route is matched before the handler negotiates the Accept
    assert await _send(module_api, "PATCH", path, "text/plain", b"", accept="image/png") == (
        406, failure(406, "NotAcceptable",
                      "406: Not Acceptable\n\nAvailable representations: ", {}))
    status, cm = await module_api.get(path)
    assert (status, cm["data"]) == (200, {"a": "1"})


async def test_patch_types_are_matched_exactly(module_api: API, objects: None) -> None:
    """go-restful compares each comma-separated entry without parameters, case kept; the
    handler then takes the whole header up to ";" as the patch type: an upper-case type is
    go-restful's 415 on a built-in and the handler's on a custom resource, a list that
    names a patch type passes go-restful and is the handler's 415."""
    cm, cr = f"{NS}/configmaps/routes", f"{WIDGETS}/routes"
    upper = "Application/Merge-Patch+Json"
    listed = "text/plain, application/merge-patch+json"
    assert await _send(module_api, "PATCH", cm, upper, b"{}") == (415, failure(
        415, "UnsupportedMediaType", "415: Unsupported Media Type", {}))
    for path, types in ((cm, BUILT_IN_TYPES), (cr, CUSTOM_TYPES)):
        unknown = failure(415, "UnsupportedMediaType", "the body of the request was in an "
                           f"unknown format - accepted media types include: {types}")
        assert await _send(module_api, "PATCH", path, listed, b"{}") == (415, unknown), path
        assert await _send(module_api, "PATCH", path, "application/merge-patch+json ; x=y",
                           b"{}") == (415, unknown), path
    assert (await _send(module_api, "PATCH", cr, upper, b"{}"))[0] == 415
    # a custom resource's handler checks the Content-Type before the Accept
    assert (await _send(module_api, "PATCH", cr, "text/plain", b"{}", accept="image/png"))[0] \
        == 415
    status, _ = await _send(module_api, "PATCH", cm,
                            "application/merge-patch+json; charset=utf-8", b"{}")
    assert status == 200


async def test_segments_after_a_custom_resource_subresource_are_ignored(
        module_api: API, objects: None) -> None:
    """The RequestInfo stops at the subresource; the CRD handler serves it as if the path
    ended there: the status subresource for get/update/patch, NewMethodNotSupported for
    other verbs, NotFound (resource and name) for a subresource the version lacks."""
    status, got = await module_api.get(f"{WIDGETS}/routes/status/extra/more")
    assert status == 200
    assert (got["kind"], got["metadata"]["name"]) == ("Widget", "routes")
    status, patched = await module_api.patch(f"{WIDGETS}/routes/status/extra",
                                             {"status": {"ready": True}},
                                             "application/merge-patch+json")
    assert status == 200, patched
    assert patched["status"] == {"ready": True}
    status, out = await module_api.delete(f"{WIDGETS}/routes/status/extra")
    assert (status, out) == (405, failure(
        405, "MethodNotAllowed",
        f'delete is not supported on resources of kind "widgets.{GROUP}"',
        {"group": GROUP, "kind": "widgets"}))
    status, out = await module_api.get(f"{WIDGETS}/routes/bogus/extra")
    assert (status, out) == (404, failure(404, "NotFound",
                                           f'widgets.{GROUP} "routes" not found',
                                           {"name": "routes", "group": GROUP,
                                            "kind": "widgets"}))


async def test_segments_after_a_built_in_subresource_have_no_route(module_api: API,
                                                                   objects: None) -> None:
    """go-restful has no route for them: its 404, written by serviceErrorHandler."""
    status, out = await module_api.get(f"{NS}/configmaps/routes/status/extra")
    assert (status, out) == (404, failure(
        404, "NotFound", "the server could not find the requested resource", {}))


async def _get(api: API, path: str, accept: str) -> tuple[int, Any]:
    async with api.session.get(api.cluster.url + path, headers={"Accept": accept},
                               ssl=api.ssl) as resp:
        return resp.status, orjson.loads(await resp.read())


ROUTE_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


async def test_a_built_in_route_refuses_an_accept_it_cannot_produce(module_api: API,
                                                                   objects: None) -> None:
    """go-restful matches the Accept against each route's Produces before the handler
    negotiates: every entry cut at ";", compared exactly, "*/*" the only wildcard. A
    built-in's routes produce the legacy codecs' media types, a LIST route (also serving
    ?watch=true) the stream types after them; a refused Accept is go-restful's 406 naming
    them, written with empty details.
    Source: github.com/emicklei/go-restful/v3 v3.11.0 jsr311.go detectRoute and route.go
    matchesAccept; k8s.io/apiserver v0.32 pkg/endpoints/installer.go (Produces(append(
    storageMeta.ProducesMIMETypes(action.Verb), mediaTypes...)), allMediaTypes for LIST),
    handlers/negotiation/negotiate.go MediaTypesForSerializer."""
    one = failure(406, "NotAcceptable",
                  f"406: Not Acceptable\n\nAvailable representations: {ROUTE_TYPES}", {})
    listed = failure(406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: "
                     f"{ROUTE_TYPES}, application/json;stream=watch, "
                     "application/vnd.kubernetes.protobuf;stream=watch", {})
    for accept in ("text/html", "application/*", "Application/JSON"):
        assert await _get(module_api, f"{NS}/configmaps/routes", accept) == (406, one), accept
        assert await _get(module_api, f"{NS}/configmaps", accept) == (406, listed), accept
        assert await _get(module_api, f"{NS}/configmaps?watch=true", accept) == (
            406, listed), accept
    # a browser's Accept ends in */*: the route matches, the handler answers JSON
    status, cm = await _get(module_api, f"{NS}/configmaps/routes",
                            "text/html,application/xhtml+xml,*/*;q=0.8")
    assert (status, cm["data"]) == (200, {"a": "1"})
    # a write's refusal: with a body of known length the 406, chunked go-restful's 415
    assert await _send(module_api, "PUT", f"{NS}/configmaps/routes", "application/json",
                       b'{"metadata": {"name": "routes"}}', accept="text/html") == (406, one)
    assert await _send(module_api, "PUT", f"{NS}/configmaps/routes", "application/json",
                       b'{"metadata": {"name": "routes"}}', accept="text/html",
                       chunked=True) == (415, failure(
        415, "UnsupportedMediaType",
        f"415: Unsupported Media Type\n\nAvailable representations: {ROUTE_TYPES}", {}))
    status, cm = await module_api.get(f"{NS}/configmaps/routes")
    assert (status, cm["data"]) == (200, {"a": "1"})


async def test_a_custom_resource_negotiates_the_accept_in_its_handler(module_api: API,
                                                                      objects: None) -> None:
    """The CRD handler has no go-restful stage: the request's negotiation takes
    "application/*" as JSON and refuses what none of its serializers (JSON, YAML,
    protobuf; CBOR is off in 1.32) gives with NewNotAcceptableError, no details.
    Source: k8s.io/apiextensions-apiserver v0.32 pkg/apiserver/customresource_handler.go
    (supportedMediaTypes), k8s.io/apiserver handlers/negotiation/negotiate.go
    (NegotiateOutputMediaType) and errors.go (errNotAcceptable)."""
    assert await _get(module_api, f"{WIDGETS}/routes", "text/html") == (406, failure(
        406, "NotAcceptable", f"only the following media types are accepted: {ROUTE_TYPES}"))
    status, out = await _get(module_api, f"{WIDGETS}/routes", "application/*")
    assert (status, out["metadata"]["name"]) == (200, "routes")
