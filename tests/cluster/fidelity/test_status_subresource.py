"""Writes through ``/status``: what a status PUT or PATCH keeps, how the status itself is
validated, and what managed fields the write records.

Sources: each kind's status strategy in kubernetes pkg/registry/*/*/strategy.go
(PrepareForUpdate, GetResetFields, ValidateUpdate), apiextensions-apiserver
pkg/registry/customresource/status_strategy.go, and k8s.io/apimachinery
pkg/util/managedfields (reset fields are ignored by the field manager).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import WIDGETS, create_widget_crd, send, widget

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "d", "labels": {"a": "1"}, "annotations": {"x": "1"}},
    "spec": {"selector": {"matchLabels": {"app": "x"}},
             "template": {"metadata": {"labels": {"app": "x"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    return {k: v for k, v in entry.items() if k != "time"}


async def test_deployment_status_put_keeps_spec_and_labels_but_not_annotations(
        api: API) -> None:
    """Rule: the Deployment status strategy takes spec and labels from the stored object and
    keeps the rest of the new metadata (annotations, finalizers); labels and spec are its
    reset fields, so the status writer owns neither, and the creator keeps its labels.
    Source: pkg/registry/apps/deployment/strategy.go (deploymentStatusStrategy
    PrepareForUpdate and GetResetFields)."""
    status, created = await api.post(f"{DEPLOYMENTS}?fieldManager=creator", DEPLOYMENT)
    assert status == 201, created
    sent = {**created, "metadata": {**created["metadata"], "labels": {"a": "2"},
                                    "annotations": {"x": "2"}},
            "spec": {**created["spec"], "replicas": 5},
            "status": {"replicas": 2, "observedGeneration": 1}}
    status, body = await api.put(f"{DEPLOYMENTS}/d/status?fieldManager=statuser", sent)
    assert status == 200, body
    meta = body["metadata"]
    assert (meta["labels"], meta["annotations"], meta["generation"]) == (
        {"a": "1"}, {"x": "2"}, 1)
    assert (body["spec"]["replicas"], body["status"]) == (1, {"replicas": 2,
                                                              "observedGeneration": 1})
    assert _entry(body, "statuser") == {
        "manager": "statuser", "operation": "Update", "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1", "subresource": "status",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:x": {}}},
                     "f:status": {"f:observedGeneration": {}, "f:replicas": {}}}}
    creator = _entry(body, "creator")["fieldsV1"]["f:metadata"]
    assert creator == {"f:annotations": {}, "f:labels": {".": {}, "f:a": {}}}


async def test_negative_deployment_status_replicas_are_invalid(api: API) -> None:
    """Rule: a Deployment's status counts may not be negative (and its subsets may not
    exceed status.replicas): the status update is a 422 naming each field.
    Source: pkg/apis/apps/validation/validation.go (ValidateDeploymentStatus, called by
    ValidateDeploymentStatusUpdate from deploymentStatusStrategy.ValidateUpdate)."""
    status, created = await api.post(DEPLOYMENTS, DEPLOYMENT)
    assert status == 201, created
    status, body, _ = await send(api, "PATCH", f"{DEPLOYMENTS}/d/status",
                                 {"status": {"replicas": -1}},
                                 content_type="application/merge-patch+json")
    assert status == 422
    # 0 updated, ready and available replicas are now more than -1 replicas, too
    causes = [("status.replicas", "Invalid value: -1: must be greater than or equal to 0")] + [
        (f"status.{k}", "Invalid value: 0: cannot be greater than status.replicas")
        for k in ("updatedReplicas", "readyReplicas", "availableReplicas")]
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Deployment.apps "d" is invalid: ['
                   + ", ".join(f"{f}: {m}" for f, m in causes) + "]",
        "reason": "Invalid",
        "details": {"name": "d", "group": "apps", "kind": "Deployment", "causes": [
            {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]},
        "code": 422}
    status, body, _ = await send(api, "PATCH", f"{DEPLOYMENTS}/d/status",
                                 {"status": {"replicas": 1, "readyReplicas": 2}},
                                 content_type="application/merge-patch+json")
    assert (status, [c["field"] for c in body["details"]["causes"]]) == (
        422, ["status.readyReplicas"])
    assert body["details"]["causes"][0]["message"] == (
        "Invalid value: 2: cannot be greater than status.replicas")


async def test_custom_resource_status_write_keeps_only_the_status(api: API) -> None:
    """Rule: a custom resource's status strategy copies the stored object and sets only the
    new status (metadata changes, spec changes and generation are ignored); the managed
    fields entry is the status writer's, with subresource "status".
    Source: apiextensions-apiserver pkg/registry/customresource/status_strategy.go
    (statusStrategy.PrepareForUpdate)."""
    await create_widget_crd(api)
    status, created = await api.post(WIDGETS + "?fieldManager=creator",
                                     widget("w", spec={"size": 1}))
    assert status == 201, created
    sent = {**created, "metadata": {**created["metadata"], "labels": {"new": "x"}},
            "spec": {"size": 9}, "status": {"ready": True}}
    status, body = await api.put(f"{WIDGETS}/w/status?fieldManager=statuser", sent)
    assert status == 200, body
    assert ("labels" not in body["metadata"], body["spec"], body["status"],
            body["metadata"]["generation"]) == (True, {"size": 1}, {"ready": True}, 1)
    assert _entry(body, "statuser")["subresource"] == "status"
    assert _entry(body, "statuser")["fieldsV1"]["f:status"] == {".": {}, "f:ready": {}}
