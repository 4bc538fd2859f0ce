"""The namespace controller: deleted namespaces are emptied, reported on, and finalized."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.controllers.namespaceconditions import (
    ContentTotals,
    NamespaceConditionUpdater,
)
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from tests.conftest import SHARED
from tests.waiting import wait_for

USER = WriteOptions(field_manager="tests")
GOLDEN = SHARED / "conformance" / "golden" / "namespace-deletion.json"


async def until(check: Callable[[], Any]) -> Any:
    """Let the loop run until ``check()`` is truthy; return its value."""
    return await wait_for(check)


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=b"CA")
    api.start()
    yield api
    await api.stop()


def create(api: APIServer, resource: str, ns: str | None, body: dict[str, Any],
           group: str = "", version: str = "v1") -> dict[str, Any]:
    return api.rest.create(api.resource(group, version, resource), ns, Decoded(body), USER).obj


def delete_namespace(api: APIServer, name: str) -> None:
    api.rest.delete(api.resource("", "v1", "namespaces"), None, name, DeleteOptions())


def namespace(api: APIServer, name: str) -> dict[str, Any] | None:
    return api.store.get("/namespaces", "", name)


def release(api: APIServer, resource: str, ns: str, name: str) -> None:
    live = api.store.get(f"/{resource}", ns, name)
    assert live is not None
    meta = {k: v for k, v in live["metadata"].items() if k != "finalizers"}
    api.rest.update(api.resource("", "v1", resource), ns, name,
                    Decoded({**live, "metadata": meta}), USER)


def conditions(ns: dict[str, Any]) -> list[dict[str, Any]]:
    return (ns.get("status") or {}).get("conditions") or []


async def test_deleting_a_namespace_removes_its_content_and_then_the_namespace(
        server: APIServer) -> None:
    create(server, "namespaces", None, {"metadata": {"name": "doomed"}})
    create(server, "configmaps", "doomed", {"metadata": {"name": "plain"}})
    create(server, "secrets", "doomed", {"metadata": {"name": "s"}})
    create(server, "leases", "doomed", {"metadata": {"name": "l"}}, "coordination.k8s.io")
    await until(lambda: server.store.get("/serviceaccounts", "doomed", "default"))
    delete_namespace(server, "doomed")
    await until(lambda: namespace(server, "doomed") is None)
    for key in ("/configmaps", "/secrets", "/serviceaccounts", "coordination.k8s.io/leases"):
        assert server.store.list(key, "doomed") == []


async def test_a_finalizer_holds_the_namespace_with_the_real_controllers_conditions(
        server: APIServer) -> None:
    create(server, "namespaces", None, {"metadata": {"name": "doomed"}})
    create(server, "configmaps", "doomed", {"metadata": {"name": "plain"}})
    create(server, "configmaps", "doomed",
           {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    delete_namespace(server, "doomed")
    held = await until(lambda: namespace(server, "doomed") and any(
        c["type"] == "NamespaceFinalizersRemaining" and c["status"] == "True"
        for c in conditions(namespace(server, "doomed") or {})) and namespace(server, "doomed"))
    assert server.store.get("/configmaps", "doomed", "plain") is None
    marked = server.store.get("/configmaps", "doomed", "held")
    assert marked is not None and marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert held["status"]["phase"] == "Terminating"
    assert held["spec"]["finalizers"] == ["kubernetes"]
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else None
    if golden is not None:
        want = golden["steps"][7]["response"]["body"]["status"]["conditions"]
        assert [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                for c in conditions(held)] == [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in want]
    writers = {(e["manager"], e.get("subresource")) for e in held["metadata"]["managedFields"]}
    assert ("kube-controller-manager", "status") in writers


async def test_releasing_the_last_finalizer_lets_the_namespace_go(server: APIServer) -> None:
    create(server, "namespaces", None, {"metadata": {"name": "doomed"}})
    create(server, "configmaps", "doomed",
           {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    delete_namespace(server, "doomed")
    await until(lambda: conditions(namespace(server, "doomed") or {}))
    release(server, "configmaps", "doomed", "held")
    await until(lambda: namespace(server, "doomed") is None)


async def test_content_remaining_message_names_each_resource_and_finalizer(
        server: APIServer) -> None:
    create(server, "namespaces", None, {"metadata": {"name": "doomed"}})
    for kind, name in (("configmaps", "a"), ("configmaps", "b"), ("secrets", "c")):
        create(server, kind, "doomed", {"metadata": {"name": name, "finalizers": [
            "example.com/hold", f"example.com/{kind}"]}})
    create(server, "leases", "doomed", {"metadata": {"name": "l", "finalizers": [
        "example.com/hold"]}}, "coordination.k8s.io")
    delete_namespace(server, "doomed")
    ns = await until(lambda: len(conditions(namespace(server, "doomed") or {})) == 5
                     and namespace(server, "doomed"))
    by_type = {c["type"]: c for c in conditions(ns)}
    assert by_type["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps. has 2 resource instances, "
        "leases.coordination.k8s.io has 1 resource instances, secrets. has 1 resource instances")
    assert by_type["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/configmaps in 2 "
        "resource instances, example.com/hold in 4 resource instances, example.com/secrets in "
        "1 resource instances")


async def test_other_spec_finalizers_keep_the_emptied_namespace(server: APIServer) -> None:
    create(server, "namespaces", None, {"metadata": {"name": "doomed"},
                                        "spec": {"finalizers": ["example.com/ns"]}})
    create(server, "configmaps", "doomed", {"metadata": {"name": "plain"}})
    delete_namespace(server, "doomed")
    ns = await until(lambda: (namespace(server, "doomed") or {}).get("spec", {}).get(
        "finalizers") == ["example.com/ns"] and namespace(server, "doomed"))
    assert server.store.list("/configmaps", "doomed") == []
    by_type = {c["type"]: c for c in conditions(ns)}
    assert by_type["NamespaceContentRemaining"] == {
        **by_type["NamespaceContentRemaining"], "status": "False", "reason": "ContentRemoved",
        "message": "All content successfully removed"}


async def test_custom_resources_in_the_namespace_are_deleted(server: APIServer) -> None:
    crd = {"metadata": {"name": "widgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    create(server, "customresourcedefinitions", None, crd, "apiextensions.k8s.io")
    await until(lambda: server.registry.get("example.com", "v1", "widgets"))
    create(server, "namespaces", None, {"metadata": {"name": "doomed"}})
    create(server, "widgets", "doomed", {"apiVersion": "example.com/v1", "kind": "Widget",
                                         "metadata": {"name": "w"}}, "example.com")
    delete_namespace(server, "doomed")
    await until(lambda: namespace(server, "doomed") is None)
    assert server.store.list("example.com/widgets", "doomed") == []


def test_conditions_keep_their_transition_time_while_status_stays() -> None:
    times = iter(["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11", "t12"])
    status: dict[str, Any] = {}
    first = NamespaceConditionUpdater(lambda: next(times))
    first.process_content_totals(ContentTotals({"configmaps.": 1}, {"x/y": 1}))
    assert first.update(status)
    remaining = next(c for c in status["conditions"] if c["type"] == "NamespaceContentRemaining")
    stamped = remaining["lastTransitionTime"]
    second = NamespaceConditionUpdater(lambda: next(times))
    second.process_content_totals(ContentTotals({"configmaps.": 2}, {"x/y": 2}))
    assert second.update(status)
    remaining = next(c for c in status["conditions"] if c["type"] == "NamespaceContentRemaining")
    assert remaining["lastTransitionTime"] == stamped
    assert remaining["message"] == "Some resources are remaining: configmaps. has 2 resource " \
                                   "instances"
    third = NamespaceConditionUpdater(lambda: "later")
    third.process_content_totals(ContentTotals())
    assert third.update(status)
    remaining = next(c for c in status["conditions"] if c["type"] == "NamespaceContentRemaining")
    assert (remaining["status"], remaining["lastTransitionTime"]) == ("False", "later")
    assert not NamespaceConditionUpdater(lambda: "never").update(status)


def test_content_failures_are_sorted_into_one_condition() -> None:
    status: dict[str, Any] = {}
    updater = NamespaceConditionUpdater(lambda: "now")
    updater.process_delete_content_error("z failed")
    updater.process_delete_content_error("a failed")
    updater.update(status)
    failure = next(c for c in status["conditions"]
                   if c["type"] == "NamespaceDeletionContentFailure")
    assert failure == {"type": "NamespaceDeletionContentFailure", "status": "True",
                       "lastTransitionTime": "now", "reason": "ContentDeletionFailed",
                       "message": "Failed to delete all resource types, 2 remaining: a failed, "
                                  "z failed"}


async def test_a_terminating_namespace_is_finished_after_a_restart(tmp_path: Any) -> None:
    first = APIServer(tmp_path, ca_pem=b"CA")
    first.start()
    create(first, "namespaces", None, {"metadata": {"name": "doomed"}})
    create(first, "configmaps", "doomed",
           {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    delete_namespace(first, "doomed")
    await until(lambda: conditions(namespace(first, "doomed") or {}))
    await first.stop()
    second = APIServer(tmp_path, ca_pem=b"CA")
    second.start()
    try:
        release(second, "configmaps", "doomed", "held")
        await until(lambda: namespace(second, "doomed") is None)
    finally:
        await second.stop()
