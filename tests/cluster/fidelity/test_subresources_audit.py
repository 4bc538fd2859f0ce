"""The ``scale`` subresource and ``dryRun`` checked against kube-apiserver 1.32: the Scale body
checked like any object against the URL, the built-in registries' uid precondition, the
ReplicationController's Scale selector, and every ``dryRun`` value validated.

Sources: kubernetes pkg/registry/apps/{deployment,replicaset,statefulset}/storage/storage.go
and pkg/registry/core/replicationcontroller/storage/storage.go (ScaleREST,
scaleUpdatedObjectInfo, scaleFromRC); apiextensions-apiserver
pkg/registry/customresource/etcd.go (its scaleUpdatedObjectInfo); apiserver
pkg/endpoints/handlers/{update,patch,rest}.go (EnsureObjectNamespaceMatchesRequestNamespace,
checkName); apimachinery pkg/apis/meta/v1/validation/validation.go (ValidateDryRun).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import CRDS, create_served, widget, widget_crd

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "default"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"
OTHER_UID = "11111111-2222-3333-4444-555555555555"


def _template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _scalable(kind: str, name: str) -> tuple[str, dict[str, Any]]:
    """A collection path and a one-replica object of ``kind`` named ``name``."""
    if kind == "replicationcontrollers":
        return (f"/api/v1/namespaces/{NS}/replicationcontrollers",
                {"metadata": {"name": name},
                 "spec": {"replicas": 1, "selector": {"app": name},
                          "template": _template(name)}})
    spec: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                            "template": _template(name)}
    if kind == "statefulsets":
        spec["serviceName"] = name
    return f"/apis/apps/v1/namespaces/{NS}/{kind}", {"metadata": {"name": name}, "spec": spec}


def _scale(name: str, replicas: int, **meta: str) -> dict[str, Any]:
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": name, **meta}, "spec": {"replicas": replicas}}


@pytest_asyncio.fixture(loop_scope="module")
async def scalable(module_api: API, request: pytest.FixtureRequest
                   ) -> AsyncIterator[tuple[str, str, dict[str, Any]]]:
    """An object of the kind ``request.param`` (the test's own name): its path, group and
    the created object; deleted afterwards."""
    kind: str = request.param
    name = f"subres-{kind[:-1]}"
    path, body = _scalable(kind, name)
    status, created = await module_api.post(path, body)
    assert status == 201, created
    group = "" if kind == "replicationcontrollers" else "apps"
    yield f"{path}/{name}", group, created
    await module_api.delete(f"{path}/{name}")


KINDS = ["deployments", "replicasets", "statefulsets", "replicationcontrollers"]


@pytest.mark.parametrize("scalable", KINDS, indirect=True)
async def test_scale_put_with_another_uid_is_a_conflict_on_the_scale_resource(
        module_api: API, scalable: tuple[str, str, dict[str, Any]]) -> None:
    """Rule: a Scale whose uid is not its parent's is a precondition failure: 409 Conflict
    on ``<resource>/scale`` naming both uids, checked after ValidateScale, and nothing
    written. Source: scaleUpdatedObjectInfo.UpdatedObject in pkg/registry/apps/{deployment,
    replicaset,statefulset}/storage/storage.go and pkg/registry/core/replicationcontroller/
    storage/storage.go ("Precondition failed: UID in precondition: %v, UID in object
    meta: %v")."""
    path, group, created = scalable
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    resource = path.split("/")[-2]
    status, out = await module_api.put(f"{path}/scale", _scale(name, 3, uid=OTHER_UID))
    assert status == 409, out
    assert (out["reason"], out["details"]) == (
        "Conflict", {"name": name, "kind": f"{resource}/scale",
                     **({"group": group} if group else {})})
    qualified = f"{resource}/scale.{group}" if group else f"{resource}/scale"
    assert out["message"] == (
        f'Operation cannot be fulfilled on {qualified} "{name}": Precondition failed: UID in '
        f"precondition: {OTHER_UID}, UID in object meta: {uid}")
    # ValidateScale comes first: a negative count with a wrong uid is the 422
    status, out = await module_api.put(f"{path}/scale", _scale(name, -1, uid=OTHER_UID))
    assert (status, out["reason"]) == (422, "Invalid"), out
    # a merge patch that sets the uid is checked the same way
    status, out = await module_api.patch(
        f"{path}/scale", {"metadata": {"uid": OTHER_UID}, "spec": {"replicas": 4}}, MERGE)
    assert (status, out["details"]["kind"]) == (409, f"{resource}/scale"), out
    # the parent's own uid passes
    status, out = await module_api.put(f"{path}/scale", _scale(name, 2, uid=uid))
    assert (status, out["spec"]) == (200, {"replicas": 2}), out
    status, parent = await module_api.get(path)
    assert parent["spec"]["replicas"] == 2


@pytest.mark.parametrize("scalable", ["deployments", "replicationcontrollers"], indirect=True)
async def test_scale_body_name_and_namespace_must_match_the_url(
        module_api: API, scalable: tuple[str, str, dict[str, Any]]) -> None:
    """Rule: the Scale of a PUT, and the patched Scale of a PATCH, are checked against the
    URL like any object: another namespace, then another name, is a 400 BadRequest, before
    the parent is read. Source: apiserver pkg/endpoints/handlers/update.go
    (rest.EnsureObjectNamespaceMatchesRequestNamespace, then checkName in rest.go) and
    patch.go (applyPatch's checkName)."""
    path, _, created = scalable
    name = created["metadata"]["name"]
    status, out = await module_api.put(f"{path}/scale", _scale("other", 2))
    assert (status, out["reason"], out["message"]) == (
        400, "BadRequest",
        f"the name of the object (other) does not match the name on the URL ({name})"), out
    status, out = await module_api.put(f"{path}/scale", _scale(name, 2, namespace="elsewhere"))
    assert (status, out["message"]) == (
        400, "the namespace of the provided object does not match the namespace sent on the "
             "request"), out
    status, out = await module_api.put(f"{path}/scale", {"spec": {"replicas": 2}})
    assert (status, out["message"]) == (
        400, f"the name of the object ({name} based on URL) was undeterminable: name must be "
             "provided"), out
    status, out = await module_api.patch(f"{path}/scale", {"metadata": {"name": "other"}}, MERGE)
    assert (status, out["message"]) == (
        400, f"the name of the object (other) does not match the name on the URL ({name})"), out
    # the missing parent's 404 comes after the name check
    missing = path.rsplit("/", 1)[0] + "/subres-missing"
    status, out = await module_api.put(f"{missing}/scale", _scale("other", 2))
    assert status == 400, out
    status, parent = await module_api.get(path)
    assert parent["spec"]["replicas"] == 1
    assert parent["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.parametrize("scalable", ["replicationcontrollers"], indirect=True)
async def test_replication_controller_scale_carries_its_selector(
        module_api: API, scalable: tuple[str, str, dict[str, Any]]) -> None:
    """Rule: a ReplicationController's Scale has ``status.selector``, its plain label map as
    a selector string. Source: pkg/registry/core/replicationcontroller/storage/storage.go
    (scaleFromRC: labels.SelectorFromSet(rc.Spec.Selector).String())."""
    path, _, created = scalable
    status, out = await module_api.get(f"{path}/scale")
    assert status == 200, out
    assert out["status"] == {"replicas": 0, "selector": f"app={created['metadata']['name']}"}


async def test_custom_resource_scale_rules_are_its_own(module_api: API) -> None:
    """Rule: the custom resources' ScaleREST takes the Scale's replicas and resourceVersion
    only: a uid other than the object's is no conflict; there is no ValidateScale, so a
    negative count is the custom resource validator's 422 on the parent kind ("should be a
    non-negative integer" at the specReplicasPath); and a Scale of an object without spec
    replicas that leaves the count unset is a 400 "the spec replicas field %q cannot be
    empty", nothing written. Source: apiextensions-apiserver
    pkg/registry/customresource/etcd.go (scaleUpdatedObjectInfo.UpdatedObject,
    invalidSpecReplicas) and validator.go (ValidateScaleSpec)."""
    group = "subres-audit.example.com"
    crd = widget_crd(group, {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                     subresources={"scale": {"specReplicasPath": ".spec.replicas",
                                             "statusReplicasPath": ".status.replicas"}})
    path = await create_served(module_api, crd)
    try:
        status, out = await module_api.post(path, widget(crd, "w", {"replicas": 1}))
        assert status == 201, out
        status, out = await module_api.put(f"{path}/w/scale", _scale("w", 3, uid=OTHER_UID))
        assert (status, out["spec"]) == (200, {"replicas": 3}), out
        for sent in (module_api.put(f"{path}/w/scale", _scale("w", -1)),
                     module_api.patch(f"{path}/w/scale", {"spec": {"replicas": -1}}, MERGE)):
            status, out = await sent
            assert (status, out["message"], out["details"]) == (
                422, f'Widget.{group} "w" is invalid: .spec.replicas: Invalid value: -1: '
                     "should be a non-negative integer",
                {"name": "w", "group": group, "kind": "Widget",
                 "causes": [{"reason": "FieldValueInvalid", "field": ".spec.replicas",
                             "message": "Invalid value: -1: should be a non-negative "
                                        "integer"}]}), out
        status, created = await module_api.post(path, widget(crd, "unset", {}))
        assert status == 201, created
        status, out = await module_api.patch(f"{path}/unset/scale",
                                             {"metadata": {"labels": {"a": "b"}}}, MERGE)
        assert (status, out["reason"], out["message"]) == (
            400, "BadRequest", 'the spec replicas field ".spec.replicas" cannot be empty'), out
        status, stored = await module_api.get(f"{path}/unset")
        assert stored["spec"] == {}
        assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    finally:
        await module_api.delete(f"{CRDS}/{crd['metadata']['name']}")


@pytest.mark.parametrize(("method", "query"), [
    ("POST", "dryRun=All&dryRun=Foo"), ("DELETE", "dryRun=All&dryRun=Foo")])
async def test_every_dry_run_value_is_validated(module_api: API, method: str,
                                                query: str) -> None:
    """Rule: ``dryRun`` is a list and every value of it must be ``All``; the 422 names the
    whole list, and nothing is written. Source: apimachinery pkg/apis/meta/v1/validation/
    validation.go (ValidateDryRun: field.NotSupported(fldPath, dryRun, ...))."""
    cms = f"/api/v1/namespaces/{NS}/configmaps"
    name = f"subres-dry-{method.lower()}"
    if method == "POST":
        status, out = await module_api.post(f"{cms}?{query}", {"metadata": {"name": name}})
        kind = "CreateOptions"
    else:
        status, created = await module_api.post(cms, {"metadata": {"name": name}})
        assert status == 201, created
        status, out = await module_api.delete(f"{cms}/{name}?{query}")
        kind = "DeleteOptions"
    assert (status, out["reason"], out["details"]) == (422, "Invalid", {
        "group": "meta.k8s.io", "kind": kind,
        "causes": [{"reason": "FieldValueNotSupported", "field": "dryRun",
                    "message": 'Unsupported value: []string{"All", "Foo"}: supported values: '
                               '"All"'}]}), out
    status, _ = await module_api.get(f"{cms}/{name}")
    assert status == (404 if method == "POST" else 200)
    await module_api.delete(f"{cms}/{name}")
    # repeated All is still a dry run
    status, out = await module_api.post(f"{cms}?dryRun=All&dryRun=All",
                                        {"metadata": {"name": name}})
    assert status == 201 and "resourceVersion" not in out["metadata"], out
    assert (await module_api.get(f"{cms}/{name}"))[0] == 404


@pytest.mark.parametrize("method", ["POST", "DELETE", "DELETECOLLECTION"])
async def test_an_empty_dry_run_is_refused_by_every_verb(module_api: API, method: str) -> None:
    """Rule: ``?dryRun=`` is the list ``[""]`` for create and delete options alike (the
    generated Convert_url_Values_To_v1_DeleteOptions keeps every value; apiserver
    pkg/endpoints/handlers/delete.go decodes the query when there is no body), which
    ValidateDryRun refuses; nothing is deleted. Source: apimachinery pkg/apis/meta/v1/
    validation/validation.go (ValidateDeleteOptions, ValidateDryRun)."""
    cms = f"/api/v1/namespaces/{NS}/configmaps"
    name = f"subres-empty-dry-{method.lower()}"
    status, created = await module_api.post(cms, {"metadata": {"name": name}})
    assert status == 201, created
    try:
        path = {"POST": cms, "DELETE": f"{cms}/{name}",
                "DELETECOLLECTION": f"{cms}"}[method]
        verb = "DELETE" if method == "DELETECOLLECTION" else method
        body = {"metadata": {"name": f"{name}-new"}} if method == "POST" else None
        status, out = await module_api.request(verb, f"{path}?dryRun=", body)
        kind = "CreateOptions" if method == "POST" else "DeleteOptions"
        assert (status, out["details"]) == (422, {
            "group": "meta.k8s.io", "kind": kind,
            "causes": [{"reason": "FieldValueNotSupported", "field": "dryRun",
                        "message": 'Unsupported value: []string{""}: supported values: '
                                   '"All"'}]}), out
        assert (await module_api.get(f"{cms}/{name}"))[0] == 200
    finally:
        await module_api.delete(f"{cms}/{name}")
