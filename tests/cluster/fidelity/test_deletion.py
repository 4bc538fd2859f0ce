"""Deletion: DeleteOptions (body or query), preconditions, grace periods, deletecollection,
foreground and orphan deletion of custom resources.

Each test is one rule of kube-apiserver 1.32, read from the source it cites.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from tests.cluster.conftest import API
from tests.waiting import wait_for

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
CRS = "/apis/example.com/v1/namespaces/default/widgets"


def _failure(code: int, reason: str, message: str, details: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details, "code": code}


def _server_error(message: str) -> dict[str, Any]:
    """What ErrorToAPIStatus makes of an error that is no APIStatus: 500, no reason."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "code": 500}


async def _widgets(api: API) -> None:
    status, out = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True}}}]}})
    assert status == 201, out

    async def served() -> bool:
        return (await api.get(CRS))[0] == 200

    await wait_for(served)


async def _widget(api: API, name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [{
            "apiVersion": "example.com/v1", "kind": "Widget", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}]
    status, out = await api.post(CRS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                       "metadata": meta})
    assert status == 201, out
    assert isinstance(out, dict)
    return out


def _scheduled_pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}}


# -- preconditions -------------------------------------------------------------------------

async def test_uid_precondition_failure_names_the_kind(api: API) -> None:
    """rest.BeforeDelete checks DeleteOptions.preconditions against the object read, before
    the storage does: errors.NewConflict(GroupResource{gvk.Group, gvk.Kind}, ...) — the Kind
    where other conflicts name the resource (staging/src/k8s.io/apiserver/pkg/registry/rest/
    delete.go)."""
    _, pod = await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, out = await api.delete(f"{NS}/pods/p", {"preconditions": {"uid": "other"}})
    assert (status, out) == (409, _failure(409, "Conflict", (
        'Operation cannot be fulfilled on Pod "p": the UID in the precondition (other) does not '
        f"match the UID in record ({pod['metadata']['uid']}). The object might have been "
        "deleted and then recreated"), {"name": "p", "kind": "Pod"}))


