"""CRD conversion webhooks: objects change version only through the webhook, on every path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.cluster.test_list_paging import readyz_during_list
from tests.hookserver import Hooks
from tests.waiting import wait_for

Obj = dict[str, Any]

V1 = "/apis/example.com/v1/namespaces/default/widgets"
V2 = "/apis/example.com/v2/namespaces/default/widgets"


def convert(request: Obj) -> Obj:
    """v1 keeps ``spec.size``, v2 calls it ``spec.replicas``."""
    desired = request["desiredAPIVersion"]
    out = []
    for obj in request["objects"]:
        spec = dict(obj.get("spec") or {})
        if desired == "example.com/v2" and "size" in spec:
            spec["replicas"] = spec.pop("size")
        if desired == "example.com/v1" and "replicas" in spec:
            spec["size"] = spec.pop("replicas")
        metadata = {**obj["metadata"], "labels": {**(obj["metadata"].get("labels") or {}),
                                                   "converted-to": desired.split("/")[1]}}
        out.append({**obj, "apiVersion": desired, "spec": spec, "metadata": metadata})
    return {"convertedObjects": out, "result": {"status": "Success"}}


def version(name: str, field: str, *, storage: bool) -> Obj:
    return {"name": name, "served": True, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}}}


@pytest.fixture
async def hooks(tmp_path: Path) -> AsyncIterator[Hooks]:
    server = Hooks(tmp_path)
    server.on("/convert", convert)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def widgets(api: API, hooks: Hooks, cluster: RunningCluster) -> None:
    status, body = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "listKind": "WidgetList"},
                 "versions": [version("v1", "size", storage=True),
                              version("v2", "replicas", storage=False)],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"],
                     "clientConfig": {"url": hooks.url("/convert"),
                                      "caBundle": hooks.ca_bundle}}}}})
    assert status == 201, body
    async def served() -> bool:
        return (await api.get(V2))[0] == 200

    await wait_for(served)


def widget(name: str, replicas: int) -> Obj:
    return {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": name},
            "spec": {"replicas": replicas}}


@pytest.mark.usefixtures("widgets")
async def test_objects_are_stored_and_served_through_the_webhook(
        api: API, hooks: Hooks, cluster: RunningCluster) -> None:
    status, created = await api.post(V2, widget("w", 3))
    assert status == 201, created
    assert created["apiVersion"] == "example.com/v2" and created["spec"] == {"replicas": 3}
    # the labels come from the webhook (what else of the metadata it may not change:
    # tests/cluster/test_conversion_webhook_answers.py)
    assert created["metadata"]["name"] == "w"
    assert created["metadata"]["labels"] == {"converted-to": "v2"}
    stored = cluster.api.store.get("example.com/widgets", "default", "w")
    assert stored is not None
    assert stored["apiVersion"] == "example.com/v1" and stored["spec"] == {"size": 3}

    assert (await api.get(f"{V1}/w"))[1]["spec"] == {"size": 3}
    assert (await api.get(f"{V2}/w"))[1]["spec"] == {"replicas": 3}

    status, patched = await api.patch(f"{V2}/w", {"spec": {"replicas": 5}},
                                      "application/merge-patch+json")
    assert status == 200, patched
    assert patched["spec"] == {"replicas": 5}
    stored = cluster.api.store.get("example.com/widgets", "default", "w")
    assert stored is not None and stored["spec"] == {"size": 5}
    reviews = [c["review"] for c in hooks.calls["/convert"]]
    assert all(r["kind"] == "ConversionReview" and r["apiVersion"] == "apiextensions.k8s.io/v1"
               for r in reviews)


@pytest.mark.usefixtures("widgets")
async def test_a_list_converts_its_page_in_one_review(api: API, hooks: Hooks) -> None:
    for i in range(3):
        assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                    "metadata": {"name": f"w{i}"}, "spec": {"size": i}}))[0] \
            == 201
    assert hooks.calls["/convert"] == []  # created at the storage version: nothing to convert
    status, listed = await api.get(V2)
    assert status == 200
    assert [i["spec"] for i in listed["items"]] == [{"replicas": 0}, {"replicas": 1},
                                                    {"replicas": 2}]
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v2"] * 3
    [call] = hooks.calls["/convert"]
    assert len(call["review"]["request"]["objects"]) == 3


@pytest.mark.usefixtures("widgets")
async def test_a_watch_sends_converted_objects(api: API) -> None:
    url = f"{api.cluster.url}{V2}?watch=true&timeoutSeconds=5"
    async with api.session.get(url, ssl=api.ssl) as resp:
        assert resp.status == 200
        assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                    "metadata": {"name": "seen"}, "spec": {"size": 7}}))[0] \
            == 201
        event = orjson.loads(await resp.content.readline())
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "example.com/v2"
    assert event["object"]["spec"] == {"replicas": 7}


@pytest.mark.usefixtures("widgets")
async def test_a_failing_webhook_fails_only_what_needs_it(api: API, hooks: Hooks) -> None:
    assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w"}, "spec": {"size": 1}}))[0] == 201
    hooks.on("/convert", lambda r: {"result": {"status": "Failure", "message": "v2 is closed"}})
    status, body = await api.get(f"{V2}/w")
    assert status == 500 and body["reason"] == "InternalError"
    # webhook_converter.go ``Convert`` names ``in``'s kind: the stored object's version
    assert body["message"] == ("Internal error occurred: conversion webhook for example.com/v1, "
                               "Kind=Widget failed: conversion webhook returned failure: "
                               "v2 is closed")
    assert (await api.get(f"{V1}/w"))[0] == 200
    status, body = await api.post(V2, widget("new", 1))
    assert status == 500
    assert (await api.get(f"{V1}/new"))[0] == 404  # nothing stored


@pytest.mark.usefixtures("widgets")
async def test_the_namespace_controller_deletes_converted_objects_without_the_webhook(
        api: API, hooks: Hooks) -> None:
    status, _ = await api.post("/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    assert status == 201
    doomed = "/apis/example.com/v2/namespaces/doomed/widgets"
    assert (await api.post(doomed, widget("w", 1)))[0] == 201
    hooks.on("/convert", lambda r: {"result": {"status": "Failure", "message": "down"}})
    assert (await api.delete("/api/v1/namespaces/doomed"))[0] == 200
    async def removed() -> bool:
        return (await api.get("/api/v1/namespaces/doomed"))[0] == 404

    await wait_for(removed)


@pytest.mark.usefixtures("widgets")
async def test_tables_of_a_converted_resource_show_the_served_version(api: API) -> None:
    assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "t"}, "spec": {"size": 2}}))[0] == 201
    table = "application/json;as=Table;g=meta.k8s.io;v=v1"
    status, body = await api.get(V2, headers={"Accept": table})
    assert status == 200 and body["kind"] == "Table"
    [row] = body["rows"]
    assert row["object"]["metadata"]["name"] == "t"
    url = f"{api.cluster.url}{V2}?watch=true&timeoutSeconds=5"
    async with api.session.get(url, ssl=api.ssl, headers={"Accept": table}) as resp:
        event = orjson.loads(await resp.content.readline())
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["object"]["metadata"]["name"] == "t"


@pytest.mark.usefixtures("widgets")
async def test_readyz_is_answered_while_a_large_converted_list_is_served(
        api: API, hooks: Hooks, cluster: RunningCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A LIST converted by the webhook leaves the loop free too: the page is converted in
    one review (apiextensions-apiserver webhook_converter.go converts a list's items
    together), then defaulted and encoded a chunk at a time like every other list."""
    for i in range(20_000):
        cluster.api.store.put("example.com/widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {
                "name": f"w-{i:06d}", "namespace": "default", "uid": f"uid-{i}",
                "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": {"size": i}})

    def count(body: bytes) -> int:
        items = orjson.loads(body)["items"]
        assert items[-1]["spec"] == {"replicas": 19_999}
        return len(items)

    assert await readyz_during_list(cluster, api, monkeypatch, V2, "application/json",
                                    count) == 20_000
    [call] = hooks.calls["/convert"]
    assert len(call["review"]["request"]["objects"]) == 20_000


