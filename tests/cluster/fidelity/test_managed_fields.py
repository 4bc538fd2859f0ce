"""Managed fields of fields the server sets itself.

Sources: k8s.io/apiserver pkg/endpoints/handlers/create.go (the field manager tracks the
decoded, defaulted object before the REST storage's own create hooks run) and
kubernetes pkg/registry/core/service/storage (alloc.go: the IP families and cluster IPs are
the allocator's, set after tracking).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API

SERVICES = "/api/v1/namespaces/default/services"


async def test_service_fields_the_allocator_sets_are_owned_by_nobody(api: API) -> None:
    """Rule: SetDefaults_Service's fields (type, sessionAffinity, internalTrafficPolicy,
    port protocol and targetPort) belong to the creator, but clusterIP, clusterIPs,
    ipFamilies and ipFamilyPolicy are set by the service REST allocator after the field
    manager ran: nobody owns them, though the object has them.
    Source: pkg/apis/core/v1/defaults.go (SetDefaults_Service),
    pkg/registry/core/service/storage/alloc.go (initIPFamilyFields, allocateCreate),
    staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go (UpdateNoErrors before
    r.Create)."""
    status, body = await api.post(f"{SERVICES}?fieldManager=creator", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    assert status == 201, body
    spec = body["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"], spec["clusterIPs"]) == (
        "SingleStack", ["IPv4"], [spec["clusterIP"]])
    [entry] = body["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:spec": {
        "f:internalTrafficPolicy": {},
        "f:ports": {".": {}, 'k:{"port":80,"protocol":"TCP"}': {
            ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
        "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}
    # an update that leaves them out keeps them, still unowned
    sent = {**body, "spec": {k: v for k, v in spec.items()
                             if k not in ("ipFamilies", "ipFamilyPolicy")}}
    status, updated = await api.put(f"{SERVICES}/s?fieldManager=other", sent)
    assert status == 200, updated
    assert (updated["spec"]["ipFamilies"], updated["spec"]["ipFamilyPolicy"]) == (
        ["IPv4"], "SingleStack")
    assert [e["manager"] for e in updated["metadata"]["managedFields"]] == ["creator"]


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """managedFields without their times, in the order the server keeps them."""
    return [{k: v for k, v in e.items() if k != "time"} for e in obj["metadata"]["managedFields"]]


def _in_server_order(obj: dict[str, Any]) -> bool:
    """Whether managedFields are in the order k8s.io/apimachinery's fieldmanager keeps them
    (sortEncodedManagedFields: operation, then the time's seconds, then manager, apiVersion
    and subresource; RFC 3339 times in UTC sort as text)."""
    entries = obj["metadata"]["managedFields"]
    return bool(entries == sorted(entries, key=lambda e: (
        e["operation"], e.get("time", ""), e["manager"], e["apiVersion"],
        e.get("subresource", ""))))


def _manager(entry: dict[str, Any]) -> str:
    return str(entry["manager"])


def _update(manager: str, fields: dict[str, Any], subresource: str = "",
            api_version: str = "v1") -> dict[str, Any]:
    entry = {"manager": manager, "operation": "Update", "apiVersion": api_version,
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    return {**entry, "subresource": subresource} if subresource else entry


def _apply_yaml(data: str) -> bytes:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n{data}".encode()


async def test_first_apply_to_an_untracked_object_meets_before_first_apply(api: API) -> None:
    """Rule: when the live object has no managed fields (here cleared with [{}]), an update
    leaves it untracked, and an apply first gives every existing field to the Update
    manager "before-first-apply": the applier conflicts with it over a value it changes,
    and a forced apply takes that field, leaving the rest to "before-first-apply".
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/skipnonapplied.go
    (skipNonAppliedManager.Update and .Apply), used by NewDefaultFieldManager in
    fieldmanager.go (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager)."""
    await api.post(f"{CONFIGMAPS}?fieldManager=creator", {
        "metadata": {"name": "c", "labels": {"l": "1"}}, "data": {"a": "1", "b": "2"}})
    status, body = await api.patch(f"{CONFIGMAPS}/c", {"metadata": {"managedFields": [{}]}},
                                   "application/merge-patch+json")
    assert (status, "managedFields" in body["metadata"]) == (200, False)
    status, body = await api.patch(f"{CONFIGMAPS}/c?fieldManager=editor", {"data": {"e": "1"}},
                                   "application/merge-patch+json")
    assert (status, "managedFields" in body["metadata"]) == (200, False)
    status, body = await api.patch(f"{CONFIGMAPS}/c?fieldManager=applier", None, APPLY,
                                   raw=_apply_yaml("  a: '9'\n"))
    assert status == 409
    assert body["message"] == ('Apply failed with 1 conflict: conflict with '
                               '"before-first-apply" using v1: .data.a')
    status, body = await api.patch(f"{CONFIGMAPS}/c?fieldManager=applier&force=true", None,
                                   APPLY, raw=_apply_yaml("  a: '9'\n"))
    assert status == 200, body
    assert _entries(body) == [
        {"manager": "applier", "operation": "Apply", "apiVersion": "v1",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
        _update("before-first-apply", {"f:data": {".": {}, "f:b": {}, "f:e": {}},
                                       "f:metadata": {"f:labels": {".": {}, "f:l": {}}}})]


async def test_create_then_apply_shares_and_a_later_update_takes_ownership(api: API) -> None:
    """Rule: an apply that sets a field to the value it has shares it with its Update owner
    (no conflict); a later update by any manager that changes the field takes it from
    every other owner, the applier's Apply entry included (a manager's Apply and Update
    entries are distinct owners), and an entry left owning nothing is dropped. Every patch
    type records an Update entry with the fields it changed.
    Source: sigs.k8s.io/structured-merge-diff merge/update.go (Updater.Update and Apply),
    k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go, and
    staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go (each patcher calls
    fieldManager.UpdateNoErrors; apply calls Apply)."""
    await api.post(f"{CONFIGMAPS}?fieldManager=creator", {
        "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}})
    status, body = await api.patch(f"{CONFIGMAPS}/c?fieldManager=applier", None, APPLY,
                                   raw=_apply_yaml("  a: '1'\n"))
    assert status == 200, body
    applied = {"manager": "applier", "operation": "Apply", "apiVersion": "v1",
               "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
    assert _entries(body) == [applied, _update("creator", {"f:data": {
        ".": {}, "f:a": {}, "f:b": {}}})]
    status, body = await api.put(f"{CONFIGMAPS}/c?fieldManager=applier",
                                 {**body, "data": {"a": "2", "b": "2"}})
    assert status == 200, body
    # two Update entries sort by their times' seconds, then by manager (fieldmanager's
    # sortEncodedManagedFields): the create and this update may fall in different seconds
    assert _in_server_order(body) and sorted(_entries(body), key=_manager) == [
        _update("applier", {"f:data": {"f:a": {}}}),
        _update("creator", {"f:data": {".": {}, "f:b": {}}})]
    for manager, content_type, patch in [
            ("jsonpatch", "application/json-patch+json",
             [{"op": "add", "path": "/data/j", "value": "1"}]),
            ("mergepatch", "application/merge-patch+json", {"data": {"m": "1"}}),
            ("strategic", "application/strategic-merge-patch+json", {"data": {"s": "1"}})]:
        status, body = await api.patch(f"{CONFIGMAPS}/c?fieldManager={manager}", patch,
                                       content_type)
        assert status == 200, body
    assert _entries(body)[2:] == [_update("jsonpatch", {"f:data": {"f:j": {}}}),
                                  _update("mergepatch", {"f:data": {"f:m": {}}}),
                                  _update("strategic", {"f:data": {"f:s": {}}})]


async def test_scale_write_moves_replicas_to_the_scaler(api: API) -> None:
    """Rule: a write through /scale is an Update with subresource "scale" owning only the
    parent's spec.replicas, which it takes from the parent's owners; the converted entry
    carries the time of the manager's parent entry (none for a new manager), so it sorts
    first. Source: k8s.io/apimachinery pkg/util/managedfields/scalehandler.go
    (ScaleHandler.ToSubresource and ToParent), pkg/registry/apps/deployment/storage
    (ScaleREST.Update), and the sort of internal/managedfields.go
    (sortEncodedManagedFields)."""
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    await api.post(f"{deployments}?fieldManager=creator", {
        "metadata": {"name": "d"}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    status, _ = await api.patch(f"{deployments}/d/scale?fieldManager=scaler",
                                {"spec": {"replicas": 3}}, "application/merge-patch+json")
    assert status == 200
    _, body = await api.get(f"{deployments}/d")
    scaler, creator = body["metadata"]["managedFields"]
    assert (scaler, "time" in creator) == ({
        "manager": "scaler", "operation": "Update", "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
        "subresource": "scale"}, True)
    assert "f:replicas" not in creator["fieldsV1"]["f:spec"]


async def test_an_explicit_null_in_an_apply_is_owned_and_wins_the_merge(api: API) -> None:
    """Rule: the apply configuration is used as sent, an unstructured map: a member set to
    null is a leaf the applier owns, and it wins the merge like any value; the result is
    then converted to its Go type, where the null is nil (left out, then defaulted: a
    Deployment's replicas is 1 again) and a string map value is "". The owned null also
    conflicts with a later applier that gives that map members.
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/structuredmerge.go (Apply:
    ObjectToTyped of the patch object, TypedToObject, toVersioned, objectDefaulter),
    sigs.k8s.io/structured-merge-diff v4.4.2 typed/tofieldset.go (visitMapItems inserts a
    null value's path), merge/update.go (update: conflicts over Added), typed/compare.go
    (a map present on one side only is Added itself)."""
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nulls"},
            "data": {"a": "1"}}
    status, body = await api.patch(f"{CONFIGMAPS}/nulls?fieldManager=a", data, APPLY)
    assert status == 201, body
    status, body = await api.patch(f"{CONFIGMAPS}/nulls?fieldManager=a",
                                   {**data, "data": None}, APPLY)
    assert (status, "data" in body) == (200, False), body
    assert _entries(body) == [{"manager": "a", "operation": "Apply", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]
    status, body = await api.patch(f"{CONFIGMAPS}/nulls?fieldManager=b", {
        **data, "metadata": {"name": "nulls", "labels": {"x": None}}, "data": {"q": None}},
        APPLY)
    assert (status, body["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "a": .data')
    status, body = await api.patch(f"{CONFIGMAPS}/nulls?fieldManager=b&force=true", {
        **data, "metadata": {"name": "nulls", "labels": {"x": None}}, "data": {"q": None}},
        APPLY)
    assert (status, body["data"], body["metadata"]["labels"]) == (200, {"q": ""}, {"x": ""})
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nulls"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "n"}},
                 "template": {"metadata": {"labels": {"app": "n"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments/nulls?fieldManager=a"
    status, body = await api.patch(path, deployment, APPLY)
    assert (status, body["spec"]["replicas"]) == (201, 3), body
    deployment["spec"]["replicas"] = None
    status, body = await api.patch(path, deployment, APPLY)
    assert (status, body["spec"]["replicas"]) == (200, 1), body
    [entry] = _entries(body)
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]