async def test_resource_version_precondition_failure_names_kind_and_group(api: API) -> None:
    """rest.BeforeDelete's resourceVersion precondition: the Kind qualified by its group
    (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go)."""
    labels = {"app": "d"}
    _, dep = await api.post(f"{APPS}/deployments", {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    status, out = await api.delete(f"{APPS}/deployments/d",
                                   {"preconditions": {"resourceVersion": "1"}})
    assert (status, out) == (409, _failure(409, "Conflict", (
        'Operation cannot be fulfilled on Deployment.apps "d": the ResourceVersion in the '
        f"precondition (1) does not match the ResourceVersion in record "
        f"({dep['metadata']['resourceVersion']}). The object might have been modified"),
        {"name": "d", "group": "apps", "kind": "Deployment"}))
    assert (await api.get(f"{APPS}/deployments/d"))[0] == 200


# -- grace periods -------------------------------------------------------------------------

async def test_grace_period_zero_deletes_a_scheduled_pod_at_once(api: API) -> None:
    """gracePeriodSeconds=0 is a force delete: podStrategy.CheckGracefulDelete takes the
    option's 0 even for a pod on a node, and the store deletes at once once the grace period
    is 0, answering with the deleted pod (pkg/registry/core/pod/strategy.go, store.go
    Delete: deleteImmediately, ReturnDeletedObject)."""
    await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, out = await api.delete(f"{NS}/pods/p", {"gracePeriodSeconds": 0})
    assert status == 200, out
    assert out["kind"] == "Pod"
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (await api.get(f"{NS}/pods/p"))[0] == 404


async def test_grace_period_defaults_to_the_pods_termination_grace_period(api: API) -> None:
    """Without gracePeriodSeconds a scheduled pod gets its spec.terminationGracePeriodSeconds
    (defaulted to 30) and stays, marked (pkg/registry/core/pod/strategy.go
    CheckGracefulDelete)."""
    await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, out = await api.delete(f"{NS}/pods/p")
    assert status == 200, out
    assert out["metadata"]["deletionGracePeriodSeconds"] == 30
    assert (await api.get(f"{NS}/pods/p"))[0] == 200


async def test_a_negative_grace_period_is_one_second(api: API) -> None:
    """rest.BeforeDelete: "Negative values will be treated as the value `1s` on the delete
    path" (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go)."""
    await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, out = await api.delete(f"{NS}/pods/p", {"gracePeriodSeconds": -5})
    assert status == 200, out
    assert out["metadata"]["deletionGracePeriodSeconds"] == 1


# -- DeleteOptions in the body or the query ------------------------------------------------

async def test_a_body_makes_the_query_unread(api: API) -> None:
    """handlers/delete.go reads the query's DeleteOptions only when there is no body: with
    a body, ?dryRun=All is not seen and the object goes
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go DeleteResource)."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "cm"}})
    status, out = await api.delete(f"{NS}/configmaps/cm?dryRun=All", {"kind": "DeleteOptions"})
    assert status == 200, out
    assert (await api.get(f"{NS}/configmaps/cm"))[0] == 404
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "cm"}})
    status, out = await api.delete(f"{NS}/configmaps/cm?dryRun=All")
    assert status == 200, out
    assert (await api.get(f"{NS}/configmaps/cm"))[0] == 200


@pytest.mark.parametrize("api_version", ["v1", "apps/v1", "meta.k8s.io/v1", "example.com/v9"])
async def test_delete_options_of_any_api_version_are_taken(api: API, api_version: str) -> None:
    """DeleteOptions is an unversioned kind of the meta internal-version scheme
    (AddUnversionedTypes): a body of kind DeleteOptions decodes whatever its apiVersion, so a
    missing object is then the plain 404 (k8s.io/apimachinery/pkg/apis/meta/internalversion/
    register.go, runtime.Scheme.New)."""
    status, out = await api.delete(f"{NS}/configmaps/nothere",
                                   {"kind": "DeleteOptions", "apiVersion": api_version})
    assert (status, out) == (404, _failure(404, "NotFound", 'configmaps "nothere" not found',
                                           {"name": "nothere", "kind": "configmaps"}))


@pytest.mark.parametrize(("body", "message"), [
    ({"kind": "Pod", "apiVersion": "v1"},
     'no kind "Pod" is registered for version "v1" in scheme '
     '"pkg/apis/meta/internalversion/scheme/register.go:27"'),
    ({"kind": "Foo"},
     'no kind "Foo" is registered for version "meta.k8s.io/v1" in scheme '
     '"pkg/apis/meta/internalversion/scheme/register.go:27"'),
    ({"kind": "Status", "apiVersion": "v1"},
     "converting (v1.Status) to (v1.DeleteOptions): unknown conversion"),
    ({"gracePeriodSeconds": "5"},
     "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of "
     "type int64"),
])
async def test_a_body_that_is_no_delete_options_is_the_decoders_500(
        api: API, body: dict[str, Any], message: str) -> None:
    """handlers/delete.go decodes the body before the object is looked up and hands a decode
    error to scope.err as it is: not an APIStatus, so ErrorToAPIStatus makes it a 500 with
    no reason (1.32; kubernetes/kubernetes#133358 made it a 400 in 1.35). The object, here
    missing, is never read (handlers/delete.go, handlers/responsewriters/status.go)."""
    status, out = await api.delete(f"{NS}/configmaps/nothere", body)
    assert (status, out) == (500, _server_error(message))


async def test_invalid_delete_options_list_every_cause_in_validation_order(api: API) -> None:
    """metav1 validation.ValidateDeleteOptions: orphanDependents with a policy, an unknown
    policy (its supported values include "nil"), an unknown dryRun value (Go's %#v of the
    slice), in that order, as errors.NewInvalid(meta.k8s.io DeleteOptions, "")
    (staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go)."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "cm"}})
    status, out = await api.delete(f"{NS}/configmaps/cm", {
        "orphanDependents": True, "propagationPolicy": "Sideways", "dryRun": ["All", "Some"]})
    causes = [
        {"reason": "FieldValueInvalid", "field": "propagationPolicy",
         "message": 'Invalid value: "Sideways": orphanDependents and deletionPropagation '
                    "cannot be both set"},
        {"reason": "FieldValueNotSupported", "field": "propagationPolicy",
         "message": 'Unsupported value: "Sideways": supported values: "Foreground", '
                    '"Background", "Orphan", "nil"'},
        {"reason": "FieldValueNotSupported", "field": "dryRun",
         "message": 'Unsupported value: []string{"All", "Some"}: supported values: "All"'}]
    message = 'DeleteOptions.meta.k8s.io "" is invalid: [' + ", ".join(
        f"{c['field']}: {c['message']}" for c in causes) + "]"
    assert (status, out) == (422, _failure(422, "Invalid", message, {
        "group": "meta.k8s.io", "kind": "DeleteOptions", "causes": causes}))


# -- deletecollection ----------------------------------------------------------------------

async def test_deletecollection_answers_the_list_as_read_before_deleting(api: API) -> None:
    """store.go DeleteCollection lists (with the request's selectors), deletes each item as
    by its own Delete, and answers the list as it was read: an item kept by a finalizer is
    in it without the deletionTimestamp its Delete gave it
    (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go)."""
    _, a = await api.post(f"{NS}/configmaps", {"metadata": {"name": "a", "labels": {"x": "1"}}})
    _, b = await api.post(f"{NS}/configmaps", {"metadata": {
        "name": "b", "labels": {"x": "1"}, "finalizers": ["example.com/keep"]}})
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "c"}})
    status, out = await api.delete(f"{NS}/configmaps?labelSelector=x%3D1")
    assert status == 200, out
    assert out["kind"] == "ConfigMapList"
    strip = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in (a, b)]
    assert out["items"] == strip
    assert (await api.get(f"{NS}/configmaps/a"))[0] == 404
    _, kept = await api.get(f"{NS}/configmaps/b")
    assert "deletionTimestamp" in kept["metadata"]
    assert (await api.get(f"{NS}/configmaps/c"))[0] == 200


