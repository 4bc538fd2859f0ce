"""The garbage collector: owner references, propagation policies, the dependency graph."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.controllers.ownergraph import Location, OwnerGraph
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from tests.waiting import wait_for

USER = WriteOptions(field_manager="tests")
GHOST = "00000000-0000-0000-0000-0000000000aa"


async def until(check: Callable[[], Any]) -> Any:
    """Let the loop run until ``check()`` is truthy; return its value."""
    return await wait_for(check)


async def turns(n: int = 20) -> None:
    """Let queued controller work run (for asserting that nothing happens)."""
    for _ in range(n):
        await asyncio.sleep(0)


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=b"CA")
    api.start()
    yield api
    await api.stop()


def cm(api: APIServer, name: str, *owners: dict[str, Any], ns: str = "default",
       finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = finalizers
    return api.rest.create(api.resource("", "v1", "configmaps"), ns,
                           Decoded({"metadata": meta}), USER).obj


def ref(owner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], **extra}


def get(api: APIServer, name: str, ns: str = "default") -> dict[str, Any] | None:
    return api.store.get("/configmaps", ns, name)


def delete(api: APIServer, name: str, policy: str | None = None) -> None:
    api.rest.delete(api.resource("", "v1", "configmaps"), "default", name,
                    DeleteOptions(propagation_policy=policy))


def release(api: APIServer, name: str) -> None:
    live = get(api, name)
    assert live is not None
    meta = {k: v for k, v in live["metadata"].items() if k != "finalizers"}
    api.rest.update(api.resource("", "v1", "configmaps"), "default", name,
                    Decoded({**live, "metadata": meta}), USER)


async def test_background_deletion_collects_every_dependent(server: APIServer) -> None:
    owner = cm(server, "owner")
    cm(server, "dep1", ref(owner))
    cm(server, "dep2", ref(owner, controller=True, blockOwnerDeletion=True))
    delete(server, "owner", "Background")
    assert get(server, "owner") is None
    await until(lambda: get(server, "dep1") is None and get(server, "dep2") is None)


async def test_dependents_of_dependents_are_collected_in_turn(server: APIServer) -> None:
    owner = cm(server, "owner")
    child = cm(server, "child", ref(owner))
    cm(server, "grandchild", ref(child))
    delete(server, "owner")
    await until(lambda: get(server, "grandchild") is None)


async def test_orphan_deletion_strips_the_reference_then_the_finalizer(
        server: APIServer) -> None:
    owner = cm(server, "owner2")
    other = cm(server, "other")
    cm(server, "dep3", ref(owner, blockOwnerDeletion=True), ref(other))
    delete(server, "owner2", "Orphan")
    await until(lambda: get(server, "owner2") is None)
    dep = get(server, "dep3")
    assert dep is not None
    assert [r["name"] for r in dep["metadata"]["ownerReferences"]] == ["other"]
    writers = {e["manager"] for e in dep["metadata"].get("managedFields") or []}
    assert writers <= {"tests", "kube-controller-manager"}


async def test_orphaning_the_only_owner_removes_owner_references(server: APIServer) -> None:
    owner = cm(server, "owner3")
    cm(server, "dep4", ref(owner))
    delete(server, "owner3", "Orphan")
    await until(lambda: get(server, "owner3") is None)
    dep = get(server, "dep4")
    assert dep is not None and "ownerReferences" not in dep["metadata"]


async def test_a_dependent_of_an_owner_that_never_existed_is_collected(
        server: APIServer) -> None:
    cm(server, "dangling", {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                            "uid": GHOST})
    await until(lambda: get(server, "dangling") is None)


async def test_an_owner_with_another_uid_counts_as_gone(server: APIServer) -> None:
    cm(server, "ghost")
    cm(server, "dangling", {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                            "uid": GHOST})
    await until(lambda: get(server, "dangling") is None)
    assert get(server, "ghost") is not None


async def test_owner_in_another_namespace_is_not_an_owner(server: APIServer) -> None:
    api_ns = server.resource("", "v1", "namespaces")
    server.rest.create(api_ns, None, Decoded({"metadata": {"name": "elsewhere"}}), USER)
    owner = cm(server, "owner", ns="elsewhere")
    cm(server, "dep", ref(owner))
    await until(lambda: get(server, "dep") is None)


async def test_only_the_gone_owner_is_removed_while_another_lives(server: APIServer) -> None:
    alive = cm(server, "alive")
    cm(server, "dep", ref(alive), {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                                   "uid": GHOST})
    await until(lambda: len((get(server, "dep") or {}).get("metadata", {}).get(
        "ownerReferences", [])) == 1)
    await turns()
    dep = get(server, "dep")
    assert dep is not None and dep["metadata"]["ownerReferences"][0]["name"] == "alive"


async def test_foreground_owner_waits_for_its_blocking_dependents(server: APIServer) -> None:
    owner = cm(server, "owner")
    cm(server, "blocker", ref(owner, blockOwnerDeletion=True), finalizers=["example.com/hold"])
    cm(server, "plain", ref(owner))
    delete(server, "owner", "Foreground")
    await until(lambda: get(server, "plain") is None)
    await turns()
    waiting = get(server, "owner")
    assert waiting is not None and waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    blocker = get(server, "blocker")
    assert blocker is not None and blocker["metadata"]["deletionTimestamp"]
    release(server, "blocker")
    await until(lambda: get(server, "owner") is None)


async def test_foreground_owner_without_dependents_goes_at_once(server: APIServer) -> None:
    cm(server, "owner")
    delete(server, "owner", "Foreground")
    await until(lambda: get(server, "owner") is None)


async def test_foreground_deletion_propagates_through_dependents_with_dependents(
        server: APIServer) -> None:
    owner = cm(server, "owner")
    child = cm(server, "child", ref(owner, blockOwnerDeletion=True))
    cm(server, "grandchild", ref(child, blockOwnerDeletion=True),
       finalizers=["example.com/hold"])
    delete(server, "owner", "Foreground")
    mid = await until(lambda: (get(server, "child") or {}).get("metadata", {}).get(
        "deletionTimestamp") and get(server, "child"))
    assert mid["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert get(server, "owner") is not None
    release(server, "grandchild")
    await until(lambda: get(server, "owner") is None and get(server, "child") is None)


async def test_namespaced_dependent_of_a_cluster_scoped_owner(server: APIServer) -> None:
    roles = server.resource("rbac.authorization.k8s.io", "v1", "clusterroles")
    owner = server.rest.create(roles, None, Decoded({"metadata": {"name": "owner"}}), USER).obj
    cm(server, "dep", ref(owner))
    await turns()
    assert get(server, "dep") is not None
    server.rest.delete(roles, None, "owner", DeleteOptions())
    await until(lambda: get(server, "dep") is None)


async def test_cluster_scoped_dependent_of_a_namespaced_kind_is_left_alone(
        server: APIServer) -> None:
    roles = server.resource("rbac.authorization.k8s.io", "v1", "clusterroles")
    server.rest.create(roles, None, Decoded({"metadata": {"name": "dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": GHOST}]}}), USER)
    await turns()
    assert server.store.get("rbac.authorization.k8s.io/clusterroles", "", "dep") is not None


async def test_owner_of_a_kind_not_served_keeps_its_dependent(server: APIServer) -> None:
    cm(server, "dep", {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w",
                       "uid": GHOST})
    await turns()
    assert get(server, "dep") is not None


async def test_events_are_never_collected(server: APIServer) -> None:
    events = server.resource("", "v1", "events")
    server.rest.create(events, "default", Decoded({
        "metadata": {"name": "e", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": GHOST}]},
        "involvedObject": {"kind": "ConfigMap", "name": "ghost", "namespace": "default"},
        "reason": "Test", "message": "m", "type": "Normal"}), USER)
    await turns()
    assert server.store.get("/events", "default", "e") is not None


def test_graph_indexes_dependents_by_owner_uid() -> None:
    graph = OwnerGraph()
    where = Location("/configmaps", "default", "dep")

    def obj(*refs: dict[str, Any], uid: str = "d") -> dict[str, Any]:
        return {"metadata": {"uid": uid, "name": "dep", "ownerReferences": list(refs)}}

    changes = graph.observe(where, obj({"uid": "o1", "blockOwnerDeletion": True},
                                       {"uid": "o2"}))
    assert [link.uid for link in changes.added] == ["o1", "o2"]
    assert graph.dependents("o1") == ["d"] and graph.blocking_dependents("o1") == ["d"]
    assert graph.blocking_dependents("o2") == []
    changes = graph.observe(where, obj({"uid": "o1"}))
    assert [link.uid for link in changes.unblocked] == ["o1"]
    assert [link.uid for link in changes.removed] == ["o2"]
    assert graph.dependents("o2") == [] and graph.location("d") == where
    assert [link.uid for link in graph.forget("d")] == ["o1"]
    assert graph.dependents("o1") == [] and graph.location("d") is None and len(graph) == 0


async def test_owner_references_added_and_removed_later_are_tracked(server: APIServer) -> None:
    """An object written without owners is passed over (most writes), but one given owners
    by a later update joins the graph, and one whose owners are taken away leaves it, as the
    GraphBuilder's processGraphChanges records every update (garbagecollector/graph_builder.go)."""
    graph = server.controllers.garbage_collector.graph
    owner = cm(server, "owner")
    plain = cm(server, "plain")
    uid = plain["metadata"]["uid"]
    assert not graph.knows(uid)
    cms = server.resource("", "v1", "configmaps")
    server.rest.update(cms, "default", "plain", Decoded(
        {**plain, "metadata": {**plain["metadata"], "ownerReferences": [ref(owner)]}}), USER)
    assert graph.dependents(owner["metadata"]["uid"]) == [uid]
    live = get(server, "plain")
    assert live is not None
    meta = {k: v for k, v in live["metadata"].items() if k != "ownerReferences"}
    server.rest.update(cms, "default", "plain", Decoded({**live, "metadata": meta}), USER)
    assert graph.dependents(owner["metadata"]["uid"]) == [] and not graph.knows(uid)
    delete(server, "owner")
    await turns()
    assert get(server, "plain") is not None


