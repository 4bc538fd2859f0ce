"""The store: one global revision, snapshots, event history and persistence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from setpoint.cluster.storage import Event, Store
from tests.conftest import CallsTo


def cm(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "data": data}


def test_every_write_takes_the_next_global_revision() -> None:
    store = Store()
    a = store.put("/configmaps", cm("a"))
    b = store.put("/secrets", cm("b"))
    assert (a["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"]) == ("1", "2")
    gone = store.delete("/configmaps", "default", "a")
    assert gone is not None and gone["metadata"]["resourceVersion"] == "3"


@pytest.mark.parametrize("read_first", [True, False])
def test_a_deleted_objects_event_is_the_stored_object_at_the_deletions_version(
        read_first: bool) -> None:
    """etcd3's store (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go
    ``conditionalDelete``) sends the last stored object with the deletion's revision as its
    resourceVersion, whatever else in it reads the same: here an object reference carries
    the old version's text. Whether the version was read just before (spliced into the
    stored JSON) or not (decoded), the watch's bytes and the decoded event agree."""
    store = Store()
    store.put("/events", {"metadata": {"name": "filler", "namespace": "default"}})
    first = store.put("/events", {"metadata": {"name": "e", "namespace": "default"},
                                  "involvedObject": {"kind": "Pod", "resourceVersion": "9"},
                                  "message": 'said "resourceVersion":"2"'})
    assert first["metadata"]["resourceVersion"] == "2"
    # the reference carries the text of the object's own version: only metadata's moves
    stored = store.put("/events", {**first, "involvedObject": {
        "kind": "Pod", "resourceVersion": "3"}})
    assert stored["metadata"]["resourceVersion"] == "3"
    if read_first:
        store.get("/events", "default", "e")
    events: list[Event] = []
    store.add_listener(events.append)
    assert store.discard("/events", "default", "e") is True
    assert store.discard("/events", "default", "e") is False
    (event,) = events
    want = {**stored, "metadata": {**stored["metadata"], "resourceVersion": "4"}}
    assert event.obj == want
    assert event.raw is not None and orjson.loads(event.raw) == want
    assert event.prev == stored


def test_put_never_changes_a_dict_another_object_shares() -> None:
    store = Store()
    first = store.put("/configmaps", cm("a"))
    second = store.put("/configmaps", {**first, "data": {"x": "1"}})
    assert first["metadata"]["resourceVersion"] == "1"
    assert second["metadata"]["resourceVersion"] == "2"


def test_snapshot_shows_the_objects_as_they_were() -> None:
    store = Store()
    store.put("/configmaps", cm("a", v="1"))
    store.put("/configmaps", cm("b", v="1"))
    at = store.revision
    store.put("/configmaps", cm("a", v="2"))
    store.delete("/configmaps", "default", "b")
    store.put("/configmaps", cm("c", v="1"))
    snap = store.snapshot("/configmaps", at)
    assert snap is not None
    assert {k[1]: v["data"]["v"] for k, v in snap.items()} == {"a": "1", "b": "1"}


def test_compacted_history_answers_none() -> None:
    store = Store()
    store.put("/configmaps", cm("a"))
    store.compact()
    store.put("/configmaps", cm("b"))
    assert store.events_since("/configmaps", 0) is None
    events = store.events_since("/configmaps", 1)
    assert events is not None and [e.name for e in events] == ["b"]


def test_bounded_history_forgets_the_oldest_events() -> None:
    store = Store(history=3)
    for i in range(5):
        store.put("/configmaps", cm(f"c{i}"))
    assert store.compacted_revision == 2
    assert store.events_since("/configmaps", 1) is None
    assert [e.name for e in store.events_since("/configmaps", 2) or []] == ["c2", "c3", "c4"]


