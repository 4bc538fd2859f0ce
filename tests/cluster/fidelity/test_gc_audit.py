"""The garbage collector and its neighbours checked against kube-controller-manager 1.32
(pkg/controller/garbagecollector) and kube-apiserver 1.32, over real HTTP to one server per
module; each test works in namespaces of its own."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.widgets import create_served, widget, widget_crd
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMESPACES = "/api/v1/namespaces"


@pytest_asyncio.fixture(loop_scope="module")
async def two_namespaces(module_api: API) -> AsyncIterator[tuple[str, str]]:
    names = (f"gc-a-{uuid.uuid4().hex[:6]}", f"gc-b-{uuid.uuid4().hex[:6]}")
    for name in names:
        status, out = await module_api.post(NAMESPACES, {"metadata": {"name": name}})
        assert status == 201, out
    yield names
    for name in names:
        await module_api.delete(f"{NAMESPACES}/{name}")


def _ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"]}


async def _events_about(api: API, namespace: str, name: str) -> list[dict[str, Any]]:
    status, out = await api.get(f"{NAMESPACES}/{namespace}/events"
                                f"?fieldSelector=involvedObject.name%3D{name}")
    assert status == 200, out
    items: list[dict[str, Any]] = out["items"]
    return items


async def test_owner_reference_into_another_namespace_is_warned_and_collected(
        module_api: API, two_namespaces: tuple[str, str]) -> None:
    """graph_builder.go addDependentToOwners: a namespaced dependent whose reference names
    (by uid) an owner observed in another namespace gets reportInvalidNamespaceOwnerRef's
    Warning ``OwnerRefInvalidNamespace``, "ownerRef [<objectReference>] does not exist in
    namespace %q" (graph.go objectReference.String, the reference's coordinates in the
    dependent's namespace), from the garbage-collector-controller source (client-go
    tools/record event.go makeEvent); garbagecollector.go isDangling then finds no such
    owner in the dependent's namespace and the dependent is deleted."""
    here, there = two_namespaces
    status, owner = await module_api.post(f"{NAMESPACES}/{there}/configmaps",
                                          {"metadata": {"name": "owner"}})
    assert status == 201, owner
    owner = {**owner, "kind": "ConfigMap"}
    status, dep = await module_api.post(f"{NAMESPACES}/{here}/configmaps", {
        "metadata": {"name": "dep", "ownerReferences": [_ref(owner)]}})
    assert status == 201, dep

    async def gone() -> bool:
        return (await module_api.get(f"{NAMESPACES}/{here}/configmaps/dep"))[0] == 404

    await wait_for(gone)
    events = await wait_for(lambda: _events_about(module_api, here, "dep"))
    assert len(events) == 1, events
    event = events[0]
    uid = owner["metadata"]["uid"]
    assert event["message"] == (f"ownerRef [v1/ConfigMap, namespace: {here}, name: owner, "
                                f'uid: {uid}] does not exist in namespace "{here}"')
    assert (event["type"], event["reason"], event["count"]) == (
        "Warning", "OwnerRefInvalidNamespace", 1)
    assert event["source"] == {"component": "garbage-collector-controller"}
    assert event["involvedObject"] == {"kind": "ConfigMap", "namespace": here, "name": "dep",
                                       "uid": dep["metadata"]["uid"], "apiVersion": "v1"}
    assert event["metadata"]["name"].startswith("dep.")
    assert event["firstTimestamp"] == event["lastTimestamp"]
    # the owner, in its own namespace, is untouched
    assert (await module_api.get(f"{NAMESPACES}/{there}/configmaps/owner"))[0] == 200


