"""LIST pagination and selectors, WATCH replay, filters, bookmarks and expiry."""

from __future__ import annotations

import asyncio
import base64
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API

NS = "/api/v1/namespaces/default/configmaps"


async def make(api: API, name: str, **labels: str) -> dict[str, Any]:
    status, body = await api.post(NS, {"metadata": {"name": name, "labels": labels}})
    assert status == 201, body
    assert isinstance(body, dict)
    return body


async def test_paginated_list_is_a_consistent_snapshot(api: API) -> None:
    for i in range(5):
        await make(api, f"c{i}", page="yes")
    _, first = await api.get(NS + "?limit=2&labelSelector=page%3Dyes")
    assert [i["metadata"]["name"] for i in first["items"]] == ["c0", "c1"]
    token = first["metadata"]["continue"]
    await make(api, "b-late", page="yes")
    await api.delete(NS + "/c3")
    _, second = await api.get(NS + f"?limit=2&labelSelector=page%3Dyes&continue={token}")
    assert [i["metadata"]["name"] for i in second["items"]] == ["c2", "c3"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_remaining_item_count_without_selectors(api: API) -> None:
    for i in range(3):
        await make(api, f"r{i}")
    _, page = await api.get(NS + "?limit=1")
    total = len((await api.get(NS))[1]["items"])
    assert page["metadata"]["remainingItemCount"] == total - 1


async def test_continue_with_resource_version_is_400(api: API) -> None:
    await make(api, "a")
    await make(api, "b")
    _, page = await api.get(NS + "?limit=1")
    status, body = await api.get(NS + f"?limit=1&continue={page['metadata']['continue']}"
                                 "&resourceVersion=1")
    assert status == 400 and "continue" in body["message"]


async def test_label_selector_operators(api: API) -> None:
    await make(api, "prod", env="prod", tier="web")
    await make(api, "dev", env="dev")
    await make(api, "none")

    async def names(selector: str) -> list[str]:
        status, body = await api.get(NS + "?labelSelector=" + selector)
        assert status == 200, body
        found = [i["metadata"]["name"] for i in body["items"]]
        return [n for n in found if n != "kube-root-ca.crt"]

    assert await names("env%3Dprod") == ["prod"]
    assert await names("env!%3Dprod") == ["dev", "none"]
    assert await names("env%20in%20(dev,prod)") == ["dev", "prod"]
    assert await names("env%20notin%20(dev)") == ["none", "prod"]
    assert await names("tier") == ["prod"]
    assert await names("!env") == ["none"]


async def test_bad_label_selector_is_400(api: API) -> None:
    status, body = await api.get(NS + "?labelSelector=a%20in%20(")
    assert status == 400 and body["reason"] == "BadRequest"


async def test_unsupported_field_selector_is_400(api: API) -> None:
    status, _ = await api.get(NS + "?fieldSelector=spec.nothing%3Dx")
    assert status == 400


async def read_events(cluster: RunningCluster, api: API, query: str,
                      count: int, timeout: float = 5) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with api.session.get(cluster.url + NS + "?watch=true&" + query,
                               ssl=api.ssl) as resp:
        assert resp.status == 200

        async def read() -> None:
            async for line in resp.content:
                events.append(orjson.loads(line))
                if len(events) == count:
                    return

        await asyncio.wait_for(read(), timeout)
    return events


async def test_watch_replays_changes_after_a_resource_version(cluster: RunningCluster,
                                                              api: API) -> None:
    created = await make(api, "w1")
    rv = created["metadata"]["resourceVersion"]
    await api.patch(NS + "/w1", {"data": {"a": "1"}}, "application/merge-patch+json")
    await api.delete(NS + "/w1")
    events = await read_events(cluster, api, f"resourceVersion={rv}", 2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        events[0]["object"]["metadata"]["resourceVersion"])


async def test_watch_without_version_starts_with_the_current_objects(cluster: RunningCluster,
                                                                     api: API) -> None:
    await make(api, "existing", w="x")
    events = await read_events(cluster, api, "labelSelector=w%3Dx", 1)
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["metadata"]["name"] == "existing"


async def test_watch_reports_objects_leaving_the_selector_as_deleted(cluster: RunningCluster,
                                                                    api: API) -> None:
    created = await make(api, "mover", keep="yes")
    rv = created["metadata"]["resourceVersion"]
    await api.patch(NS + "/mover", {"metadata": {"labels": {"keep": "no"}}},
                    "application/merge-patch+json")
    await api.patch(NS + "/mover", {"metadata": {"labels": {"keep": "yes"}}},
                    "application/merge-patch+json")
    events = await read_events(cluster, api, f"resourceVersion={rv}&labelSelector=keep%3Dyes", 2)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]
    assert events[0]["object"]["metadata"]["labels"] == {"keep": "yes"}


async def test_watch_from_a_compacted_version_gets_410(cluster: RunningCluster,
                                                       api: API) -> None:
    events = await read_events(cluster, api, "resourceVersion=1", 1)
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


async def test_send_initial_events_ends_with_a_bookmark(cluster: RunningCluster,
                                                        api: API) -> None:
    await make(api, "init", i="y")
    events = await read_events(
        cluster, api, "labelSelector=i%3Dy&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true", 2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    blueprint = base64.b64decode(annotations["kubernetes.io/initial-events-list-blueprint"])
    assert orjson.loads(blueprint) == {"kind": "ConfigMapList", "apiVersion": "v1",
                                       "metadata": {}, "items": None}


async def test_watch_ends_at_its_timeout(cluster: RunningCluster, api: API) -> None:
    async with api.session.get(cluster.url + NS + "?watch=true&timeoutSeconds=1",
                               ssl=api.ssl) as resp:
        body = await asyncio.wait_for(resp.read(), 30)
    assert resp.status == 200 and isinstance(body, bytes)


async def test_watchers_get_the_stored_json_not_an_encoding_each(
        cluster: RunningCluster, api: API, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object served as stored goes to every watcher as the JSON the store wrote, not
    encoded again per watcher (kube-apiserver's cacher encodes an event once per format for
    all its watchers: k8s.io/apiserver/pkg/storage/cacher/caching_object.go); a watch with
    a selector gets the same bytes as one without, and the same object a GET gives."""
    from setpoint.cluster.endpoints import collections as collections_module

    encoded: list[str] = []

    def counting_dumps(value: Any, *args: Any, **kwargs: Any) -> bytes:
        if isinstance(value, dict) and isinstance(value.get("object"), dict):
            encoded.append(value["type"])
        return orjson.dumps(value, *args, **kwargs)

    counting = SimpleNamespace(dumps=counting_dumps, loads=orjson.loads,
                               Fragment=orjson.Fragment)
    monkeypatch.setattr(collections_module, "orjson", counting)
    created = await make(api, "shared", fan="out")
    rv = created["metadata"]["resourceVersion"]
    await api.patch(NS + "/shared", {"data": {"a": "1"}}, "application/merge-patch+json")
    plain = await read_events(cluster, api, f"resourceVersion={rv}", 1)
    selected = await read_events(cluster, api, f"resourceVersion={rv}&labelSelector=fan%3Dout", 1)
    _, live = await api.get(NS + "/shared")
    assert plain == selected and plain[0]["type"] == "MODIFIED"
    assert plain[0]["object"] == live
    assert encoded == []
