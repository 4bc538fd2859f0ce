"""Requests whose method, path or body does not fit the resource: routes that do not exist,
names and namespaces that disagree with the URL, kinds the scheme cannot make.

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import JSON_PATCH, MERGE, create_widget_crd, failure, widget

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
WIDGETS = "/apis/fidelity.example.com/v1/namespaces/default/widgets"


def _bad_request(message: str) -> dict[str, Any]:
    return failure(400, "BadRequest", message)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def widgets(module_api: API) -> API:
    """The module's server, serving the Widget custom resource."""
    await create_widget_crd(module_api)
    return module_api


NO_ROUTE = failure(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


@pytest.mark.parametrize(("method", "path"), [
    ("PUT", f"{NS}/configmaps"), ("PATCH", f"{NS}/configmaps"),
    ("POST", f"{NS}/configmaps/some-name"), ("PUT", "/api/v1/configmaps"),
    ("POST", "/api/v1/watch/namespaces/default/configmaps"),
])
async def test_a_method_without_a_route_is_go_restfuls_405(module_api: API, method: str,
                                                           path: str) -> None:
    """Rule: a built-in resource's path has a route per verb its storage offers (a collection:
    GET, POST, DELETE; an object: GET, PUT, PATCH, DELETE); go-restful answers any other method
    405 and the apiserver's serviceErrorHandler writes NewGenericServerResponse's Status:
    the generic message, empty details.
    Source: k8s.io/apiserver pkg/endpoints/installer.go (registerResourceHandlers),
    github.com/emicklei/go-restful/v3 jsr311.go (detectRoute: "405: Method Not Allowed"),
    pkg/server/handler.go (serviceErrorHandler), k8s.io/apimachinery pkg/api/errors/errors.go
    (NewGenericServerResponse)."""
    status, out = await module_api.request(method, path, {"metadata": {"name": "some-name"}},
                                           content_type=MERGE if method == "PATCH"
                                           else "application/json")
    assert (status, out) == (405, NO_ROUTE)


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_put_or_patch_on_a_custom_resource_collection_needs_a_name(
        widgets: API, method: str) -> None:
    """Rule: the CRD handler takes every verb itself: PUT or PATCH on a collection is an update
    or patch whose namer finds no name in the URL.
    Source: k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go
    (serveResource), k8s.io/apiserver pkg/endpoints/handlers/namer.go (ContextBasedNaming.Name,
    errEmptyName = NewBadRequest("name must be provided"))."""
    status, out = await widgets.request(method, WIDGETS, widget("w"),
                                           content_type=MERGE if method == "PATCH"
                                           else "application/json")
    assert (status, out) == (400, _bad_request("name must be provided"))


async def test_post_to_a_custom_resource_path_with_a_name_creates_the_bodys_object(
        widgets: API) -> None:
    """Rule: the CRD handler's create reads the name from the URL only for admission; the
    store creates the object the body names.
    Source: k8s.io/apiserver pkg/endpoints/handlers/create.go (createHandler with
    includeName=false), pkg/registry/generic/registry/store.go (Create: ObjectNameFunc)."""
    status, out = await widgets.post(f"{WIDGETS}/url-name", widget("body-name"))
    assert (status, out["metadata"]["name"]) == (201, "body-name")


async def test_the_namespace_of_a_patched_object_must_match_the_url(module_api: API) -> None:
    """Rule: the patched object's namespace is checked as an update body's is: a different one
    is a 400, before its name is checked.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (applyPatch:
    EnsureObjectNamespaceMatchesRequestNamespace, then checkName), pkg/registry/rest/meta.go."""
    await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "ns-moved"}})
    expected = _bad_request("the namespace of the provided object does not match the "
                            "namespace sent on the request")
    assert await module_api.patch(f"{NS}/configmaps/ns-moved",
                                  {"metadata": {"namespace": "kube-system", "name": "x"}},
                                  MERGE) == (400, expected)
    assert await module_api.patch(
        f"{NS}/configmaps/ns-moved",
        [{"op": "replace", "path": "/metadata/namespace", "value": "kube-public"}],
        JSON_PATCH) == (400, expected)