async def test_cluster_scoped_dependent_of_a_namespaced_owner_is_warned_and_kept(
        module_api: API, two_namespaces: tuple[str, str]) -> None:
    """The same check for a cluster-scoped dependent: its namespace is "", so the owner's
    differs (graph_builder.go addDependentToOwners); the recorder files the Event in
    "default" (client-go tools/record event.go makeEvent). isDangling then refuses to look a
    namespaced owner up for a cluster-scoped object (namespacedOwnerOfClusterScopedObjectErr)
    and the item is forgotten: the dependent stays."""
    _, there = two_namespaces
    status, owner = await module_api.post(f"{NAMESPACES}/{there}/configmaps",
                                          {"metadata": {"name": "owner2"}})
    assert status == 201, owner
    owner = {**owner, "kind": "ConfigMap"}
    name = f"gc-dep-{uuid.uuid4().hex[:6]}"
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    status, dep = await module_api.post(roles, {"metadata": {
        "name": name, "ownerReferences": [_ref(owner)]}})
    assert status == 201, dep
    events = await wait_for(lambda: _events_about(module_api, "default", name))
    uid = owner["metadata"]["uid"]
    assert [e["message"] for e in events] == [
        f'ownerRef [v1/ConfigMap, namespace: , name: owner2, uid: {uid}] does not exist in '
        'namespace ""']
    assert events[0]["involvedObject"] == {
        "kind": "ClusterRole", "name": name, "uid": dep["metadata"]["uid"],
        "apiVersion": "rbac.authorization.k8s.io/v1"}
    assert (await module_api.get(f"{roles}/{name}"))[0] == 200
    await module_api.delete(f"{roles}/{name}")


async def test_owner_in_the_same_namespace_is_not_warned_about(
        module_api: API, two_namespaces: tuple[str, str]) -> None:
    """A reference whose owner lives in the dependent's namespace is valid: no Event, and
    the dependent goes with its owner (garbagecollector.go attemptToDeleteItem)."""
    here, _ = two_namespaces
    cms = f"{NAMESPACES}/{here}/configmaps"
    status, owner = await module_api.post(cms, {"metadata": {"name": "o3"}})
    assert status == 201, owner
    owner = {**owner, "kind": "ConfigMap"}
    status, dep = await module_api.post(cms, {"metadata": {"name": "d3",
                                                           "ownerReferences": [_ref(owner)]}})
    assert status == 201, dep
    status, out = await module_api.delete(f"{cms}/o3")
    assert status == 200, out

    async def gone() -> bool:
        return (await module_api.get(f"{cms}/d3"))[0] == 404

    await wait_for(gone)
    assert await _events_about(module_api, here, "d3") == []


async def test_number_printer_column_writes_whole_numbers_as_go_does(module_api: API) -> None:
    """apiextensions-apiserver pkg/registry/customresource/tableconvertor/tableconvertor.go
    cellForJSONValue makes a "number" column's cell a float64 (an int64 converted), and
    encoding/json writes a float64 with no fraction without one: 2, not 2.0."""
    group = f"gc{uuid.uuid4().hex[:6]}.example.com"
    crd = widget_crd(group, {"type": "object", "properties": {"n": {"type": "number"}}},
                     additionalPrinterColumns=[
                         {"name": "N", "type": "number", "jsonPath": ".spec.n"}])
    path = await create_served(module_api, crd)
    for name, n in (("whole", 2), ("fraction", 2.5), ("large", 3e15)):
        status, out = await module_api.post(path, widget(crd, name, {"n": n}))
        assert status == 201, out
    async with module_api.session.get(
            module_api.cluster.url + path,
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
            ssl=module_api.ssl) as resp:
        assert resp.status == 200
        raw = await resp.text()
    # floats kept as their literal text, to see how each was written
    table = json.loads(raw, parse_float=lambda text: f"float:{text}")
    cells = {row["cells"][0]: row["cells"][1] for row in table["rows"]}
    assert cells == {"whole": 2, "fraction": "float:2.5", "large": 3000000000000000}


