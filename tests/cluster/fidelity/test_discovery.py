"""Discovery as kube-apiserver 1.32 serves it: storage version hashes and unknown paths.

Sources: k8s.io/apiserver pkg/endpoints/discovery/storageversionhash.go and
pkg/endpoints/installer.go (the hash), pkg/server/handler.go (go-restful's misses through
``serviceErrorHandler``), pkg/util/notfoundhandler (the end of the delegation chain), and
apiextensions-apiserver pkg/apiserver/customresource_handler.go (what the CRD handler leaves
to its delegate).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
ROUTE_NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server could not find the requested resource",
                   "reason": "NotFound", "details": {}, "code": 404}


def _hash(group: str, version: str, kind: str) -> str:
    # storageversionhash.go: base64 of the first 8 bytes of sha256("group/version/kind")
    return base64.b64encode(hashlib.sha256(f"{group}/{version}/{kind}".encode())
                            .digest()[:8]).decode()


async def _raw(api: API, path: str, accept: str | None = None) -> tuple[int, str, str]:
    headers = {"Accept": accept} if accept else {}
    async with api.session.get(api.cluster.url + path, headers=headers, ssl=api.ssl) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.text()


async def _crd(api: API, versions: list[dict[str, Any]]) -> None:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"schema": schema, "subresources": {"status": {}}, **v}
                                  for v in versions]}}
    status, _ = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
    assert status == 201
    async def served() -> bool:
        return (await api.get("/apis/example.com/v1"))[0] == 200

    await wait_for(served)


async def test_storage_version_hash_of_builtins_and_none_for_subresources(api: API) -> None:
    """Rule: every stored resource's storageVersionHash is the hash of the group/version/kind
    it is stored as (events.k8s.io Events are stored as core v1 Events, autoscaling/v1
    HorizontalPodAutoscalers as autoscaling/v2); subresources and resources kept in no
    storage (bindings, reviews) carry none. installer.go, storageversionhash.go."""
    _, core = await api.get("/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ=" == _hash(
        "", "v1", "ConfigMap")
    assert by_name["events"]["storageVersionHash"] == _hash("", "v1", "Event")
    assert "storageVersionHash" not in by_name["pods/status"]
    assert "storageVersionHash" not in by_name["bindings"]
    _, events = await api.get("/apis/events.k8s.io/v1")
    assert events["resources"][0]["storageVersionHash"] == _hash("", "v1", "Event")
    _, hpa = await api.get("/apis/autoscaling/v1")
    assert hpa["resources"][0]["storageVersionHash"] == _hash(
        "autoscaling", "v2", "HorizontalPodAutoscaler")
    _, authn = await api.get("/apis/authentication.k8s.io/v1")
    assert all("storageVersionHash" not in r for r in authn["resources"])


async def test_storage_version_hash_of_a_crd_follows_its_storage_version(api: API) -> None:
    """Rule: every served version of a CRD lists the hash of its storage version, and the
    hash changes when another version becomes the storage version; status.storedVersions
    keeps the old one. customresource_handler.go (StorageVersionHash of the storage
    version), registry/customresourcedefinition/strategy.go (storedVersions)."""
    await _crd(api, [{"name": "v1alpha1", "served": True, "storage": True},
                     {"name": "v1", "served": True, "storage": False}])
    for version in ("v1alpha1", "v1"):
        _, listing = await api.get(f"/apis/example.com/{version}")
        assert listing["resources"] == [
            {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
             "verbs": ["delete", "deletecollection", "get", "list", "patch", "create",
                       "update", "watch"],
             "storageVersionHash": _hash("example.com", "v1alpha1", "Widget")},
            {"name": "widgets/status", "singularName": "", "namespaced": True,
             "kind": "Widget", "verbs": ["get", "patch", "update"]}]
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
    _, crd = await api.get(path)
    crd["spec"]["versions"][0]["storage"], crd["spec"]["versions"][1]["storage"] = False, True
    status, crd = await api.put(path, crd)
    assert status == 200
    assert crd["status"]["storedVersions"] == ["v1alpha1", "v1"]
    async def hash_followed() -> bool:
        _, listing = await api.get("/apis/example.com/v1alpha1")
        return bool(listing["resources"][0]["storageVersionHash"] == _hash(
            "example.com", "v1", "Widget"))

    await wait_for(hash_followed)


@pytest.mark.parametrize("accept", [None, AGGREGATED])
@pytest.mark.parametrize("path", ["/apis/nope.example.com", "/apis/nope.example.com/v1",
                                  "/apis/nope.example.com/v1/widgets"])
async def test_unknown_group_is_the_plain_text_404(api: API, path: str,
                                                   accept: str | None) -> None:
    """Rule: a group nothing serves falls through the aggregator, the CRD handler and
    kube-apiserver's mux to notfoundhandler's ``http.NotFound``: a plain-text 404, whatever
    the Accept header. pkg/util/notfoundhandler/not_found_handler.go."""
    assert await _raw(api, path, accept) == (404, "text/plain; charset=utf-8",
                                             "404 page not found\n")


@pytest.mark.parametrize("accept", [None, AGGREGATED])
@pytest.mark.parametrize("path", ["/apis/apps/v9", "/apis/apps/v9/deployments", "/api/v2",
                                  "/apis/apps/v1/nothings", "/api/v1/pods/p1"])
async def test_unknown_version_of_a_builtin_group_is_a_status(api: API, path: str,
                                                              accept: str | None) -> None:
    """Rule: under a built-in group's go-restful WebService (``/api``, ``/apis/apps``) a path
    no route serves is answered by ``serviceErrorHandler`` with NewGenericServerResponse's
    NotFound Status (empty details), in JSON even when only aggregated discovery is
    accepted (WriteObjectNegotiated falls back to raw JSON for errors).
    k8s.io/apiserver pkg/server/handler.go, apimachinery pkg/api/errors/errors.go."""
    async with api.session.get(api.cluster.url + path, ssl=api.ssl,
                               headers={"Accept": accept} if accept else {}) as resp:
        assert (resp.status, resp.content_type) == (404, "application/json")
        assert await resp.json() == ROUTE_NOT_FOUND


async def test_paths_a_crd_group_does_not_serve_are_plain_text(api: API) -> None:
    """Rule: the CRD handler hands an unserved version, an unknown resource of a CRD group,
    and a namespaced custom resource addressed outside a namespace (other than list/watch)
    to its delegate, which ends in the plain-text 404. customresource_handler.go
    (ServeHTTP: HasServedCRDVersion, crdLister.Get, possiblyAcrossAllNamespacesVerbs)."""
    await _crd(api, [{"name": "v1", "served": True, "storage": True}])
    for path in ("/apis/example.com/v9", "/apis/example.com/v9/widgets",
                 "/apis/example.com/v1/gadgets", "/apis/example.com/v1/widgets/w1"):
        assert await _raw(api, path) == (404, "text/plain; charset=utf-8",
                                         "404 page not found\n"), path
    status, body = await api.get("/apis/example.com/v1/widgets")
    assert (status, body["kind"]) == (200, "WidgetList")


async def test_method_a_builtin_route_lacks_is_a_generic_405(api: API) -> None:
    """Rule: POST to the all-namespaces list route of a namespaced kind is go-restful's 405
    through ``serviceErrorHandler``: MethodNotAllowed with empty details.
    k8s.io/apiserver pkg/server/handler.go."""
    status, body = await api.post("/apis/apps/v1/deployments", {})
    assert status == 405
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "the server does not allow this method on the requested "
                               "resource", "reason": "MethodNotAllowed", "details": {},
                    "code": 405}