async def test_deletecollection_stops_at_the_first_failed_precondition(api: API) -> None:
    """Each item's Delete gets a copy of the same DeleteOptions; a uid precondition fits at
    most one item, and the first other error ends DeleteCollection as its answer
    (store.go DeleteCollection, rest.BeforeDelete)."""
    _, a = await api.post(f"{NS}/configmaps", {"metadata": {"name": "a"}})
    _, b = await api.post(f"{NS}/configmaps", {"metadata": {"name": "b"}})
    status, out = await api.delete(f"{NS}/configmaps",
                                   {"preconditions": {"uid": a["metadata"]["uid"]}})
    assert (status, out) == (409, _failure(409, "Conflict", (
        f'Operation cannot be fulfilled on ConfigMap "b": the UID in the precondition '
        f"({a['metadata']['uid']}) does not match the UID in record ({b['metadata']['uid']}). "
        "The object might have been deleted and then recreated"),
        {"name": "b", "kind": "ConfigMap"}))
    assert (await api.get(f"{NS}/configmaps/a"))[0] == 404


async def test_deletecollection_with_orphan_policy_keeps_items_for_the_collector(
        api: API) -> None:
    """propagationPolicy=Orphan on deletecollection is each item's: the orphan finalizer is
    added and the garbage collector removes it (and the item) once dependents are orphaned
    (store.go shouldOrphanDependents, updateForGracefulDeletionAndFinalizers)."""
    await _widgets(api)
    owner = await _widget(api, "owner")
    await _widget(api, "dep", owner)
    status, out = await api.delete(f"{CRS}?fieldSelector=metadata.name%3Downer",
                                   {"propagationPolicy": "Orphan"})
    assert status == 200, out
    assert [i["metadata"]["name"] for i in out["items"]] == ["owner"]

    async def owner_gone() -> bool:
        return (await api.get(f"{CRS}/owner"))[0] == 404

    await wait_for(owner_gone)
    _, dep = await api.get(f"{CRS}/dep")
    assert "ownerReferences" not in dep["metadata"]


# -- foreground deletion of custom resources ----------------------------------------------