async def test_an_object_without_a_name_cannot_be_matched_with_the_url(module_api: API) -> None:
    """Rule: checkName asks the namer for the object's name, and an empty one is errEmptyName:
    the message names the URL's name "based on URL" (an update body, a patch removing the
    metadata alike).
    Source: k8s.io/apiserver pkg/endpoints/handlers/rest.go (checkName: "the name of the object
    (%s based on URL) was undeterminable: %v"), handlers/namer.go (ContextBasedNaming.
    ObjectName)."""
    await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "nameless"}})
    expected = _bad_request("the name of the object (nameless based on URL) was "
                            "undeterminable: name must be provided")
    assert await module_api.put(f"{NS}/configmaps/nameless", {"metadata": {}}) == (
        400, expected)
    assert await module_api.patch(f"{NS}/configmaps/nameless", {"metadata": None},
                                  MERGE) == (400, expected)


async def test_an_update_checks_the_namespace_before_the_name(module_api: API) -> None:
    """Rule: the update handler compares the namespace first, then the name.
    Source: k8s.io/apiserver pkg/endpoints/handlers/update.go (UpdateResource:
    EnsureObjectNamespaceMatchesRequestNamespace before checkName)."""
    status, out = await module_api.put(f"{NS}/configmaps/both-wrong", {
        "metadata": {"name": "other", "namespace": "kube-system"}})
    assert (status, out) == (400, _bad_request(
        "the namespace of the provided object does not match the namespace sent on the "
        "request"))


@pytest.mark.parametrize(("body", "message"), [
    ({"apiVersion": "apps/v1", "kind": "ConfigMap"},
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
     'registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'),
    ({"apiVersion": "v2"},
     'ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
     'registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30"'),
    ({"apiVersion": "v1", "kind": "Secret"},
     'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to '
     "(core.ConfigMap): unknown conversion"),
])
async def test_a_body_of_another_kind_is_refused_by_the_decoder(
        module_api: API, body: dict[str, Any], message: str) -> None:
    """Rule: the body's apiVersion and kind pick the type the serializer makes: a pair the
    scheme does not know cannot be made (a kind the body leaves out defaults to the expected
    one), a known one cannot be converted to the resource's type; either is wrapped by
    transformDecodeError.
    Source: k8s.io/apimachinery pkg/runtime/serializer/json/json.go (Decode,
    runtime.UseOrCreateObject), pkg/runtime/scheme.go (NewNotRegisteredErrForKind),
    k8s.io/apiserver pkg/endpoints/handlers/create.go (transformDecodeError)."""
    status, out = await module_api.post(f"{NS}/configmaps",
                                        {**body, "metadata": {"name": "other-kind"}})
    assert (status, out) == (400, _bad_request(message))


async def test_a_null_member_of_a_string_map_is_stored_empty(module_api: API) -> None:
    """Rule: encoding/json decodes a null map member as the element type's zero value, so a
    ConfigMap's data (map[string]string) keeps the key with "" (never a stored null); a JSON
    patch "add" without a value adds such a null.
    Source: encoding/json decode.go (literalStore: null into a string is ignored, the map
    element stays ""), gopkg.in/evanphx/json-patch.v4 patch.go (Operation.value: nil)."""
    status, out = await module_api.post(f"{NS}/configmaps", {
        "metadata": {"name": "null-member", "labels": {"a": None}},
        "data": {"x": None, "y": "1"}})
    assert (status, out["data"], out["metadata"]["labels"]) == (
        201, {"x": "", "y": "1"}, {"a": ""})
    status, out = await module_api.patch(f"{NS}/configmaps/null-member",
                                         [{"op": "add", "path": "/data/z"}], JSON_PATCH)
    assert (status, out["data"]) == (200, {"x": "", "y": "1", "z": ""})


