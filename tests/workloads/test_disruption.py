"""PodDisruptionBudget status, and evictions that respect it."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import Client, Kind, TooManyRequestsError
from setpoint.workloads.controllers import disruption, statefulset
from tests.workloads.podsim import wait_for, workload_cluster

PDB = Kind("policy/v1", "PodDisruptionBudget")
POD = Kind("v1", "Pod")
NS = "default"


def budget(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def stateful_set(replicas: int = 3) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "serviceName": "web",
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def pdb_status(client: Client, name: str = "web") -> dict[str, Any]:
    return dict((await client.get(PDB, name, namespace=NS)).get("status") or {})


async def status_is(client: Client, name: str = "web", **wanted: Any) -> dict[str, Any] | None:
    status = await pdb_status(client, name)
    return status if all(status.get(k) == v for k, v in wanted.items()) else None


async def evict(client: Client, pod: str) -> None:
    await client.request("POST", f"/api/v1/namespaces/{NS}/pods/{pod}/eviction", body={
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": NS}})


async def test_min_available_budget_counts_healthy_pods_and_gates_evictions() -> None:
    evicted: list[str] = []

    def ready(pod: dict[str, Any]) -> bool:
        return not evicted  # the evicted pod's replacement stays unready

    async with workload_cluster([statefulset.install, disruption.install],
                                ready=ready) as env:
        await env.client.create(stateful_set(3))
        await env.client.create(budget(minAvailable=2))
        status = await wait_for(lambda: status_is(env.client, currentHealthy=3,
                                                  disruptionsAllowed=1))
        pdb = await env.client.get(PDB, "web", namespace=NS)
        assert status["desiredHealthy"] == 2 and status["expectedPods"] == 3
        assert status["observedGeneration"] == pdb["metadata"]["generation"]
        cond = status["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"]) == (
            "DisruptionAllowed", "True", "SufficientPods")
        evicted.append("web-0")
        await evict(env.client, "web-0")
        # the eviction consumed the only allowed disruption; a second one must wait
        with pytest.raises(TooManyRequestsError):
            await evict(env.client, "web-1")
        status = await wait_for(lambda: status_is(env.client, currentHealthy=2,
                                                  disruptionsAllowed=0))
        cond = status["conditions"][0]
        assert (cond["status"], cond["reason"]) == ("False", "InsufficientPods")
        assert "disruptedPods" not in status  # the evicted pod is gone: no longer in flight


async def test_max_unavailable_percentage_uses_the_controllers_scale() -> None:
    async with workload_cluster([statefulset.install, disruption.install],
                                ready=lambda p: p["metadata"]["name"] != "web-3") as env:
        await env.client.create(stateful_set(4))
        await env.client.create(budget(maxUnavailable="50%"))
        status = await wait_for(lambda: status_is(env.client, currentHealthy=3,
                                                  expectedPods=4))
        assert status["desiredHealthy"] == 2 and status["disruptionsAllowed"] == 1


async def test_a_budget_whose_pods_have_no_controller_fails_safe() -> None:
    async with workload_cluster([disruption.install]) as env:
        await env.client.create({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "lone", "namespace": NS,
                                              "labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        await env.client.create(budget(maxUnavailable=1))
        status = await wait_for(lambda: status_is(env.client, disruptionsAllowed=0))
        cond = await wait_for(lambda: _condition(env.client))
        assert (cond["status"], cond["reason"]) == ("False", "SyncFailed")
        assert cond["message"] == 'found no controller ref for pod "lone"'
        assert status["disruptionsAllowed"] == 0


async def _condition(client: Client) -> dict[str, Any] | None:
    for cond in (await pdb_status(client)).get("conditions") or []:
        if cond["type"] == "DisruptionAllowed":
            return dict(cond)
    return None


def test_percentages_round_up() -> None:
    assert disruption.scaled_value("50%", 3) == 2
    assert disruption.scaled_value(1, 3) == 1