async def test_foreground_deletion_of_a_custom_resource_waits_for_its_dependents(
        api: API) -> None:
    """propagationPolicy=Foreground: the owner gets a deletionTimestamp and the
    foregroundDeletion finalizer and is answered as it now is; the garbage collector deletes
    the dependents, then removes the finalizer, which deletes the owner (store.go
    shouldDeleteDependents, pkg/controller/garbagecollector/garbagecollector.go)."""
    await _widgets(api)
    owner = await _widget(api, "owner")
    await _widget(api, "dep", owner)
    status, out = await api.delete(f"{CRS}/owner", {"propagationPolicy": "Foreground"})
    assert status == 200, out
    assert out["kind"] == "Widget"
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert "deletionTimestamp" in out["metadata"]

    async def gone(name: str) -> bool:
        return (await api.get(f"{CRS}/{name}"))[0] == 404

    await wait_for(lambda: gone("dep"))
    await wait_for(lambda: gone("owner"))


# -- what a deletion changes and answers -----------------------------------------------------

def _rfc3339(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


async def test_a_shorter_grace_period_moves_the_deadline_from_the_old_one(api: API) -> None:
    """Rule: a second DELETE of a pod in its grace period may only shorten it; the new
    deadline is the old deletionTimestamp minus the old period plus the new one (not now
    plus the new period), and a longer period changes nothing.
    Source: staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go (BeforeDelete, "only a
    shorter grace period may be provided"), reached through the generic store's
    updateForGracefulDeletionAndFinalizers (pkg/registry/generic/registry/store.go) and
    pkg/registry/core/pod/strategy.go (CheckGracefulDelete)."""
    await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, first = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=30")
    assert status == 200, first
    deadline = _rfc3339(first["metadata"]["deletionTimestamp"])
    # let the wall clock leave the second the deletion started in, so that "now + 10" and
    # "old deadline - 30 + 10" differ
    await wait_for(lambda: datetime.now(UTC) >= deadline - timedelta(seconds=28))
    status, second = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=10")
    assert status == 200, second
    assert (second["metadata"]["deletionGracePeriodSeconds"],
            _rfc3339(second["metadata"]["deletionTimestamp"])) == (
        10, deadline - timedelta(seconds=20))
    status, third = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=20")
    assert (status, third["metadata"]["deletionTimestamp"],
            third["metadata"]["deletionGracePeriodSeconds"]) == (
        200, second["metadata"]["deletionTimestamp"], 10)


async def test_a_terminating_pod_shortened_to_no_grace_is_written_then_deleted(
        api: API) -> None:
    """Rule: a DELETE with gracePeriodSeconds=0 of a pod already in its grace period is a
    shortening like any other: the pod is first written with no grace left and its deadline
    moved back by the old period (a MODIFIED event), then deleted, and answered as written.
    Source: staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go (BeforeDelete: "only a
    shorter grace period may be provided", graceful = true), pkg/registry/generic/registry/
    store.go (updateForGracefulDeletionAndFinalizers: GuaranteedUpdate, then lastGraceful 0
    -> deleteImmediately)."""
    status, created = await api.post(f"{NS}/pods", _scheduled_pod("p"))
    status, first = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=30")
    assert status == 200, first
    deadline = _rfc3339(first["metadata"]["deletionTimestamp"])
    status, last = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=0")
    assert (status, last["metadata"]["deletionGracePeriodSeconds"],
            _rfc3339(last["metadata"]["deletionTimestamp"])) == (
        200, 0, deadline - timedelta(seconds=30))
    assert (await api.get(f"{NS}/pods/p"))[0] == 404
    watch = (f"{api.cluster.url}{NS}/pods?watch=1&timeoutSeconds=1&resourceVersion="
             f"{created['metadata']['resourceVersion']}")
    async with api.session.get(watch, ssl=api.ssl) as resp:
        events = [orjson.loads(line) for line in (await resp.text()).splitlines()]
    assert [(e["type"], e["object"]["metadata"]["deletionGracePeriodSeconds"])
            for e in events] == [("MODIFIED", 30), ("MODIFIED", 0), ("DELETED", 0)]


async def test_a_terminating_pod_deleted_without_a_grace_period_stays_pending(
        api: API) -> None:
    """Rule: a DELETE naming no grace period leaves a pod already in its grace period as it
    is, whatever its spec.terminationGracePeriodSeconds: CheckGracefulDelete, which would
    read it, is not asked again for an object being deleted.
    Source: staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go (BeforeDelete: "graceful
    deletion is pending, do nothing")."""
    pod = _scheduled_pod("p")
    pod["spec"]["terminationGracePeriodSeconds"] = 10
    await api.post(f"{NS}/pods", pod)
    status, first = await api.delete(f"{NS}/pods/p?gracePeriodSeconds=30")
    assert status == 200, first
    status, again = await api.delete(f"{NS}/pods/p")
    assert (status, again["metadata"]) == (200, first["metadata"])


async def test_deletion_of_a_custom_resource_bumps_its_generation_once(api: API) -> None:
    """Rule: the deletion that first sets a deletionTimestamp on an object with a generation
    bumps it; metadata changes after that (or a second DELETE) do not, a spec change does.
    Source: pkg/registry/generic/registry/store.go (markAsDeleting), apiextensions-apiserver
    pkg/registry/customresource/strategy.go (PrepareForUpdate: only changes outside metadata
    increment the generation)."""
    await _widgets(api)
    status, _ = await api.post(CRS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                     "metadata": {"name": "w", "finalizers": ["x.io/f"]},
                                     "spec": {"a": 1}})
    assert status == 201
    status, out = await api.delete(f"{CRS}/w")
    assert (status, out["metadata"]["generation"]) == (200, 2)
    merge = "application/merge-patch+json"
    status, out = await api.patch(f"{CRS}/w", {"metadata": {"labels": {"x": "y"}}}, merge)
    assert (status, out["metadata"]["generation"]) == (200, 2)
    status, out = await api.delete(f"{CRS}/w")
    assert (status, out["metadata"]["generation"]) == (200, 2)
    status, out = await api.patch(f"{CRS}/w", {"spec": {"a": 2}}, merge)
    assert (status, out["metadata"]["generation"]) == (200, 3)


