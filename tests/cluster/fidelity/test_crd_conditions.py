"""The status conditions of a CustomResourceDefinition, in the order kube-apiserver's
controllers write them: each sets its own with SetCRDCondition (in place when present,
appended otherwise; apiextensions-apiserver v0.32 pkg/apihelpers/helpers.go).

The naming controller writes NamesAccepted then Established (``Installing`` until the
establishing controller runs, status/naming_controller.go calculateNamesAndConditions), and
the establishing controller turns Established True, or False when the conversion webhook's
caBundle is invalid (establish/establishing_controller.go sync). The recorded scenarios
(../shared/conformance golden/crd-create-established-discovery.json) show the same order,
Terminating appended by the finalizer controller.
"""

from __future__ import annotations

import json
from typing import Any

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(group: str, ca_bundle: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "group": group, "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object",
                                "x-kubernetes-preserve-unknown-fields": True}}}]}
    if ca_bundle is not None:
        spec["conversion"] = {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://conversion.example.com/convert",
                             "caBundle": ca_bundle}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"}, "spec": spec}


async def _conditions(api: API, name: str) -> list[tuple[str, str, str, str]]:
    status, body = await api.get(f"{CRDS}/{name}")
    assert status == 200, body
    return [(c["type"], c["status"], c["reason"], c["message"])
            for c in (body.get("status") or {}).get("conditions") or []]


async def test_names_accepted_comes_before_established(api: API) -> None:
    """Rule: a new CRD's conditions are NamesAccepted (NoConflicts) then Established
    (InitialNamesAccepted)."""
    status, body = await api.post(CRDS, _crd("order.example.com"))
    assert status == 201, body

    async def established() -> bool:
        return len(await _conditions(api, "widgets.order.example.com")) == 2
    await wait_for(established)
    assert await _conditions(api, "widgets.order.example.com") == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted")]


async def test_an_invalid_conversion_ca_bundle_keeps_the_crd_from_being_established(
        api: API) -> None:
    """Rule: a CRD created with a conversion webhook caBundle that holds no certificate (an
    invalid bundle is allowed on create, validation.go allowInvalidCABundle) gets Established
    False, InvalidCABundle; once the bundle is fixed (an update still allowed, the CRD not
    being Established) it is Established. An empty caBundle is no CA data and valid
    (k8s.io/apiserver pkg/util/webhook/validation.go ValidateCABundle: transport.TLSConfigFor)."""
    name = "widgets.cabundle.example.com"
    status, body = await api.post(CRDS, _crd("cabundle.example.com", "bm90IGEgY2VydA=="))
    assert status == 201, body

    async def named() -> bool:
        return len(await _conditions(api, name)) == 2
    await wait_for(named)
    assert await _conditions(api, name) == [
        ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        ("Established", "False", "InvalidCABundle", "The conversion webhook CABundle is invalid")]
    status, crd = await api.get(f"{CRDS}/{name}")
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = ""
    status, body = await api.put(f"{CRDS}/{name}", crd)
    assert status == 200, body

    async def established() -> bool:
        return ("Established", "True", "InitialNamesAccepted",
                "the initial names have been accepted") in await _conditions(api, name)
    await wait_for(established)
    assert [c[0] for c in await _conditions(api, name)] == ["NamesAccepted", "Established"]


async def _discovery_names(api: API, group: str) -> dict[str, Any]:
    """Where the group shows in discovery and OpenAPI: each answer's status, and whether the
    documents that list every group name it."""
    gv = f"{group}/v1"
    out: dict[str, Any] = {}
    out["version"] = (await api.get(f"/apis/{gv}"))[0]
    out["group"] = (await api.get(f"/apis/{group}"))[0]
    status, groups = await api.get("/apis")
    assert status == 200, groups
    out["in /apis"] = any(g["name"] == group for g in groups["groups"])
    status, aggregated = await api.get("/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert status == 200, aggregated
    out["in aggregated"] = any(g["metadata"]["name"] == group for g in aggregated["items"])
    status, v2 = await api.get("/openapi/v2")
    assert status == 200
    out["in v2"] = any(path.startswith(f"/apis/{gv}/") for path in v2["paths"])
    status, v3 = await api.get("/openapi/v3", headers={"Accept": "application/json"})
    assert status == 200, v3
    v3 = json.loads(v3) if isinstance(v3, str) else v3
    out["in v3"] = f"apis/{gv}" in v3["paths"]
    out["v3 document"] = (await api.get(f"/openapi/v3/apis/{gv}",
                                        headers={"Accept": "application/json"}))[0]
    return out


async def test_a_crd_not_established_is_not_discovered_and_its_resources_are_not_served(
        api: API) -> None:
    """Rule: discovery (legacy /apis/<group>[/<version>], /apis and the aggregated form) and
    OpenAPI v2/v3 leave out a CRD until it is Established; its resources, with NamesAccepted
    True, reach the custom resource handler, whose conversion webhook cannot be built from an
    invalid caBundle: a 500 "error resolving resource". Fixed and Established, all appear.
    Source: apiextensions-apiserver pkg/apiserver/customresource_discovery_controller.go sync
    (``if !IsCRDConditionTrue(crd, Established) { continue }``, the group and version
    unset when none is left), pkg/controller/openapi/controller.go and openapiv3/controller.go
    sync (``!IsCRDConditionTrue(crd, Established)``: the spec removed),
    pkg/apiserver/customresource_handler.go ServeHTTP (served once NamesAccepted or
    Established; getOrCreateServingInfoFor's error from converterFactory.NewConverter, the
    webhook client's TLS config failing on the bundle: ``NewInternalError("error resolving
    resource")``)."""
    group = "hidden.example.com"
    name = f"widgets.{group}"
    status, body = await api.post(CRDS, _crd(group, "bm90IGEgY2VydA=="))
    assert status == 201, body

    async def refused() -> bool:
        return ("Established", "False", "InvalidCABundle",
                "The conversion webhook CABundle is invalid") in await _conditions(api, name)
    await wait_for(refused)
    assert await _discovery_names(api, group) == {
        "version": 404, "group": 404, "in /apis": False, "in aggregated": False,
        "in v2": False, "in v3": False, "v3 document": 404}
    collection = f"/apis/{group}/v1/namespaces/default/widgets"
    status, out = await api.get(collection)
    assert (status, out["reason"], out["message"]) == (
        500, "InternalError", "Internal error occurred: error resolving resource")
    status, out = await api.post(collection, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                              "metadata": {"name": "w"}})
    assert (status, out["reason"]) == (500, "InternalError")

    status, crd = await api.get(f"{CRDS}/{name}")
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = ""
    status, body = await api.put(f"{CRDS}/{name}", crd)
    assert status == 200, body

    async def discovered() -> bool:
        return bool((await _discovery_names(api, group))["in v3"])
    await wait_for(discovered)
    assert await _discovery_names(api, group) == {
        "version": 200, "group": 200, "in /apis": True, "in aggregated": True,
        "in v2": True, "in v3": True, "v3 document": 200}
    status, out = await api.get(collection)
    assert status == 200, out
