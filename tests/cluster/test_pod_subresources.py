"""pods/binding and pods/eviction: assignment to nodes, and evictions under disruption budgets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery.errors import StatusError

USER = WriteOptions(field_manager="tests")
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
           "code": 201}


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=b"CA")
    api.start()
    yield api
    await api.stop()


def pods(api: APIServer) -> Any:
    return api.resource("", "v1", "pods")


def make_pod(api: APIServer, name: str = "p", labels: dict[str, str] | None = None,
             phase: str | None = None, ready: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {"app": "x"}},
                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    created = api.rest.create(pods(api), "default", Decoded(body), USER).obj
    if phase is None:
        return created
    status: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}
    return api.rest.update(pods(api), "default", name, Decoded({**created, "status": status}),
                           USER, "status").obj


def get_pod(api: APIServer, name: str = "p") -> dict[str, Any] | None:
    return api.store.get("/pods", "default", name)


def binding(name: str = "p", node: str = "node-1", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **meta},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def eviction(name: str = "p", **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


def make_budget(api: APIServer, name: str = "budget", *, allowed: int = 0,
                observed: bool = True, **spec: Any) -> dict[str, Any]:
    rt = api.resource("policy", "v1", "poddisruptionbudgets")
    created = api.rest.create(rt, "default", Decoded({
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "minAvailable": 1, **spec}}),
        USER).obj
    status = {"observedGeneration": created["metadata"]["generation"] if observed else 0,
              "disruptionsAllowed": allowed, "currentHealthy": 1 + allowed,
              "desiredHealthy": 1, "expectedPods": 1 + allowed}
    return api.rest.update(rt, "default", name, Decoded({**created, "status": status}), USER,
                           "status").obj


def budget(api: APIServer, name: str = "budget") -> dict[str, Any]:
    found = api.store.get("policy/poddisruptionbudgets", "default", name)
    assert found is not None
    return found


# -- binding -------------------------------------------------------------------------------

async def test_binding_assigns_the_node_and_marks_the_pod_scheduled(server: APIServer) -> None:
    before = make_pod(server)
    out = server.pod_binding.bind(pods(server), "default", "p",
               binding(annotations={"scheduler.example.com/why": "fits"}))
    assert out == SUCCESS
    pod = get_pod(server)
    assert pod is not None
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["metadata"]["annotations"] == {"scheduler.example.com/why": "fits"}
    [condition] = pod["status"]["conditions"]
    assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == {
        "type": "PodScheduled", "status": "True", "lastProbeTime": None}
    assert pod["metadata"]["managedFields"] == before["metadata"]["managedFields"]


async def test_binding_copies_nothing_it_read_for_itself(
        server: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A binding changes the pod the store decoded for it alone (BindingREST's
    ``setPodNodeAndMetadata`` updates the object GuaranteedUpdate decoded for it:
    pkg/registry/core/pod/storage/storage.go): no deep copy of the whole pod per binding,
    and the object stored is the pod with its node, as before."""
    import copy

    make_pod(server)
    copies: list[Any] = []
    real_deepcopy = copy.deepcopy

    def counting_deepcopy(value: Any, *args: Any) -> Any:
        copies.append(value)
        return real_deepcopy(value, *args)

    monkeypatch.setattr(copy, "deepcopy", counting_deepcopy)
    assert server.pod_binding.bind(pods(server), "default", "p", binding()) == SUCCESS
    assert copies == []
    pod = get_pod(server)
    assert pod is not None and pod["spec"]["nodeName"] == "node-1"


async def test_binding_a_bound_pod_is_a_conflict(server: APIServer) -> None:
    make_pod(server)
    server.pod_binding.bind(pods(server), "default", "p", binding())
    with pytest.raises(StatusError) as caught:
        server.pod_binding.bind(pods(server), "default", "p", binding(node="node-2"))
    assert caught.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods/binding "p": pod p is already '
                   'assigned to node "node-1"',
        "reason": "Conflict", "details": {"name": "p", "kind": "pods/binding"}, "code": 409}


async def test_binding_checks_its_body(server: APIServer) -> None:
    make_pod(server)
    with pytest.raises(StatusError) as caught:
        server.pod_binding.bind(pods(server), "default", "p", binding(name="other"))
    assert (caught.value.code, caught.value.message) == (
        400, "name in URL does not match name in Binding object")
    no_target = binding()
    no_target["target"] = {}
    with pytest.raises(StatusError) as caught:
        server.pod_binding.bind(pods(server), "default", "p", no_target)
    assert (caught.value.code, caught.value.message) == (500, "target.name: Required value")
    with pytest.raises(StatusError) as caught:
        server.pod_binding.bind(pods(server), "default", "p", binding(uid="not-the-pods-uid"))
    assert caught.value.code == 409 and "UID in precondition: not-the-pods-uid" in str(
        caught.value)