@pytest.mark.parametrize("where", ["body", "query"])
async def test_orphan_dependents_false_is_background_answered_202_when_kept(
        api: API, where: str) -> None:
    """Rule: an explicit orphanDependents overrides the propagation policy and the finalizers
    already there, and false asks for neither the orphan nor the foregroundDeletion finalizer:
    an object without finalizers goes at once (200, the Status), one that keeps a finalizer of
    its own stays and the handler answers 202 with it.
    Source: staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go
    (shouldDeleteDependents: "if options.OrphanDependents != nil { return false }",
    shouldOrphanDependents), pkg/endpoints/handlers/delete.go ("status =
    http.StatusAccepted" when !wasDeleted and OrphanDependents is false)."""
    await _widgets(api)
    plain = await _widget(api, "w")
    status, out = await api.post(CRS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                       "metadata": {"name": "held",
                                                    "finalizers": ["example.com/hold"]}})
    assert status == 201, out

    async def delete(name: str) -> tuple[int, Any]:
        if where == "body":
            return await api.delete(f"{CRS}/{name}", {"kind": "DeleteOptions",
                                                      "apiVersion": "v1",
                                                      "orphanDependents": False})
        return await api.delete(f"{CRS}/{name}?orphanDependents=false")

    assert await delete("w") == (200, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "w", "group": "example.com", "kind": "widgets",
                    "uid": plain["metadata"]["uid"]}})
    status, out = await delete("held")
    assert (status, out["kind"], out["metadata"]["finalizers"]) == (
        202, "Widget", ["example.com/hold"])


@pytest.mark.parametrize(("value", "problem"), [
    ("abc", "invalid syntax"), ("1.5", "invalid syntax"), ("", "invalid syntax"),
    ("99999999999999999999", "value out of range")])
