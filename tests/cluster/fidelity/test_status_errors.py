"""Status errors: who a failure names (details.kind/name/group) and in what words.

Each test is one rule of kube-apiserver 1.32, read from the source it cites.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
CRS = "/apis/example.com/v1/namespaces/default/widgets"


def _failure(code: int, reason: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details, "code": code}


async def _widgets(api: API) -> None:
    """A namespaced Widget CRD with a scale subresource and a small schema."""
    spec_schema = {"type": "object", "properties": {
        "replicas": {"type": "integer", "minimum": 0},
        "size": {"type": "string", "enum": ["S", "M"]},
        "color": {"type": "string", "maxLength": 3}}}
    status, out = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "subresources": {"scale": {
                              "specReplicasPath": ".spec.replicas",
                              "statusReplicasPath": ".status.replicas"}},
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                              "spec": spec_schema,
                              "status": {"type": "object", "properties": {
                                  "replicas": {"type": "integer"}}}}}}}]}})
    assert status == 201, out

    async def served() -> bool:
        return (await api.get(CRS))[0] == 200

    await wait_for(served)


async def test_update_with_another_uid_is_a_storage_precondition_conflict(api: API) -> None:
    """A PUT whose metadata.uid is not the object's fails the storage precondition the
    handler derives from the body (rest.DefaultUpdatedObjectInfo.Preconditions), checked by
    the storage before anything else (etcd3 store.go GuaranteedUpdate, storage.Preconditions
    .Check: storage.NewInvalidObjError), answered by storeerr.InterpretUpdateError as a 409
    naming the resource and quoting the StorageError with the object's etcd key — even when
    the resourceVersion is stale too (the resourceVersion is compared later, in the
    update function of staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go)."""
    _, cm = await api.post(f"{NS}/configmaps", {"metadata": {"name": "cm"}})
    status, out = await api.put(f"{NS}/configmaps/cm", {"metadata": {
        "name": "cm", "uid": "not-the-uid", "resourceVersion": "1"}})
    assert status == 409
    assert out == _failure(409, "Conflict", (
        'Operation cannot be fulfilled on configmaps "cm": StorageError: invalid object, '
        "Code: 4, Key: /registry/configmaps/default/cm, ResourceVersion: 0, "
        "AdditionalErrorMsg: Precondition failed: UID in precondition: not-the-uid, UID in "
        f"object meta: {cm['metadata']['uid']}"), {"name": "cm", "kind": "configmaps"})


async def test_update_uid_precondition_of_a_custom_resource_names_its_group_key(api: API) -> None:
    """A custom resource lives under /registry/<group>/<plural> (apiextensions-apiserver
    stores through SimpleRestOptionsFactory, ResourcePrefix group/resource); its uid
    precondition failure quotes that key and names the group (storeerr.InterpretUpdateError,
    staging/src/k8s.io/apiserver/pkg/storage/errors/storage.go)."""
    await _widgets(api)
    _, w = await api.post(CRS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w"}})
    body = {**w, "metadata": {**w["metadata"], "uid": "other"}}
    status, out = await api.put(f"{CRS}/w", body)
    assert status == 409
    assert out == _failure(409, "Conflict", (
        'Operation cannot be fulfilled on widgets.example.com "w": StorageError: invalid '
        "object, Code: 4, Key: /registry/example.com/widgets/default/w, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object "
        f"meta: {w['metadata']['uid']}"), {"name": "w", "group": "example.com",
                                         "kind": "widgets"})


async def test_update_with_a_stale_resource_version_is_the_optimistic_lock_conflict(
        api: API) -> None:
    """store.go Update: a resourceVersion that is not the stored one is
    errors.NewConflict(qualifiedResource, name, OptimisticLockErrorMsg)."""
    await api.post(f"{APPS}/deployments", _deployment("d"))
    status, out = await api.put(f"{APPS}/deployments/d", {
        **_deployment("d"), "metadata": {"name": "d", "resourceVersion": "1"}})
    assert status == 409
    assert out == _failure(409, "Conflict", (
        'Operation cannot be fulfilled on deployments.apps "d": the object has been modified; '
        "please apply your changes to the latest version and try again"),
        {"name": "d", "group": "apps", "kind": "deployments"})


async def test_invalid_custom_resource_update_names_kind_group_and_every_cause(
        api: API) -> None:
    """An invalid CR update is errors.NewInvalid(GroupKind{group, Kind}, name, errs): details
    carry the Kind and group, the message every cause; the causes come in the validator's
    order: object meta, the OpenAPI schema, then the scale subresource's own check of the
    replicas path (apiextensions-apiserver pkg/registry/customresource/validator.go Validate
    and ValidateScaleSpec, staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go)."""
    await _widgets(api)
    _, w = await api.post(CRS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w"}, "spec": {"replicas": 1}})
    status, out = await api.put(f"{CRS}/w", {**w, "spec": {"replicas": -1}})
    causes = [
        {"reason": "FieldValueInvalid", "field": "spec.replicas",
         "message": "Invalid value: -1: spec.replicas in body should be greater than or equal "
                    "to 0"},
        {"reason": "FieldValueInvalid", "field": ".spec.replicas",
         "message": "Invalid value: -1: should be a non-negative integer"}]
    assert (status, out) == (422, _failure(422, "Invalid", (
        'Widget.example.com "w" is invalid: [spec.replicas: Invalid value: -1: spec.replicas in '
        "body should be greater than or equal to 0, .spec.replicas: Invalid value: -1: should "
        "be a non-negative integer]"),
        {"name": "w", "group": "example.com", "kind": "Widget", "causes": causes}))


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.mark.parametrize(("path", "message", "details"), [
    (f"{APPS}/deployments/nope/scale", 'deployments/scale.apps "nope" not found',
     {"name": "nope", "group": "apps", "kind": "deployments/scale"}),
    (f"{APPS}/replicasets/nope/scale", 'replicasets/scale.apps "nope" not found',
     {"name": "nope", "group": "apps", "kind": "replicasets/scale"}),
    (f"{NS}/replicationcontrollers/nope/scale",
     'replicationcontrollers/scale.autoscaling "nope" not found',
     {"name": "nope", "group": "autoscaling", "kind": "replicationcontrollers/scale"}),
    (f"{APPS}/statefulsets/nope/scale", 'statefulsets.apps "nope" not found',
     {"name": "nope", "group": "apps", "kind": "statefulsets"}),
])
async def test_get_scale_of_a_missing_object_names_what_its_registry_names(
        api: API, path: str, message: str, details: dict[str, Any]) -> None:
    """GET <resource>/scale of a missing object: the ScaleREST.Get of deployments and
    replicasets answers NotFound(apps.Resource("<resource>/scale")), replication controllers
    NotFound(autoscaling.Resource("replicationcontrollers/scale")); statefulsets pass on the
    store's NotFound, which names the resource of the request without its subresource
    (pkg/registry/apps/{deployment,replicaset,statefulset}/storage/storage.go,
    pkg/registry/core/replicationcontroller/storage/storage.go, and store.go
    qualifiedResourceFromContext)."""
    status, out = await api.get(path)
    assert (status, out) == (404, _failure(404, "NotFound", message, details))


async def test_get_scale_of_a_missing_custom_resource_names_the_plural(api: API) -> None:
    """apiextensions-apiserver pkg/registry/customresource/etcd.go ScaleREST.Get returns the
    store's NotFound: the plural and group, no subresource."""
    await _widgets(api)
    status, out = await api.get(f"{CRS}/nope/scale")
    assert (status, out) == (404, _failure(404, "NotFound", 'widgets.example.com "nope" not found',
                                           {"name": "nope", "group": "example.com",
                                            "kind": "widgets"}))