async def test_binding_a_missing_pod_is_not_found(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.pod_binding.bind(pods(server), "default", "p", binding())
    assert caught.value.message == 'pods "p" not found'


# -- eviction ------------------------------------------------------------------------------

async def test_a_pending_pod_is_evicted_whatever_its_budget(server: APIServer) -> None:
    make_pod(server)
    make_budget(server, allowed=0)
    assert server.pod_eviction.evict(pods(server), "default", "p", {}, eviction()) == SUCCESS
    assert get_pod(server) is None


async def test_a_running_pod_without_a_budget_is_evicted(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=True)
    assert server.pod_eviction.evict(pods(server), "default", "p", {}, eviction()) == SUCCESS
    assert get_pod(server) is None


async def test_a_budget_without_room_refuses_the_eviction(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=True)
    make_budget(server, allowed=0)
    with pytest.raises(StatusError) as caught:
        server.pod_eviction.evict(pods(server), "default", "p", {}, eviction())
    assert caught.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests", "details": {"causes": [{
            "reason": "DisruptionBudget",
            "message": "The disruption budget budget needs 1 healthy pods and has 1 currently"}]},
        "code": 429}
    assert get_pod(server) is not None


async def test_a_budget_not_yet_observed_asks_to_retry(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=True)
    make_budget(server, allowed=1, observed=False)
    with pytest.raises(StatusError) as caught:
        server.pod_eviction.evict(pods(server), "default", "p", {}, eviction())
    status = caught.value.to_status()
    assert status["code"] == 429 and status["details"]["retryAfterSeconds"] == 10
    assert status["details"]["causes"][0]["message"] == (
        "The disruption budget budget is still being processed by the server.")


async def test_an_allowed_eviction_consumes_the_budget(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=True)
    make_budget(server, allowed=1)
    assert server.pod_eviction.evict(pods(server), "default", "p", {}, eviction()) == SUCCESS
    assert get_pod(server) is None
    status = budget(server)["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["p"]
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed", "False", "InsufficientPods")


async def test_a_dry_run_eviction_changes_nothing(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=True)
    before = make_budget(server, allowed=1)
    assert server.pod_eviction.evict(pods(server), "default", "p", {},
                                     eviction(dryRun=["All"])) == SUCCESS
    assert get_pod(server) is not None
    assert budget(server) == before


async def test_an_unhealthy_pod_is_evicted_without_using_the_budget(server: APIServer) -> None:
    make_pod(server, phase="Running", ready=False)
    make_budget(server, allowed=0, unhealthyPodEvictionPolicy="AlwaysAllow")
    assert server.pod_eviction.evict(pods(server), "default", "p", {}, eviction()) == SUCCESS
    assert get_pod(server) is None
    assert budget(server)["status"]["disruptionsAllowed"] == 0


async def test_two_budgets_for_one_pod_are_not_supported(server: APIServer) -> None:
    """eviction.go Create returns (not raises) a Failure Status with code 500, which the
    create handler writes with its 201; the pod stays."""
    make_pod(server, phase="Running", ready=True)
    make_budget(server, "one", allowed=1)
    make_budget(server, "two", allowed=1)
    assert server.pod_eviction.evict(pods(server), "default", "p", {}, eviction()) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
                   "subresource does not support.", "code": 500}


async def test_eviction_checks_its_body_and_the_pod(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        server.pod_eviction.evict(pods(server), "default", "p", {}, eviction())
    assert caught.value.message == 'pods "p" not found'
    with pytest.raises(StatusError) as caught:
        server.pod_eviction.evict(pods(server), "default", "p", {}, eviction("q"))
    assert caught.value.message == "name in URL does not match name in Eviction object"


# -- over HTTP -----------------------------------------------------------------------------

async def test_binding_and_eviction_answer_201_over_http(api: Any) -> None:
    status, _ = await api.post("/api/v1/namespaces/default/pods", {
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201
    assert await api.post("/api/v1/namespaces/default/pods/p/binding", binding()) == (
        201, SUCCESS)
    status, body = await api.post("/api/v1/namespaces/default/pods/p/binding", binding())
    assert (status, body["reason"]) == (409, "Conflict")
    assert await api.post("/api/v1/namespaces/default/pods/p/eviction", eviction()) == (
        201, SUCCESS)
    status, pod = await api.get("/api/v1/namespaces/default/pods/p")
    assert status == 200 and pod["metadata"]["deletionTimestamp"]