async def test_a_bad_grace_period_in_the_query_is_the_parsers_400(
        api: API, value: str, problem: str) -> None:
    """Rule: query parameters become DeleteOptions through the parameter codec, whose
    strconv.ParseInt error is the BadRequest's message.
    Source: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go (DecodeParameters,
    errors.NewBadRequest(err.Error())), k8s.io/apimachinery pkg/runtime/conversion.go
    (Convert_Slice_string_To_Pointer_int64)."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "c"}})
    status, out = await api.delete(f"{NS}/configmaps/c?gracePeriodSeconds={value}")
    assert (status, out) == (400, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'strconv.ParseInt: parsing "{value}": {problem}', "reason": "BadRequest",
        "code": 400})


async def test_a_patch_changing_the_uid_is_invalid(api: API) -> None:
    """Rule: a PATCH carries no uid precondition, so a uid it changes reaches the common
    metadata validation of the update (field is immutable, listed by both the common and the
    kind's checks); an apply naming a uid for an object that does not exist is a Conflict.
    Source: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
    (DefaultUpdatedObjectInfo(nil, ...), applyPatch: "uid mismatch"),
    pkg/registry/rest/update.go (BeforeUpdate, validateCommonFields)."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "c"}})
    status, out = await api.patch(f"{NS}/configmaps/c", {"metadata": {"uid": "other"}},
                                  "application/merge-patch+json")
    cause = {"reason": "FieldValueInvalid", "message": 'Invalid value: "other": field is '
             "immutable", "field": "metadata.uid"}
    assert (status, out) == (422, _failure(
        422, "Invalid", 'ConfigMap "c" is invalid: metadata.uid: Invalid value: "other": '
        "field is immutable", {"name": "c", "kind": "ConfigMap", "causes": [cause, cause]}))
    status, out = await api.patch(
        f"{NS}/configmaps/absent?fieldManager=m", None, "application/apply-patch+yaml",
        raw=b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: absent\n  uid: u1\n")
    assert (status, out) == (409, _failure(
        409, "Conflict", 'Operation cannot be fulfilled on configmaps "absent": uid '
        "mismatch: the provided object specified uid u1, and no existing object was found",
        {"name": "absent", "kind": "configmaps"}))


# -- the deletion fields on update ---------------------------------------------------------

_MERGE = "application/merge-patch+json"


def _immutable(name: str, field: str, shown: str) -> dict[str, Any]:
    """ValidateImmutableField's cause, twice: rest.BeforeUpdate's validateCommonFields and the
    strategy's ValidateObjectMetaUpdate both run ValidateObjectMetaAccessorUpdate (the
    aggregated message keeps one)."""
    cause = {"reason": "FieldValueInvalid", "message": f"Invalid value: {shown}: field is "
             "immutable", "field": f"metadata.{field}"}
    return _failure(422, "Invalid", f'ConfigMap "{name}" is invalid: metadata.{field}: '
                    f"Invalid value: {shown}: field is immutable",
                    {"name": name, "kind": "ConfigMap", "causes": [cause, cause]})


async def test_an_update_cannot_start_a_deletion(api: API) -> None:
    """rest.BeforeUpdate keeps a stored deletionTimestamp only; one an update sets on a live
    object, or a grace period, meets ValidateImmutableField (staging/src/k8s.io/apiserver/pkg/
    registry/rest/update.go, apimachinery/pkg/api/validation/objectmeta.go
    ValidateObjectMetaAccessorUpdate). A metav1.Time is printed by its String."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "live"}})
    status, out = await api.patch(f"{NS}/configmaps/live", {
        "metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}}, _MERGE)
    assert (status, out) == (422, _immutable(
        "live", "deletionTimestamp", "2020-01-01 00:00:00 +0000 UTC"))
    status, out = await api.patch(f"{NS}/configmaps/live", {
        "metadata": {"deletionGracePeriodSeconds": 5}}, _MERGE)
    assert (status, out) == (422, _immutable("live", "deletionGracePeriodSeconds", "5"))
    _, stored = await api.get(f"{NS}/configmaps/live")
    assert "deletionTimestamp" not in stored["metadata"]


async def test_an_update_cannot_end_or_change_a_deletion(api: API) -> None:
    """A deleting object's deletionTimestamp and grace period are put back when an update
    drops them (a no-op: the same resourceVersion); another grace period is immutable."""
    await api.post(f"{NS}/configmaps", {"metadata": {"name": "held",
                                                     "finalizers": ["example.com/x"]}})
    _, deleting = await api.delete(f"{NS}/configmaps/held")
    status, out = await api.patch(f"{NS}/configmaps/held", {"metadata": {
        "deletionTimestamp": None, "deletionGracePeriodSeconds": None}}, _MERGE)
    assert status == 200, out
    assert out["metadata"] == deleting["metadata"]
    status, out = await api.patch(f"{NS}/configmaps/held", {
        "metadata": {"deletionGracePeriodSeconds": 30}}, _MERGE)
    assert (status, out) == (422, _immutable("held", "deletionGracePeriodSeconds", "30"))
    await api.patch(f"{NS}/configmaps/held", {"metadata": {"finalizers": None}}, _MERGE)
