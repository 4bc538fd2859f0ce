"""Deletion audited against kube-apiserver 1.32: each kind's default garbage-collection
policy, the Job registry's warning, and the namespace registry's own DELETE.

Each test is one rule, read from the source it cites; the server is the module's
(``module_api``), and each test works in a namespace of its own that it deletes.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMESPACES = "/api/v1/namespaces"
FINALIZE_NOTHING: dict[str, Any] = {"spec": {"finalizers": []}}
JOB_WARNING = ('299 - "child pods are preserved by default when jobs are deleted; set '
               'propagationPolicy=Background to remove them or set propagationPolicy=Orphan '
               'to suppress this warning"')


@pytest_asyncio.fixture(loop_scope="module")
async def ns(module_api: API) -> AsyncIterator[str]:
    name = f"del-{uuid.uuid4().hex[:8]}"
    status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
    assert status == 201, out
    yield name
    await module_api.delete(f"{NAMESPACES}/{name}")


async def _delete_with_warnings(api: API, path: str,
                                body: Any = None) -> tuple[int, Any, list[str]]:
    """A DELETE; (status, JSON answer, its Warning headers)."""
    data = orjson.dumps(body) if body is not None else None
    async with api.session.request("DELETE", api.cluster.url + path, data=data,
                                   headers={"Content-Type": "application/json"},
                                   ssl=api.ssl) as resp:
        return resp.status, orjson.loads(await resp.read()), resp.headers.getall("Warning", [])


async def _write_with_warnings(api: API, method: str, path: str, body: Any,
                               content_type: str = "application/json",
                               ) -> tuple[int, Any, list[str]]:
    """A write; (status, JSON answer, its Warning headers)."""
    async with api.session.request(method, api.cluster.url + path, data=orjson.dumps(body),
                                   headers={"Content-Type": content_type},
                                   ssl=api.ssl) as resp:
        return resp.status, orjson.loads(await resp.read()), resp.headers.getall("Warning", [])


async def _gone(api: API, path: str) -> None:
    async def absent() -> bool:
        return (await api.get(path))[0] == 404

    await wait_for(absent)


def _owned_pod(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
        "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}


async def _orphaned(api: API, pod_path: str) -> dict[str, Any]:
    async def without_owner() -> dict[str, Any] | None:
        status, pod = await api.get(pod_path)
        assert status == 200, pod
        return None if pod["metadata"].get("ownerReferences") else pod

    result: dict[str, Any] = await wait_for(without_owner)
    return result


# -- a kind's default garbage-collection policy ------------------------------------------

async def test_replication_controller_v1_delete_orphans_its_pods_by_default(
        module_api: API, ns: str) -> None:
    """rcStrategy.DefaultGarbageCollectionPolicy is OrphanDependents for core v1 ("for back
    compatibility", pkg/registry/core/replicationcontroller/strategy.go), so a DELETE with no
    options gets the orphan finalizer (store.go shouldOrphanDependents: the default policy
    last) and answers with the marked object; the garbage collector then strips the pods'
    ownerReferences and removes the finalizer."""
    base = f"{NAMESPACES}/{ns}"
    status, rc = await module_api.post(f"{base}/replicationcontrollers", {
        "metadata": {"name": "rc"}, "spec": {"replicas": 0, "selector": {"app": "rc"},
                                             "template": {"metadata": {"labels": {"app": "rc"}},
                                                          "spec": {"containers": [
                                                              {"name": "c", "image": "i"}]}}}})
    assert status == 201, rc
    status, pod = await module_api.post(f"{base}/pods", _owned_pod("p", rc))
    assert status == 201, pod
    status, out = await module_api.delete(f"{base}/replicationcontrollers/rc")
    assert status == 200, out
    assert out["kind"] == "ReplicationController"
    assert out["metadata"]["finalizers"] == ["orphan"]
    assert out["metadata"]["deletionTimestamp"]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    await _gone(module_api, f"{base}/replicationcontrollers/rc")
    await _orphaned(module_api, f"{base}/pods/p")


async def test_job_v1_delete_orphans_by_default_and_warns(module_api: API, ns: str) -> None:
    """jobStrategy.DefaultGarbageCollectionPolicy is OrphanDependents for batch/v1
    (pkg/registry/batch/job/strategy.go), and the Job registry's Delete and DeleteCollection
    warn deleteOptionWarnings when the request names neither propagationPolicy nor
    orphanDependents (pkg/registry/batch/job/storage/storage.go); an explicit policy is not
    warned about."""
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
    for name in ("j1", "j2", "j3"):
        status, job = await module_api.post(jobs, {"metadata": {"name": name}, "spec": {
            "suspend": True, "template": template}})
        assert status == 201, job
    status, pod = await module_api.post(f"{NAMESPACES}/{ns}/pods",
                                        _owned_pod("p", {**job, "apiVersion": "batch/v1",
                                                         "kind": "Job"}))
    assert status == 201, pod

    status, out, warnings = await _delete_with_warnings(module_api, f"{jobs}/j3")
    assert (status, warnings) == (200, [JOB_WARNING]), out
    assert out["kind"] == "Job"
    assert out["metadata"]["finalizers"] == ["orphan"]
    await _gone(module_api, f"{jobs}/j3")
    await _orphaned(module_api, f"{NAMESPACES}/{ns}/pods/p")

    status, out, warnings = await _delete_with_warnings(
        module_api, f"{jobs}/j2", {"propagationPolicy": "Background"})
    assert (status, warnings, out["kind"]) == (200, [], "Status"), out

    status, out, warnings = await _delete_with_warnings(module_api, jobs)
    assert (status, warnings) == (200, [JOB_WARNING]), out
    assert [item["metadata"]["name"] for item in out["items"]] == ["j1"]


async def test_job_delete_warning_comes_with_the_error_answers_too(
        module_api: API, ns: str) -> None:
    """The Job registry's Delete and DeleteCollection record deleteOptionWarnings before they
    call the store (pkg/registry/batch/job/storage/storage.go), and the warning recorder
    writes the header as it is recorded (staging/src/k8s.io/apiserver/pkg/endpoints/filters/
    warning.go): a 404 or a failed precondition's 409 carries it as well; a malformed body,
    refused before the registry is called (handlers/delete.go), does not."""
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    status, out, warnings = await _delete_with_warnings(module_api, f"{jobs}/absent")
    assert (status, out["reason"], warnings) == (404, "NotFound", [JOB_WARNING]), out
    status, job = await module_api.post(jobs, {"metadata": {"name": "j"}, "spec": {
        "suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "i"}]}}}})
    assert status == 201, job
    status, out, warnings = await _delete_with_warnings(
        module_api, f"{jobs}/j", {"preconditions": {"uid": "not-the-uid"}})
    assert (status, out["reason"], warnings) == (409, "Conflict", [JOB_WARNING]), out
    status, out, warnings = await _delete_with_warnings(
        module_api, f"{jobs}/j", {"propagationPolicy": "Sideways"})
    assert (status, warnings) == (422, []), out
    status, out, warnings = await _delete_with_warnings(
        module_api, f"{jobs}/absent", {"propagationPolicy": "Background"})
    assert (status, warnings) == (404, []), out


@pytest.mark.parametrize("path", ["/api/v1/namespaces/{ns}/events",
                                  "/apis/events.k8s.io/v1/namespaces/{ns}/events"])
@pytest.mark.parametrize("policy", ["Orphan", "Foreground"])
async def test_event_deletion_has_no_garbage_collection_finalizers(
        module_api: API, ns: str, path: str, policy: str) -> None:
    """eventStrategy.DefaultGarbageCollectionPolicy is Unsupported
    (pkg/registry/core/event/strategy.go; events.k8s.io Events are served by that store), so
    shouldOrphanDependents and shouldDeleteDependents are false whatever the options
    (store.go): no finalizer is added and the Event is deleted at once."""
    events = path.format(ns=ns)
    body: dict[str, Any] = {"metadata": {"name": "e"}, "reason": "R", "note": "n",
                            "action": "A", "reportingController": "example.com/c",
                            "reportingInstance": "i", "type": "Normal",
                            "eventTime": "2024-01-01T00:00:00.000000Z",
                            "regarding": {"kind": "Pod", "name": "p", "namespace": ns}}
    if path.startswith("/api/"):
        body = {"metadata": {"name": "e"}, "reason": "R", "message": "m",
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns}}
    status, event = await module_api.post(events, body)
    assert status == 201, event
    status, out = await module_api.delete(f"{events}/e?propagationPolicy={policy}")
    assert status == 200, out
    assert (out["kind"], out["status"], out["details"]["uid"]) == (
        "Status", "Success", event["metadata"]["uid"])
    assert (await module_api.get(f"{events}/e"))[0] == 404


# -- the namespace registry's DELETE -----------------------------------------------------

async def test_first_namespace_delete_marks_even_with_no_spec_finalizers(
        module_api: API) -> None:
    """The namespace registry's Delete marks a namespace on its first DELETE whatever its
    spec.finalizers (deletionTimestamp, phase Terminating), and goes through the generic
    store only once it is terminating with none left; that store has ReturnDeletedObject,
    so the answer is the Namespace itself (pkg/registry/core/namespace/storage/storage.go
    REST.Delete, NewREST)."""
    name = f"del-{uuid.uuid4().hex[:8]}"
    path = f"{NAMESPACES}/{name}"
    status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
    assert status == 201, out
    status, out = await module_api.put(f"{path}/finalize",
                                       {"metadata": {"name": name}, **FINALIZE_NOTHING})
    assert (status, out["spec"]) == (200, {}), out

    status, marked = await module_api.delete(path)
    assert status == 200, marked
    assert marked["kind"] == "Namespace"
    assert marked["metadata"]["deletionTimestamp"]
    assert "deletionGracePeriodSeconds" not in marked["metadata"]
    assert marked["status"] == {"phase": "Terminating"}
    status, out = await module_api.get(path)
    assert (status, out["metadata"].get("deletionTimestamp")) == (
        200, marked["metadata"]["deletionTimestamp"]), out

    status, deleted = await module_api.delete(path)
    assert status == 200, deleted
    assert (deleted["kind"], deleted["metadata"]["uid"]) == ("Namespace",
                                                             marked["metadata"]["uid"])
    assert (await module_api.get(path))[0] == 404


async def test_namespace_delete_with_orphan_dependents_false_asks_for_foreground(
        module_api: API) -> None:
    """shouldHaveDeleteDependentsFinalizer: the namespace registry, unlike the generic
    store, takes orphanDependents=false as a foreground deletion (the foregroundDeletion
    finalizer), and the handler answers 202 for an object left in place with
    orphanDependents=false (pkg/registry/core/namespace/storage/storage.go,
    k8s.io/apiserver pkg/endpoints/handlers/delete.go)."""
    name = f"del-{uuid.uuid4().hex[:8]}"
    path = f"{NAMESPACES}/{name}"
    status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
    assert status == 201, out
    status, out = await module_api.delete(path, {"orphanDependents": False})
    assert status == 202, out
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert out["status"]["phase"] == "Terminating"
    await _gone(module_api, path)


# -- what a DELETE answers ---------------------------------------------------------------

@pytest.mark.parametrize(("resource", "body"), [
    ("serviceaccounts", {}),
    ("persistentvolumeclaims", {"spec": {"accessModes": ["ReadWriteOnce"],
                                         "resources": {"requests": {"storage": "1Gi"}}}}),
    ("persistentvolumes", {"spec": {"capacity": {"storage": "1Gi"},
                                    "accessModes": ["ReadWriteOnce"],
                                    "hostPath": {"path": "/tmp/pv"}}}),
])
async def test_registries_with_return_deleted_object_answer_the_object(
        module_api: API, ns: str, resource: str, body: dict[str, Any]) -> None:
    """ServiceAccounts, PersistentVolumes and PersistentVolumeClaims are stored with
    ReturnDeletedObject: true, so a DELETE that removes one answers with the object, not a
    Status (pkg/registry/core/{serviceaccount,persistentvolume,persistentvolumeclaim}/
    storage/storage.go; store.go finalizeDelete)."""
    base = f"/api/v1/{resource}" if resource == "persistentvolumes" else (
        f"{NAMESPACES}/{ns}/{resource}")
    name = f"gone-{uuid.uuid4().hex[:8]}"
    status, created = await module_api.post(base, {"metadata": {"name": name}, **body})
    assert status == 201, created
    status, out = await module_api.delete(f"{base}/{name}")
    assert status == 200, out
    assert (out["kind"], out["metadata"]["uid"]) == (created["kind"],
                                                     created["metadata"]["uid"])
    assert (await module_api.get(f"{base}/{name}"))[0] == 404


# -- creating over an object being deleted -----------------------------------------------

async def test_create_over_an_object_being_deleted_says_so(module_api: API, ns: str) -> None:
    """store.go Create: when the name is taken by an object with a deletionTimestamp, the
    AlreadyExists message is prefixed "object is being deleted: " (a generated name's
    conflict too); the reason and details stay AlreadyExists's."""
    base = f"{NAMESPACES}/{ns}/configmaps"
    status, out = await module_api.post(base, {"metadata": {"name": "held",
                                                             "finalizers": ["example.com/x"]}})
    assert status == 201, out
    status, out = await module_api.delete(f"{base}/held")
    assert status == 200, out
    status, out = await module_api.post(base, {"metadata": {"name": "held"}})
    assert (status, out["reason"], out["message"], out["details"]) == (
        409, "AlreadyExists", 'object is being deleted: configmaps "held" already exists',
        {"name": "held", "kind": "configmaps"}), out
    status, out = await module_api.patch(f"{base}/held", {"metadata": {"finalizers": None}},
                                         "application/merge-patch+json")
    assert status == 200, out


async def test_recreating_a_terminating_namespace_says_it_is_being_deleted(
        module_api: API) -> None:
    """A namespace held in Terminating by an object's finalizer cannot be created again:
    store.go Create's "object is being deleted: " conflict, under the namespace registry
    (pkg/registry/core/namespace/storage/storage.go)."""
    name = f"del-{uuid.uuid4().hex[:8]}"
    status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
    assert status == 201, out
    held = f"{NAMESPACES}/{name}/configmaps/held"
    status, out = await module_api.post(f"{NAMESPACES}/{name}/configmaps", {
        "metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    assert status == 201, out
    status, out = await module_api.delete(f"{NAMESPACES}/{name}")
    assert status == 200, out
    status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
    assert (status, out["reason"], out["message"]) == (
        409, "AlreadyExists", f'object is being deleted: namespaces "{name}" already exists'), out

    async def marked() -> bool:
        return bool((await module_api.get(held))[1]["metadata"].get("deletionTimestamp"))

    await wait_for(marked)
    status, out = await module_api.patch(held, {"metadata": {"finalizers": None}},
                                         "application/merge-patch+json")
    assert status == 200, out
    await _gone(module_api, f"{NAMESPACES}/{name}")


# -- a deletion already pending ----------------------------------------------------------

@pytest.mark.parametrize("query", ["propagationPolicy=Orphan",
                                   "propagationPolicy=Foreground&gracePeriodSeconds=45",
                                   "orphanDependents=true"])
async def test_pending_graceful_deletion_ignores_new_propagation_options(
        module_api: API, ns: str, query: str) -> None:
    """rest.BeforeDelete reports a pod already being deleted with grace left, which the
    request does not shorten, as gracefulPending; store.go Delete then answers the object as
    it is (finalizeDelete) — "finalizers cannot be updated via DeleteOptions if a deletion
    is already pending" (k8s.io/apiserver pkg/registry/rest/delete.go,
    pkg/registry/generic/registry/store.go)."""
    pods = f"{NAMESPACES}/{ns}/pods"
    status, out = await module_api.post(pods, {"metadata": {"name": "p"}, "spec": {
        "nodeName": "node-a", "containers": [{"name": "c", "image": "i"}]}})
    assert status == 201, out
    status, marked = await module_api.delete(f"{pods}/p")
    assert (status, marked["metadata"]["deletionGracePeriodSeconds"]) == (200, 30), marked
    status, out = await module_api.delete(f"{pods}/p?{query}")
    assert (status, out) == (200, marked)
    assert (await module_api.get(f"{pods}/p"))[1] == marked
    status, out = await module_api.delete(f"{pods}/p?gracePeriodSeconds=0")
    assert status == 200, out


# -- finalizer names on custom resources -------------------------------------------------

async def test_custom_resource_finalizers_without_a_path_draw_warnings(
        module_api: API, ns: str) -> None:
    """A custom resource's strategy warns about each finalizer a write adds (sorted, once)
    that is not a standard one and has no path: "prefer a domain-qualified finalizer name",
    "including a path (/)" when it already has a dot; such a name is still valid for a
    custom resource (apiextensions-apiserver pkg/registry/customresource/strategy.go
    generateWarningsFromObj, validator.go validateKubeFinalizerName)."""
    group = f"{ns}.example.com"
    status, out = await module_api.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
            "metadata": {"name": f"gadgets.{group}"}, "spec": {
                "group": group, "scope": "Namespaced",
                "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True}}}]}})
    assert status == 201, out
    gadgets = f"/apis/{group}/v1/namespaces/{ns}/gadgets"

    async def served() -> bool:
        return (await module_api.get(gadgets))[0] == 200

    await wait_for(served)
    try:
        status, out, warnings = await _write_with_warnings(module_api, "POST", gadgets, {
            "apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {
                "name": "g", "finalizers": ["plain", "example.com", "orphan",
                                            "example.com/ok", "plain"]}})
        assert status == 201, out
        assert warnings == [
            '299 - "metadata.finalizers: \\"example.com\\": prefer a domain-qualified '
            'finalizer name including a path (/) to avoid accidental conflicts with other '
            'finalizer writers"',
            '299 - "metadata.finalizers: \\"plain\\": prefer a domain-qualified finalizer '
            'name to avoid accidental conflicts with other finalizer writers"']
        status, out, warnings = await _write_with_warnings(
            module_api, "PATCH", f"{gadgets}/g",
            {"metadata": {"finalizers": ["plain", "other", "example.com/ok"]}},
            "application/merge-patch+json")
        assert status == 200, out
        assert warnings == [
            '299 - "metadata.finalizers: \\"other\\": prefer a domain-qualified finalizer '
            'name to avoid accidental conflicts with other finalizer writers"']
    finally:
        await module_api.patch(f"{gadgets}/g", {"metadata": {"finalizers": None}},
                               "application/merge-patch+json")
        await module_api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                f"gadgets.{group}")
