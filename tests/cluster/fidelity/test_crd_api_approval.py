"""The API approval policy of CRDs in the community's groups (*.k8s.io, *.kubernetes.io).

kube-apiserver 1.32: apiextensions-apiserver v0.32 pkg/apihelpers/helpers.go
(GetAPIApprovalState), pkg/apis/apiextensions/validation/validation.go (validateAPIApproval)
and pkg/controller/apiapproval/apiapproval_controller.go (calculateCondition, the
KubernetesAPIApprovalPolicyConformant condition).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP = "tools.k8s.io"
NAME = f"gears.{GROUP}"
ANNOTATION = "api-approved.kubernetes.io"
POLICY = "https://github.com/kubernetes/enhancements/pull/1111"


def _crd(annotation: str | None, group: str = GROUP) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"gears.{group}"}
    if annotation is not None:
        meta["annotations"] = {ANNOTATION: annotation}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": meta,
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "gears", "kind": "Gear"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


async def _conditions(api: API, name: str = NAME) -> dict[str, dict[str, Any]]:
    status, body = await api.get(f"{CRDS}/{name}")
    assert status == 200, body
    return {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}


async def test_the_approval_condition_follows_the_annotation(api: API) -> None:
    status, body = await api.post(CRDS, _crd("unapproved, experimental"))
    assert status == 201, body

    async def reported() -> bool:
        return "KubernetesAPIApprovalPolicyConformant" in await _conditions(api)

    await wait_for(reported)
    conditions = await _conditions(api)
    # SetCRDCondition appends it beside the naming controller's conditions, which stay
    assert list(conditions) == ["NamesAccepted", "Established",
                                "KubernetesAPIApprovalPolicyConformant"]
    cond = conditions["KubernetesAPIApprovalPolicyConformant"]
    assert {k: cond[k] for k in ("status", "reason", "message")} == {
        "status": "False", "reason": "UnapprovedAnnotation",
        "message": 'not approved: "unapproved, experimental"'}

    approved = "https://github.com/kubernetes/kubernetes/pull/1"
    status, body = await api.patch(f"{CRDS}/{NAME}",
                                   {"metadata": {"annotations": {ANNOTATION: approved}}},
                                   "application/merge-patch+json")
    assert status == 200, body

    async def approved_now() -> bool:
        cond = (await _conditions(api))["KubernetesAPIApprovalPolicyConformant"]
        return bool(cond["status"] == "True")

    await wait_for(approved_now)
    cond = (await _conditions(api))["KubernetesAPIApprovalPolicyConformant"]
    assert (cond["reason"], cond["message"]) == ("ApprovedAnnotation", f"approved in {approved}")


async def test_other_groups_get_no_approval_condition(api: API) -> None:
    status, body = await api.post(CRDS, _crd(None, group="tools.example.com"))
    assert status == 201, body

    async def established() -> bool:
        cond = (await _conditions(api, "gears.tools.example.com")).get("Established")
        return bool(cond and cond["status"] == "True")

    await wait_for(established)
    assert "KubernetesAPIApprovalPolicyConformant" not in await _conditions(
        api, "gears.tools.example.com")


async def test_an_annotation_that_is_neither_url_nor_unapproved_is_invalid(api: API) -> None:
    # GetAPIApprovalState: APIApprovalInvalid has its own reason (not the "missing" one);
    # a URL needs a scheme and a host (url.ParseRequestURI)
    for value in ("approved", "https://"):
        status, body = await api.post(CRDS, _crd(value))
        assert status == 422, body
        assert body["details"]["causes"] == [{
            "reason": "FieldValueInvalid", "field": f"metadata.annotations[{ANNOTATION}]",
            "message": f'Invalid value: "{value}": protected groups must have approval '
                       f'annotation "{ANNOTATION}" with either a URL or a reason starting '
                       f'with "unapproved", see {POLICY}'}]
    status, body = await api.post(CRDS, _crd("ftp://reviews.example.com/1"))
    assert status == 201, body
