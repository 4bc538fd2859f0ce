"""Informers and the cache against the embedded server: list, watch, resume, relist."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from setpoint.client import Client, Echo, GoneError, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster
from setpoint.runtime._cache import Cache, NotWatchedError, Store
from setpoint.runtime._informer import Informer
from tests.runtime.conftest import CONFIGMAP
from tests.waiting import quiet_period, wait_for

POD = Kind("v1", "Pod")


def cm(name: str, namespace: str = "default", labels: dict[str, str] | None = None,
       data: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "data": data or {}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"]))


async def run_informer(informer: Informer) -> asyncio.Task[None]:
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.wait_synced(), 30)
    return task


async def test_informer_lists_then_follows_changes(client: Client) -> None:
    await client.create(cm("before"))
    informer = Informer(client, CONFIGMAP, namespace="default")
    seen = Recorder()
    informer.add_handler(seen)
    task = await run_informer(informer)
    try:
        assert ("add", "before") in seen.events
        assert "default/before" in informer.store
        await client.create(cm("after", data={"a": "1"}))
        await client.patch(CONFIGMAP, "after", {"data": {"a": "2"}}, namespace="default")
        await client.delete(CONFIGMAP, "before", namespace="default")
        await wait_for(lambda: ("delete", "before") in seen.events)
        assert ("add", "after") in seen.events and ("update", "after") in seen.events
        assert informer.store.get("default/after")["data"] == {"a": "2"}  # type: ignore[index]
        assert "default/before" not in informer.store
        assert informer.lists == 1
    finally:
        task.cancel()


async def test_a_removed_handler_hears_no_more_changes(client: Client) -> None:
    """client-go's ``SharedInformer.RemoveEventHandler``
    (k8s.io/client-go/tools/cache/shared_informer.go): the handler removed hears nothing
    after, the others go on hearing every change."""
    informer = Informer(client, CONFIGMAP, namespace="default")
    removed, kept = Recorder(), Recorder()
    informer.add_handler(removed)
    informer.add_handler(kept)
    task = await run_informer(informer)
    try:
        informer.remove_handler(removed)
        informer.remove_handler(removed)  # not registered any more: no error
        await client.create(cm("later"))
        await wait_for(lambda: ("add", "later") in kept.events)
        assert ("add", "later") not in removed.events
    finally:
        task.cancel()


async def test_informer_drops_managed_fields_by_default(client: Client) -> None:
    await client.apply(cm("applied", data={"k": "v"}), field_manager="test")
    informer = Informer(client, CONFIGMAP, namespace="default")
    task = await run_informer(informer)
    try:
        stored = informer.store.get("default/applied")
        assert stored is not None and "managedFields" not in stored["metadata"]
    finally:
        task.cancel()


async def test_informer_resumes_a_closed_watch_without_listing_again(client: Client) -> None:
    informer = Informer(client, CONFIGMAP, namespace="default", min_watch_timeout=1)
    seen = Recorder()
    informer.add_handler(seen)
    task = await run_informer(informer)
    try:
        # the server ends each 1-2 s watch; the informer opens the next from where it was
        await wait_for(lambda: informer.watches >= 2)
        await client.create(cm("later"))
        await wait_for(lambda: ("add", "later") in seen.events)
        assert informer.lists == 1
    finally:
        task.cancel()


async def test_informer_relists_when_its_version_is_gone(client: Client) -> None:
    informer = Informer(client, CONFIGMAP, namespace="default")
    seen = Recorder()
    informer.add_handler(seen)
    await client.create(cm("stays"))
    await client.create(cm("goes"))
    # a stale store and an expired resourceVersion, as after a long disconnection
    informer.store.put(cm("ghost") | {"metadata": {"name": "ghost", "namespace": "default",
                                                   "resourceVersion": "1"}})
    informer._synced.set()
    informer.resource_version = "1"
    task = asyncio.create_task(informer.run())
    try:
        await wait_for(lambda: informer.lists == 1)
        assert ("delete", "ghost") in seen.events
        assert {("add", "stays"), ("add", "goes")} <= set(seen.events)
        await client.create(cm("new"))
        await wait_for(lambda: ("add", "new") in seen.events)
    finally:
        task.cancel()


async def test_watch_from_an_expired_version_raises_gone(client: Client) -> None:
    for i in range(3):
        await client.create(cm(f"c{i}"))
    with pytest.raises(GoneError):
        async for _ in client.watch(CONFIGMAP, resource_version="1"):
            pass


async def test_informer_honours_its_label_selector(client: Client) -> None:
    informer = Informer(client, CONFIGMAP, namespace="default", label_selector="app=web")
    task = await run_informer(informer)
    try:
        await client.create(cm("web", labels={"app": "web"}))
        await client.create(cm("db", labels={"app": "db"}))
        await wait_for(lambda: "default/web" in informer.store)
        assert "default/db" not in informer.store
    finally:
        task.cancel()


async def test_informer_retries_until_a_kind_is_served(client: Client) -> None:
    from tests.runtime.conftest import WIDGET, WIDGET_CRD

    informer = Informer(client, WIDGET, namespace="default")
    informer.backoff.initial = 0.05
    task = asyncio.create_task(informer.run())
    try:
        await quiet_period()
        assert not informer.has_synced
        await client.create(WIDGET_CRD)
        await asyncio.wait_for(informer.wait_synced(), 30)
    finally:
        task.cancel()


async def test_recorded_write_is_visible_at_once_and_its_event_not_repeated(
        client: Client) -> None:
    informer = Informer(client, CONFIGMAP, namespace="default")
    seen = Recorder()
    informer.add_handler(seen)
    task = await run_informer(informer)
    try:
        created = await client.create(cm("mine"))
        assert informer.record_write(created)
        assert informer.store.get("default/mine") is not None
        await client.create(cm("marker"))
        await wait_for(lambda: ("add", "marker") in seen.events)
        assert seen.events.count(("add", "mine")) == 1
    finally:
        task.cancel()


async def test_a_writes_watch_event_is_told_by_its_answers_bytes_and_no_other_is(
        cluster: RunningCluster, client: Client) -> None:
    """The server encodes a write's answer and its watch event from the same stored object
    (kube-apiserver's and Setpoint's watch line is ``{"type":...,"object":`` + the object +
    ``}``): on a watch opened with ``echoes``, the events of this client's own writes come
    as an :class:`Echo` of the answer (decoded on demand to the answer itself), and a
    change made by another client, which this one never read, as the object."""
    info = await client.resolve(CONFIGMAP)
    client.write_answers.watch(info)
    listed = await client.list(CONFIGMAP, namespace="default")
    mine = await client.create(cm("mine", data={"a": "1"}))
    patched = await client.patch(CONFIGMAP, "mine", {"data": {"a": "2"}}, namespace="default")
    async with Client(load_kubeconfig(cluster.kubeconfig)) as other:
        theirs = await other.create(cm("theirs"))
    events: list[Any] = []
    async with client.watch(CONFIGMAP, namespace="default", echoes=True,
                            resource_version=listed.resource_version) as watch:
        async for event in watch:
            events.append(event)
            if len(events) == 3:
                break
    assert [(e.type, type(e.object)) for e in events] == [
        ("ADDED", Echo), ("MODIFIED", Echo), ("ADDED", dict)]
    assert events[0].object.decode() == mine and events[1].object.decode() == patched
    assert events[1].object.resource_version == patched["metadata"]["resourceVersion"]
    assert events[2].object == theirs


async def test_an_echo_the_store_does_not_hold_is_handed_out_whole(client: Client) -> None:
    """An informer drops the echo of a write it recorded (its store holds that version)
    and decodes and hands out every other, the echo of a write nobody recorded included:
    a handler hears each change once, with the object as the server sent it."""
    informer = Informer(client, CONFIGMAP, namespace="default")
    seen = Recorder()
    updates: list[dict[str, Any]] = []
    seen.on_update = lambda old, new: updates.append(new)  # type: ignore[method-assign]
    informer.add_handler(seen)
    task = await run_informer(informer)
    try:
        recorded = await client.create(cm("recorded"))
        assert informer.record_write(recorded)
        unrecorded = await client.create(cm("unrecorded", data={"k": "v"}))
        await client.patch(CONFIGMAP, "unrecorded", {"data": {"k": "w"}},
                           namespace="default")
        await wait_for(lambda: len(updates) == 1)
        assert seen.events.count(("add", "recorded")) == 1  # the record's, not the echo's
        assert ("add", "unrecorded") in seen.events
        assert updates[0]["data"] == {"k": "w"}
        stored = informer.store.get("default/unrecorded")
        assert stored is not None and stored["data"] == {"k": "w"}
        assert stored["metadata"]["uid"] == unrecorded["metadata"]["uid"]
        assert "managedFields" not in stored["metadata"]  # transformed as any event
    finally:
        task.cancel()


def pod(name: str, *, host_network: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if host_network is not None:
        spec["hostNetwork"] = host_network
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_a_field_scoped_informer_takes_its_objects_from_the_watch_alone(
        client: Client) -> None:
    """Only the server knows a kind's field labels: a pod's unset ``spec.hostNetwork``
    selects as "false" (pkg/apis/core/v1/conversion.go, the pod's field label conversion;
    pkg/registry/core/pod/strategy.go ToSelectableFields). A write's answer read by the
    client would put that pod in an informer scoped ``spec.hostNetwork!=false``, where the
    server's watch never sends it and so never takes it out; the informer waits for its
    watch instead."""
    informer = Informer(client, POD, namespace="default",
                        field_selector="spec.hostNetwork!=false")
    task = await run_informer(informer)
    try:
        created = await client.create(pod("plain"))
        assert not informer.record_write(created)
        await client.create(pod("host", host_network=True))
        await wait_for(lambda: "default/host" in informer.store)
        assert "default/plain" not in informer.store
    finally:
        task.cancel()


# -- the cache, without a server ----------------------------------------------------------


def make_cache() -> Cache:
    cache = Cache()
    store = cache.store_for(CONFIGMAP, create=True)
    store.put(cm("a", "ns1", {"app": "web", "tier": "front"}, {"x": "1"}))
    store.put(cm("b", "ns1", {"app": "db"}))
    store.put(cm("c", "ns2", {"app": "web"}))
    owned = cm("d", "ns2")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Secret",
                                            "name": "s", "uid": "u-1", "controller": True}]
    store.put(owned)
    return cache


def test_cache_lists_by_namespace_labels_fields_and_owner() -> None:
    cache = make_cache()

    def names(objs: list[Any]) -> list[str]:
        return [o["metadata"]["name"] for o in objs]

    assert names(cache.list(CONFIGMAP)) == ["a", "b", "c", "d"]
    assert names(cache.list(CONFIGMAP, namespace="ns1")) == ["a", "b"]
    assert names(cache.list(CONFIGMAP, labels="app=web")) == ["a", "c"]
    assert names(cache.list(CONFIGMAP, labels={"app": "web"}, namespace="ns2")) == ["c"]
    assert names(cache.list(CONFIGMAP, labels="app in (web,db),tier!=front")) == ["b", "c"]
    assert names(cache.list(CONFIGMAP, fields="metadata.name=b")) == ["b"]
    assert names(cache.list(CONFIGMAP, fields={"data.x": "1"})) == ["a"]
    assert names(cache.owned_by(CONFIGMAP, "u-1")) == ["d"]


def test_cache_get_returns_copies_that_cannot_corrupt_the_store() -> None:
    cache = make_cache()
    got = cache.get(CONFIGMAP, "a", "ns1")
    assert got is not None
    got["data"]["x"] = "changed"
    assert cache.get(CONFIGMAP, "a", "ns1")["data"]["x"] == "1"
    assert cache.get(CONFIGMAP, "missing", "ns1") is None


def test_cache_refuses_kinds_it_does_not_watch() -> None:
    with pytest.raises(NotWatchedError):
        Cache().get(Kind("v1", "Secret"), "s", "ns")


def test_custom_indexes_follow_updates_and_deletes() -> None:
    store = Store({"by-app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]})
    store.put(cm("a", labels={"app": "web"}))
    assert [o["metadata"]["name"] for o in store.by_index("by-app", "web")] == ["a"]
    store.put(cm("a", labels={"app": "db"}))
    assert store.by_index("by-app", "web") == []
    store.delete("default/a")
    assert store.by_index("by-app", "db") == []
