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


PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"
MERGE = "application/merge-patch+json"


def _invalid(kind: str, name: str, causes: list[tuple[str, str, str]],
             group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": [
        {"reason": r, "message": m, "field": f} for f, r, m in causes]}
    if group:
        details = {"name": name, "group": group, "kind": kind, "causes": details["causes"]}
    text = [f"{f}: {m}" for f, _, m in causes]
    qualified = f"{kind}.{group}" if group else kind
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{qualified} "{name}" is invalid: '
                       + (text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"),
            "reason": "Invalid", "details": details, "code": 422}


async def test_pod_status_condition_types_must_be_qualified_names(api: API) -> None:
    """Rule: a pod condition that is not PodScheduled, Ready or Initialized must have a
    qualified name as its type; the real code reports it under metadata.conditions[i].Type
    (validatePodConditions is handed the metadata field path). Status itself, such as an
    unknown phase or condition status, is not validated.
    Source: pkg/apis/core/validation/validation.go (ValidatePodStatusUpdate,
    validatePodConditions), called by podStatusStrategy.ValidateUpdate in
    pkg/registry/core/pod/strategy.go."""
    status, _ = await api.post(PODS, {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "nginx"}]}})
    assert status == 201
    qualified = ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                 "'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    status, body = await api.patch(f"{PODS}/p/status", {"status": {"conditions": [
        {"type": "Ready", "status": "Maybe"}, {"type": "a b", "status": "True"}]}}, MERGE)
    assert (status, body) == (422, _invalid("Pod", "p", [
        ("metadata.conditions[1].Type", "FieldValueInvalid",
         f'Invalid value: "a b": {qualified}')]))
    status, body = await api.patch(f"{PODS}/p/status", {"status": {
        "phase": "Imaginary", "conditions": [{"type": "example.com/Warm", "status": "True"}]}},
        MERGE)
    assert (status, body["status"]["phase"]) == (200, "Imaginary")