@pytest.mark.parametrize("resource", ["deployments", "statefulsets", "replicasets"])
async def test_update_or_patch_scale_of_a_missing_object_is_the_stores_not_found(
        api: API, resource: str) -> None:
    """PUT and PATCH of <resource>/scale go through the store's Update (ScaleREST.Update, and
    handlers/patch.go calls the same Update), whose missing object is
    NotFound(qualifiedResource): the resource of the request without its subresource
    (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go Update)."""
    expected = _failure(404, "NotFound", f'{resource}.apps "nope" not found',
                        {"name": "nope", "group": "apps", "kind": resource})
    status, out = await api.put(f"{APPS}/{resource}/nope/scale", {
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "nope"},
        "spec": {"replicas": 2}})
    assert (status, out) == (404, expected)
    status, out = await api.patch(f"{APPS}/{resource}/nope/scale", {"spec": {"replicas": 2}},
                                  "application/merge-patch+json")
    assert (status, out) == (404, expected)


async def test_status_of_a_missing_object_names_the_resource(api: API) -> None:
    """StatusREST.Get and Update are the store's (pkg/registry/core/pod/storage/storage.go):
    their NotFound names "pods", not "pods/status" (store.go qualifiedResourceFromContext)."""
    expected = _failure(404, "NotFound", 'pods "nope" not found',
                        {"name": "nope", "kind": "pods"})
    assert await api.get(f"{NS}/pods/nope/status") == (404, expected)
    assert await api.patch(f"{NS}/pods/nope/status", {"status": {"phase": "Running"}},
                           "application/merge-patch+json") == (404, expected)