@pytest.mark.parametrize("policy", ["Orphan", "Foreground", "Background"])
async def test_delete_collection_by_label_propagates_to_each_owner_s_dependents(
        module_api: API, two_namespaces: tuple[str, str], policy: str) -> None:
    """store.go DeleteCollection lists the selected objects and deletes each as its own
    DELETE with a copy of the options (each gets the policy's finalizer: orphan, or
    foregroundDeletion while blocking dependents remain), answering with the list as read
    before the deletions; the garbage collector (garbagecollector.go attemptToOrphan /
    attemptToDeleteItem) then orphans or deletes each owner's dependents. Objects the
    selector does not name, and their dependents, are untouched."""
    here, _ = two_namespaces
    cms = f"{NAMESPACES}/{here}/configmaps"
    count = 25
    for i in range(count + 3):
        chosen = "yes" if i < count else "no"
        status, owner = await module_api.post(cms, {"metadata": {
            "name": f"{policy.lower()}-o{i}", "labels": {"sel": f"{policy}-{chosen}"}}})
        assert status == 201, owner
        status, dep = await module_api.post(cms, {"metadata": {
            "name": f"{policy.lower()}-d{i}", "ownerReferences": [
                {**_ref({**owner, "kind": "ConfigMap"}), "blockOwnerDeletion": True}]}})
        assert status == 201, dep
    status, out = await module_api.delete(f"{cms}?labelSelector=sel%3D{policy}-yes",
                                          {"propagationPolicy": policy})
    assert status == 200, out
    assert out["kind"] == "ConfigMapList"
    assert sorted(i["metadata"]["name"] for i in out["items"]) == sorted(
        f"{policy.lower()}-o{i}" for i in range(count))
    assert not any(i["metadata"].get("deletionTimestamp") or i["metadata"].get("finalizers")
                   for i in out["items"])

    async def settled() -> dict[str, Any] | None:
        status, listed = await module_api.get(cms)
        assert status == 200, listed
        names = {i["metadata"]["name"]: i for i in listed["items"]
                 if i["metadata"]["name"].startswith(f"{policy.lower()}-")}
        if any(f"{policy.lower()}-o{i}" in names for i in range(count)):
            return None
        if policy != "Orphan" and any(f"{policy.lower()}-d{i}" in names for i in range(count)):
            return None
        if policy == "Orphan" and any(names[f"{policy.lower()}-d{i}"]["metadata"].get(
                "ownerReferences") for i in range(count)):
            return None
        return names

    names = await wait_for(settled)
    for i in range(count, count + 3):
        assert names[f"{policy.lower()}-o{i}"]
        assert names[f"{policy.lower()}-d{i}"]["metadata"]["ownerReferences"]
    if policy == "Orphan":
        assert all(f"{policy.lower()}-d{i}" in names for i in range(count))


async def test_owners_absent_or_of_another_uid_are_dangling(
        module_api: API, two_namespaces: tuple[str, str]) -> None:
    """garbagecollector.go isDangling: an owner not found, or found with another uid, is
    dangling; attemptToDeleteItem deletes a dependent none of whose owners is solid, and
    from one that still has a solid owner removes only the dangling references (its
    deleteOwnerRefJSONMergePatch)."""
    here, _ = two_namespaces
    cms = f"{NAMESPACES}/{here}/configmaps"
    status, live = await module_api.post(cms, {"metadata": {"name": "live"}})
    assert status == 201, live
    live = {**live, "kind": "ConfigMap"}
    never = {"apiVersion": "v1", "kind": "ConfigMap", "name": "never",
             "uid": "00000000-0000-0000-0000-00000000abcd"}
    other_uid = {**_ref(live), "uid": "00000000-0000-0000-0000-00000000dcba"}
    for name, refs in (("d-never", [never]), ("d-other-uid", [other_uid]),
                       ("d-mixed", [never, _ref(live), other_uid])):
        status, out = await module_api.post(cms, {"metadata": {"name": name,
                                                               "ownerReferences": refs}})
        assert status == 201, out

    async def settled() -> dict[str, Any] | None:
        gone = all([(await module_api.get(f"{cms}/{n}"))[0] == 404
                    for n in ("d-never", "d-other-uid")])
        status, mixed = await module_api.get(f"{cms}/d-mixed")
        assert status == 200, mixed
        refs = mixed["metadata"]["ownerReferences"]
        return mixed if gone and len(refs) == 1 else None

    mixed = await wait_for(settled)
    assert mixed["metadata"]["ownerReferences"] == [_ref(live)]
    assert (await module_api.get(f"{cms}/live"))[0] == 200