def paint(request: Obj) -> Obj:
    """v1 has ``spec.color``; v2 ``spec.paint``, the color with "-v2" added."""
    desired = request["desiredAPIVersion"]
    out = []
    for obj in request["objects"]:
        spec = dict(obj.get("spec") or {})
        if desired.endswith("/v2") and "color" in spec:
            spec["paint"] = spec.pop("color") + "-v2"
        if desired.endswith("/v1") and "paint" in spec:
            spec["color"] = spec.pop("paint").removesuffix("-v2")
        out.append({**obj, "apiVersion": desired, "spec": spec})
    return {"convertedObjects": out, "result": {"status": "Success"}}


async def test_field_selectors_see_the_object_converted_to_the_version_asked_for(
        api: API, hooks: Hooks) -> None:
    """apiextensions customresource_handler.go gives each served version its own storage,
    whose codec converts what etcd holds to that version (through the webhook) before the
    version's cacher filters it: strategy.go GetAttrs/SelectableFields read the version's
    own selectableFields on the converted object, for a LIST, its pages, and a WATCH."""
    hooks.on("/paint", paint)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

    def painted(name: str, field: str, storage: bool) -> Obj:
        return {"name": name, "served": True, "storage": storage,
                "selectableFields": [{"jsonPath": f".spec.{field}"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}}

    status, body = await api.post(crds, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pots.paint.example.com"},
        "spec": {"group": "paint.example.com", "scope": "Namespaced",
                 "names": {"plural": "pots", "singular": "pot", "kind": "Pot"},
                 "versions": [painted("v1", "color", True), painted("v2", "paint", False)],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"],
                     "clientConfig": {"url": hooks.url("/paint"),
                                      "caBundle": hooks.ca_bundle}}}}})
    assert status == 201, body
    v1 = "/apis/paint.example.com/v1/namespaces/default/pots"
    v2 = "/apis/paint.example.com/v2/namespaces/default/pots"

    async def served() -> bool:
        return (await api.get(v2))[0] == 200

    await wait_for(served)
    for name, color in (("a", "red"), ("b", "blue"), ("c", "red")):
        status, body = await api.post(v1, {"apiVersion": "paint.example.com/v1", "kind": "Pot",
                                           "metadata": {"name": name},
                                           "spec": {"color": color}})
        assert status == 201, body
    red = "fieldSelector=spec.paint%3Dred-v2"
    status, listed = await api.get(f"{v2}?{red}")
    assert status == 200, listed
    assert [(o["metadata"]["name"], o["spec"]) for o in listed["items"]] == [
        ("a", {"paint": "red-v2"}), ("c", {"paint": "red-v2"})]
    status, first = await api.get(f"{v2}?{red}&limit=1")
    assert [o["metadata"]["name"] for o in first["items"]] == ["a"]
    assert first["metadata"]["continue"]
    status, second = await api.get(f"{v2}?{red}&limit=1&continue={first['metadata']['continue']}")
    assert status == 200, second
    assert [o["metadata"]["name"] for o in second["items"]] == ["c"]
    assert second["metadata"].get("continue", "") == ""
    assert (await api.get(f"{v1}?fieldSelector=spec.color%3Dred"))[1]["items"][0]["spec"] == {
        "color": "red"}
    url = (f"{api.cluster.url}{v2}?watch=true&{red}"
           f"&resourceVersion={listed['metadata']['resourceVersion']}")
    async with api.session.get(url, ssl=api.ssl) as resp:
        merge = "application/merge-patch+json"
        assert (await api.patch(f"{v1}/b", {"spec": {"color": "red"}}, merge))[0] == 200
        assert (await api.patch(f"{v1}/a", {"spec": {"color": "green"}}, merge))[0] == 200
        events = [orjson.loads(await resp.content.readline()) for _ in range(2)]
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["spec"])
            for e in events] == [("ADDED", "b", {"paint": "red-v2"}),
                                 ("DELETED", "a", {"paint": "red-v2"})]


@pytest.mark.usefixtures("widgets")
async def test_a_list_converts_before_its_representation_is_checked(
        api: API, hooks: Hooks) -> None:
    """The CR storage's List converts (r.List), and only then does transformResponseObject
    check the Table options and refuse PartialObjectMetadata for a list: a failing webhook's
    500 comes first.
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go (ListResource: r.List,
    then transformResponseObject), response.go (optionsForTransform, doTransformObject)."""
    assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w"}, "spec": {"size": 1}}))[0] == 201
    hooks.on("/convert", lambda r: {"result": {"status": "Failure", "message": "v2 is closed"}})
    for accept, query in (("application/json;as=Table;v=v1;g=meta.k8s.io",
                           "?includeObject=Everything"),
                          ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "")):
        status, body = await api.get(f"{V2}{query}", headers={"Accept": accept})
        assert (status, body["reason"]) == (500, "InternalError"), body
