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