def test_state_survives_a_restart(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.db")
    store.put("/configmaps", cm("a", v="1"))
    store.put("/configmaps", cm("b"))
    store.delete("/configmaps", "default", "b")
    store.close()
    again = Store(tmp_path / "state.db")
    assert again.revision == 3
    obj = again.get("/configmaps", "default", "a")
    assert obj is not None and obj["data"] == {"v": "1"}
    assert again.get("/configmaps", "default", "b") is None
    assert again.put("/configmaps", cm("c"))["metadata"]["resourceVersion"] == "4"


async def test_a_watcher_that_falls_too_far_behind_is_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from setpoint.cluster.storage import store as store_module

    monkeypatch.setattr(store_module, "WATCHER_BACKLOG", 3)
    store = Store()
    watcher = store.watch("/configmaps")
    for i in range(3):
        store.put("/configmaps", cm(f"c{i}"))
    closed_before = watcher.closed
    assert not closed_before
    store.put("/configmaps", cm("one-too-many"))
    assert watcher.closed
    assert await watcher.next_batch(0.01) == []


async def test_a_waiting_watcher_makes_no_task_and_wakes_for_an_event_a_timeout_or_a_close(
        ) -> None:
    """A watch waits for its next events once per batch it sends, so the wait is one
    future woken by the store (or a timer), not ``asyncio.wait_for``'s task and futures
    around an ``asyncio.Event`` (the watch cache's cacheWatcher likewise blocks on its
    channel: staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go
    processEvents)."""
    import asyncio

    store = Store()
    watcher = store.watch("/configmaps")
    tasks_before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(watcher.next_batch(30))
    await asyncio.sleep(0)  # let it reach its wait
    assert len(asyncio.all_tasks()) == tasks_before + 1  # the waiting one, nothing beside
    store.put("/configmaps", cm("a"))
    batch = await asyncio.wait_for(waiting, 5)
    assert [e.name for e in batch] == ["a"]
    assert await watcher.next_batch(0.01) == []  # the timer ends an empty wait
    waiting = asyncio.ensure_future(watcher.next_batch(30))
    await asyncio.sleep(0)
    watcher.close()
    assert await asyncio.wait_for(waiting, 5) == []


async def test_writes_of_the_loop_turn_after_a_wake_join_the_same_batch() -> None:
    """A woken watcher takes its events a turn later, so that writes landing together
    leave as one chunk of the watch (the apiserver's watch handler flushes only when its
    channel is empty: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go
    ServeHTTP), not one chunk, one TLS record and one send per event."""
    import asyncio

    store = Store()
    watcher = store.watch("/configmaps")
    waiting = asyncio.ensure_future(watcher.next_batch(30))
    await asyncio.sleep(0)
    store.put("/configmaps", cm("a"))
    await asyncio.sleep(0)  # the next write comes a loop turn later
    store.put("/configmaps", cm("b"))
    batch = await asyncio.wait_for(waiting, 5)
    assert [e.name for e in batch] == ["a", "b"]


def test_the_resource_version_of_an_object_just_read_needs_no_second_decoding(
        calls_to: CallsTo) -> None:
    """An update reads its object, then asks its resourceVersion again just before it
    writes (to see that no webhook's wait let another write in: etcd3's GuaranteedUpdate
    compares the revision it read, k8s.io/apiserver/pkg/storage/etcd3/store.go): while the
    stored JSON is the one read, the answer needs no decoding; after any write, or for an
    object not read lately, it is read from the stored object."""
    from setpoint.cluster.storage import store as store_module

    s = Store()
    s.put("/configmaps", {"metadata": {"name": "a", "namespace": "ns"}})
    s.put("/configmaps", {"metadata": {"name": "b", "namespace": "ns"}})
    decodes = calls_to(store_module, "_decode")
    read = s.get("/configmaps", "ns", "a")
    assert read is not None and len(decodes) == 1
    assert s.resource_version("/configmaps", "ns", "a") == read["metadata"]["resourceVersion"]
    assert len(decodes) == 1
    written = s.put("/configmaps", {**read, "data": {"k": "v"}})
    assert s.resource_version("/configmaps", "ns", "a") == written["metadata"]["resourceVersion"]
    assert s.resource_version("/configmaps", "ns", "b") == "2"
    assert s.resource_version("/configmaps", "ns", "gone") is None
    for i in range(store_module.READ_VERSIONS_KEPT + 2):  # what is kept stays bounded
        s.put("/configmaps", {"metadata": {"name": f"c{i}", "namespace": "ns"}})
        s.get("/configmaps", "ns", f"c{i}")
    assert len(s._read_versions) <= store_module.READ_VERSIONS_KEPT


async def test_a_delete_reads_its_object_once_to_decide_and_once_to_remove_it(
        calls_to: CallsTo) -> None:
    """A DELETE reads the object, lets the webhooks answer, then checks that nothing wrote
    it meanwhile (the store's ``Delete`` precondition on the revision it read,
    k8s.io/apiserver/pkg/storage/etcd3/store.go): that check needs no second decoding of
    the object, and the store's removal splices the deletion's resourceVersion into the
    stored JSON: only a reader of the DELETED event decodes it again (the garbage
    collector, for its uid)."""
    from setpoint.cluster.apiserver import APIServer
    from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
    from setpoint.cluster.serializer.decode import Decoded
    from setpoint.cluster.storage import store as store_module

    api = APIServer(None, ca_pem=b"CA")
    api.start()
    try:
        configmaps = api.resource("", "v1", "configmaps")
        api.rest.create(configmaps, "default", Decoded({"metadata": {"name": "gone"}}),
                        WriteOptions(field_manager="tests"))
        decodes = calls_to(store_module, "_decode")
        api.rest.delete(configmaps, "default", "gone", DeleteOptions())
        assert api.store.get("/configmaps", "default", "gone") is None
        assert len([raw for raw in decodes if b'"gone"' in raw]) == 2
    finally:
        await api.stop()


def test_listeners_of_a_resource_hear_only_it_all_in_the_order_added() -> None:
    """A listener given resources is called for their events only; every event reaches its
    listeners in the order they were added, those following all resources among them (the
    informers of the in-server controllers: a write wakes only those that follow it)."""
    store = Store()
    heard: list[tuple[str, str]] = []
    store.add_listener(lambda e: heard.append(("all-1", e.resource)))
    store.add_listener(lambda e: heard.append(("cm", e.resource)), ("configmaps",))
    store.add_listener(lambda e: heard.append(("all-2", e.resource)))
    store.put("configmaps", cm("a"))
    store.put("secrets", cm("b"))
    store.add_listener(lambda e: heard.append(("secrets", e.resource)), ["secrets"])
    store.put("secrets", cm("c"))
    store.delete("configmaps", "default", "a")
    assert heard == [
        ("all-1", "configmaps"), ("cm", "configmaps"), ("all-2", "configmaps"),
        ("all-1", "secrets"), ("all-2", "secrets"),
        ("all-1", "secrets"), ("all-2", "secrets"), ("secrets", "secrets"),
        ("all-1", "configmaps"), ("cm", "configmaps"), ("all-2", "configmaps")]


def test_a_state_file_holding_raw_html_characters_is_served_escaped(tmp_path: Path) -> None:
    """Objects are stored as Go's encoding/json writes them (``\\u0026`` for ``&``, encode.go
    ``appendString``) and served from those bytes; a state file an older version wrote, with
    the characters raw, is escaped as it is loaded."""
    store = Store(tmp_path / "state.db")
    store.put("/configmaps", cm("a", v="x && y"))
    raw = store.get_raw("/configmaps", "default", "a")
    assert raw is not None and raw.count(b"\\u0026") == 2
    store.close()
    from setpoint.cluster.storage.sqlite import SqliteBackend

    old = SqliteBackend(tmp_path / "state.db")
    old.put("/configmaps", "default", "b", b'{"metadata":{"name":"b"},"data":{"v":"<&>"}}', 1)
    old.close()
    again = Store(tmp_path / "state.db")
    assert again.get_raw("/configmaps", "default", "b") == (
        b'{"metadata":{"name":"b"},"data":{"v":"\\u003c\\u0026\\u003e"}}')
    again.close()


def test_list_by_labels_gives_exactly_the_objects_carrying_them_now() -> None:
    """``Store.list(labels=...)`` (the ClusterRole aggregation's lookups) takes the label
    index's candidates and keeps those whose labels hold every pair now: an object whose
    label was changed or removed since is not listed, one given it later is."""
    store = Store()
    for name, labels in (("a", {"tier": "base"}), ("b", {"tier": "base", "x": "1"}),
                         ("c", {"tier": "top"}), ("d", {})):
        store.put("/configmaps", {**cm(name), "metadata": {
            "name": name, "namespace": "default", "labels": labels}})

    def listed(*pairs: tuple[str, str]) -> list[str]:
        return [o["metadata"]["name"] for o in store.list("/configmaps", labels=pairs)]

    assert listed(("tier", "base")) == ["a", "b"]
    assert listed(("tier", "base"), ("x", "1")) == ["b"]
    assert listed() == ["a", "b", "c", "d"]
    store.put("/configmaps", {**cm("a"), "metadata": {
        "name": "a", "namespace": "default", "labels": {"tier": "top"}}})
    store.put("/configmaps", {**cm("d"), "metadata": {
        "name": "d", "namespace": "default", "labels": {"tier": "base"}}})
    assert listed(("tier", "base")) == ["b", "d"]
    assert listed(("tier", "top")) == ["a", "c"]
    assert store.list("/configmaps", "other", labels=(("tier", "top"),)) == []