async def test_dependents_of_owners_gone_while_stopped_are_collected_on_start(
        tmp_path: Any) -> None:
    first = APIServer(tmp_path, ca_pem=b"CA")
    first.start()
    owner = cm(first, "owner")
    cm(first, "dep", ref(owner))
    # the owner disappears behind the collector's back (as if deleted while it was down)
    first.store.delete("/configmaps", "default", "owner")
    await first.stop()
    second = APIServer(tmp_path, ca_pem=b"CA")
    second.start()
    try:
        await until(lambda: get(second, "dep") is None)
    finally:
        await second.stop()


async def test_a_write_of_a_dependent_does_not_decode_its_previous_version(
        server: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph needs an object's previous version only to see a deletion start (the
    orphan and foreground finalizers, garbagecollector/graph_builder.go
    ``startsWaitingForDependentsDeleted``/``startsWaitingForDependentsOrphaned``, which look
    at the new object first): an update of an owned object that is not being deleted (a
    pod's status, most of a cluster's writes) does not decode the old one from its JSON."""
    from setpoint.cluster.storage import store as store_module

    owner = cm(server, "owner")
    cm(server, "dep", ref(owner))
    decoded: list[str] = []
    real_prev = store_module.Event.prev

    def counting_prev(event: store_module.Event) -> Any:
        if event.resource == "/configmaps":
            decoded.append(event.name)
        return real_prev.fget(event)  # type: ignore[attr-defined]

    monkeypatch.setattr(store_module.Event, "prev", property(counting_prev))
    for i in range(5):
        api_obj = get(server, "dep")
        assert api_obj is not None
        server.rest.update(server.resource("", "v1", "configmaps"), "default", "dep",
                           Decoded({**api_obj, "data": {"round": str(i)}}), USER)
    assert decoded == []
    # a deletion that starts with the orphan finalizer is still seen (it needs the old one)
    delete(server, "dep", "Orphan")
    await until(lambda: get(server, "dep") is None)