@pytest.mark.parametrize(("raw", "problem"), [
    (b'{"metadata": {"name": "x"} x}', "invalid character 'x' after object key:value pair"),
    (b'{"metadata": NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{"data": {"a": tru}}', "invalid character '}' in literal true (expecting 'e')"),
])
async def test_a_body_that_is_not_json_names_the_scanners_error(
        module_api: API, raw: bytes, problem: str) -> None:
    """Rule: the serializer's first look at the body (the apiVersion and kind) runs Go's JSON
    scanner, whose syntax error the create handler wraps with the expected kind and the
    start of the body.
    Source: k8s.io/apimachinery pkg/runtime/serializer/json/meta.go (SimpleMetaFactory.
    Interpret: "couldn't get version/kind; json parse error: %v"), encoding/json scanner.go,
    k8s.io/apiserver pkg/endpoints/handlers/create.go (transformDecodeError)."""
    status, out = await module_api.post(f"{NS}/configmaps", None, raw=raw)
    assert (status, out) == (400, _bad_request(
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        f"version/kind; json parse error: {problem} ({raw.decode()})"))


@pytest.mark.parametrize(("raw", "summary"), [
    (b'{"metadata": {"name": "a-rather-long-name"}, "data": {',
     '{"metadata": {"name": "a-rathe ...'),
    (b"[1, 2", "5b312c2032"),
])
async def test_the_refused_body_is_summarized_in_thirty_bytes(module_api: API, raw: bytes,
                                                              summary: str) -> None:
    """Rule: the refused body is quoted by summarizeData(body, 30): an object's first 30 bytes
    (" ..." when cut), anything else in hex.
    Source: k8s.io/apiserver pkg/endpoints/handlers/rest.go (transformDecodeError,
    summarizeData)."""
    status, out = await module_api.post(f"{NS}/configmaps", None, raw=raw)
    assert (status, out) == (400, _bad_request(
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        f"version/kind; json parse error: unexpected end of JSON input ({summary})"))


@pytest.mark.parametrize("path", ["does-not-matter/scale", "does-not-matter/frobnicate"])
async def test_a_custom_resource_subresource_it_does_not_declare_is_not_found(
        widgets: API, path: str) -> None:
    """Rule: the CRD handler answers a subresource the version does not declare (Widget has
    status, not scale) with NotFound for the resource and the object's name, whether the
    object exists or not.
    Source: k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go
    (ServeHTTP: "default: ... apierrors.NewNotFound(schema.GroupResource{Group:
    requestInfo.APIGroup, Resource: requestInfo.Resource}, requestInfo.Name)")."""
    assert await widgets.get(f"{WIDGETS}/{path}") == (404, failure(
        404, "NotFound", 'widgets.fidelity.example.com "does-not-matter" not found',
        {"name": "does-not-matter", "group": "fidelity.example.com", "kind": "widgets"}))


@pytest.mark.parametrize(("method", "verb"), [("DELETE", "delete"), ("POST", "create")])
async def test_a_custom_resource_status_takes_get_update_and_patch_only(
        widgets: API, method: str, verb: str) -> None:
    """Rule: the CRD handler's status endpoint serves get, update and patch; any other verb is
    NewMethodNotSupported for the resource (not go-restful's generic 405).
    Source: k8s.io/apiextensions-apiserver pkg/apiserver/customresource_handler.go
    (serveStatus: "default: ... apierrors.NewMethodNotSupported(...)")."""
    status, out = await widgets.request(method, f"{WIDGETS}/somewidget/status",
                                        widget("somewidget"))
    assert (status, out) == (405, failure(
        405, "MethodNotAllowed",
        f'{verb} is not supported on resources of kind "widgets.fidelity.example.com"',
        {"group": "fidelity.example.com", "kind": "widgets"}))


async def test_a_custom_resource_patch_checks_its_content_type_before_the_name(
        widgets: API) -> None:
    """Rule: PatchResource refuses an unsupported Content-Type before it asks the namer for a
    name, so a strategic merge patch on a custom resource collection is the 415.
    Source: k8s.io/apiserver pkg/endpoints/handlers/patch.go (PatchResource: "Ensure the
    patchType is one we support" before scope.Namer.Name), k8s.io/apiextensions-apiserver
    pkg/apiserver/customresource_handler.go (supportedTypes)."""
    status, out = await widgets.patch(WIDGETS, {"spec": {}},
                                      "application/strategic-merge-patch+json")
    assert (status, out) == (415, failure(
        415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
        "accepted media types include: application/json-patch+json, "
        "application/merge-patch+json, application/apply-patch+yaml"))