async def test_pod_status_write_keeps_owner_references_and_drops_deletion_timestamp(
        api: API) -> None:
    """Rule: the pod status strategy takes ownerReferences from the stored pod and clears a
    deletionTimestamp the write brings; both are reset fields, so the status writer owns
    neither. Source: pkg/registry/core/pod/strategy.go (podStatusStrategy.PrepareForUpdate
    and GetResetFields)."""
    _, owner = await api.post("/api/v1/namespaces/default/configmaps",
                              {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    status, _ = await api.post(PODS, {"metadata": {"name": "p", "ownerReferences": [ref]},
                                      "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert status == 201
    status, body = await api.patch(f"{PODS}/p/status?fieldManager=kubelet", {
        "metadata": {"ownerReferences": None, "deletionTimestamp": "2024-01-01T00:00:00Z"},
        "status": {"phase": "Running"}}, MERGE)
    assert status == 200, body
    assert (body["metadata"]["ownerReferences"], "deletionTimestamp" in body["metadata"],
            body["status"]["phase"]) == ([ref], False, "Running")
    assert _entry(body, "kubelet")["fieldsV1"] == {"f:status": {"f:phase": {}}}


async def test_service_status_load_balancer_ingress_is_validated(api: API) -> None:
    """Rule: status.loadBalancer.ingress is only for LoadBalancer Services (the
    AllowServiceLBStatusOnNonLB gate is off); each ingress IP must be an IP, its ipMode
    (defaulted to VIP when an IP is set) one of Proxy/VIP and absent without an IP, and a
    hostname a DNS name that is not an IP.
    Source: pkg/apis/core/validation/validation.go (ValidateServiceStatusUpdate,
    ValidateLoadBalancerStatus), pkg/apis/core/v1/defaults.go (SetDefaults_Service: ipMode),
    pkg/registry/core/service/strategy.go (serviceStatusStrategy.ValidateUpdate)."""
    await api.post(SERVICES, {"metadata": {"name": "plain"},
                              "spec": {"ports": [{"port": 80}]}})
    status, body = await api.patch(f"{SERVICES}/plain/status", {"status": {"loadBalancer": {
        "ingress": [{"ip": "10.0.0.1"}]}}}, MERGE)
    assert (status, body) == (422, _invalid("Service", "plain", [
        ("status.loadBalancer.ingress", "FieldValueForbidden",
         "Forbidden: may only be used when `spec.type` is 'LoadBalancer'")]))
    await api.post(SERVICES, {"metadata": {"name": "lb"}, "spec": {
        "type": "LoadBalancer", "ports": [{"port": 80}]}})
    status, body = await api.patch(f"{SERVICES}/lb/status", {"status": {"loadBalancer": {
        "ingress": [{"ip": "not-an-ip"}, {"ip": "10.0.0.2", "ipMode": "Bogus"},
                    {"hostname": "10.0.0.3", "ipMode": "VIP"}]}}}, MERGE)
    assert (status, body) == (422, _invalid("Service", "lb", [
        ("status.loadBalancer.ingress[0].ip", "FieldValueInvalid",
         'Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or '
         '2001:db8::ffff)'),
        ("status.loadBalancer.ingress[1].ipMode", "FieldValueNotSupported",
         'Unsupported value: "Bogus": supported values: "Proxy", "VIP"'),
        ("status.loadBalancer.ingress[2].ipMode", "FieldValueForbidden",
         "Forbidden: may not be specified when `ip` is not set"),
        ("status.loadBalancer.ingress[2].hostname", "FieldValueInvalid",
         'Invalid value: "10.0.0.3": must be a DNS name, not an IP address')]))
    status, body = await api.patch(f"{SERVICES}/lb/status", {"status": {"loadBalancer": {
        "ingress": [{"ip": "10.0.0.1"}]}}}, MERGE)
    assert (status, body["status"]["loadBalancer"]) == (
        200, {"ingress": [{"ip": "10.0.0.1", "ipMode": "VIP"}]})


async def test_namespace_status_phase_follows_the_deletion_timestamp(api: API) -> None:
    """Rule: a namespace's status.phase may only be Active while it has no
    deletionTimestamp (the field path is the Go one, status.Phase).
    Source: pkg/apis/core/validation/validation.go (ValidateNamespaceStatusUpdate), called
    by namespaceStatusStrategy.ValidateUpdate in pkg/registry/core/namespace/strategy.go."""
    await api.post("/api/v1/namespaces", {"metadata": {"name": "n1"}})
    status, body = await api.patch("/api/v1/namespaces/n1/status",
                                   {"status": {"phase": "Terminating"}}, MERGE)
    assert (status, body) == (422, _invalid("Namespace", "n1", [
        ("status.Phase", "FieldValueInvalid",
         "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is "
         "empty")]))


async def test_job_status_counts_may_not_be_negative(api: API) -> None:
    """Rule: a Job's active, succeeded and failed counts, and ready and terminating when
    set, may not be negative. Source: pkg/apis/batch/validation/validation.go
    (validateJobStatus, from ValidateJobUpdateStatus; jobStatusStrategy.ValidateUpdate in
    pkg/registry/batch/job/strategy.go). A lower failed count is also a decrease, which
    getStatusValidationOptions always rejects (JobManagedBy is on in 1.32)."""
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    status, _ = await api.post(jobs, {"metadata": {"name": "j"}, "spec": {"template": {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}})
    assert status == 201
    status, body = await api.patch(f"{jobs}/j/status", {"status": {
        "active": -1, "failed": -3, "ready": -2}}, MERGE)
    negative = "must be greater than or equal to 0"
    assert (status, body) == (422, _invalid("Job", "j", [
        ("status.active", "FieldValueInvalid", f"Invalid value: -1: {negative}"),
        ("status.failed", "FieldValueInvalid", f"Invalid value: -3: {negative}"),
        ("status.ready", "FieldValueInvalid", f"Invalid value: -2: {negative}"),
        ("status.failed", "FieldValueInvalid",
         "Invalid value: -3: cannot decrease the failed counter")], "batch"))
