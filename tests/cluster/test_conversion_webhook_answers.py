"""A conversion webhook's answer may change an object's labels and annotations, nothing else of
its metadata, and only to what validation allows: what it returns otherwise fails the request
and is never stored (k8s.io/apiextensions-apiserver pkg/apiserver/conversion/
webhook_converter.go ``validateConvertedObject`` and ``restoreObjectMeta``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API
from tests.cluster.test_conversion_webhooks import V1, V2, convert, hooks, widget, widgets
from tests.hookserver import Hooks

__all__ = ["hooks", "widgets"]  # the fixtures, shared with test_conversion_webhooks

Obj = dict[str, Any]


def answering(change: Callable[[Obj], None]) -> Callable[[Obj], Obj]:
    """The fixture's webhook, with ``change`` applied to each converted object's metadata."""
    def handler(request: Obj) -> Obj:
        answer = convert(request)
        for obj in answer["convertedObjects"]:
            obj["metadata"] = {k: v for k, v in obj["metadata"].items()
                               if k not in ("labels", "name")}
            obj["metadata"]["name"] = request["objects"][0]["metadata"]["name"]
            change(obj["metadata"])
        return answer
    return handler


def _set(key: str, value: Any) -> Callable[[Obj], None]:
    return lambda meta: meta.__setitem__(key, value)


# (change, which check refuses it, why): ``validateConvertedObject`` checks the object,
# ``restoreObjectMeta`` its metadata
REFUSED = [
    # validateConvertedObject: name, namespace and UID must be those sent
    (_set("name", "renamed"), "object", "must have the same name: w != renamed"),
    (_set("namespace", "kube-system"), "object",
     "must have the same namespace: default != kube-system"),
    (_set("uid", "another"), "object", "must have the same UID: {uid} != another"),
    # restoreObjectMeta: labels and annotations are string maps that validation accepts
    (_set("labels", {"size": 3}), "metadata",
     "metadata.labels[size] must be a string, but is int64 in converted object"),
    (_set("labels", ["a"]), "metadata",
     "invalid metadata.labels of type []interface {} in converted object"),
    (_set("labels", {"a": "not a label value!"}), "metadata",
     "metadata.labels: Invalid value: "
     "\"not a label value!\": a valid label must be an empty string or consist of "
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
     "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    (_set("annotations", {"bad key": "x"}), "metadata",
     "metadata.annotation: Invalid value: "
     "\"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and "
     "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
     "'123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
]
# webhook_converter.go ``Convert`` words the two checks differently for one object than
# for a list's items
SINGLE = {"object": "returned invalid object: ", "metadata": "returned invalid metadata: "}
LISTED = {"object": "returned invalid converted object at index 0: ",
          "metadata": "returned invalid metadata in object at index 0: "}


@pytest.mark.usefixtures("widgets")
@pytest.mark.parametrize(("change", "check", "reason"), REFUSED,
                         ids=["name", "namespace", "uid", "label-type", "labels-type",
                              "label-value", "annotation-key"])
async def test_an_answer_that_changes_more_than_labels_and_annotations_fails(
        api: API, hooks: Hooks, cluster: RunningCluster,
        change: Callable[[Obj], None], check: str, reason: str) -> None:
    assert (await api.post(V1, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": "w"}, "spec": {"size": 1}}))[0] == 201
    status, stored = await api.get(f"{V1}/w")
    hooks.on("/convert", answering(change))
    expected = reason.replace("{uid}", stored["metadata"]["uid"])
    # one object read: the single object's words, naming the version it was converted from
    status, body = await api.get(f"{V2}/w")
    assert status == 500, body
    assert body["message"] == ("Internal error occurred: conversion webhook for "
                               f"example.com/v1, Kind=Widget {SINGLE[check]}{expected}"), \
        body["message"]
    # a list's items: the list's words
    status, body = await api.get(V2)
    assert status == 500, body
    assert body["message"].endswith(f"{LISTED[check]}{expected}"), body["message"]
    # a write converted for storage by such an answer stores nothing
    status, _ = await api.post(V2, widget("new", 2))
    assert status == 500
    assert cluster.api.store.get("example.com/widgets", "default", "new") is None


@pytest.mark.usefixtures("widgets")
async def test_an_answer_of_another_kind_fails_in_the_single_objects_words(
        api: API, hooks: Hooks) -> None:
    """webhook_converter.go ``Convert``: one object's kind check says "returned invalid
    object at index 0", naming ``in``'s kind: the written object's version."""
    def renamed_kind(request: Obj) -> Obj:
        answer = convert(request)
        for obj in answer["convertedObjects"]:
            obj["kind"] = "Gadget"
        return answer

    hooks.on("/convert", renamed_kind)
    status, body = await api.post(V2, widget("g", 2))
    assert status == 500, body
    assert body["message"] == (
        "Internal error occurred: conversion webhook for example.com/v2, Kind=Widget returned "
        "invalid object at index 0: invalid kind (expected Widget, received Gadget)")


@pytest.mark.usefixtures("widgets")
async def test_labels_and_annotations_a_webhook_sets_validly_are_kept(
        api: API, hooks: Hooks) -> None:
    hooks.on("/convert", answering(lambda meta: meta.update(
        labels={"converted": "yes"}, annotations={"example.com/by": "webhook"})))
    status, created = await api.post(V2, widget("w", 2))
    assert status == 201, created
    assert created["metadata"]["labels"] == {"converted": "yes"}
    assert created["metadata"]["annotations"] == {"example.com/by": "webhook"}
