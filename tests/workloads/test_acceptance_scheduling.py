"""Acceptance: five pods whose requests fit only four end with four placed and one Pending
Unschedulable with kube-scheduler's message; a new node takes the fifth."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import serve
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads import nodeops, nodes, scheduler
from setpoint.workloads.manager import build_manager
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import wait_for

POD = Kind("v1", "Pod")
DEPLOYMENT = Kind("apps/v1", "Deployment")
Obj = dict[str, Any]

SETTINGS = WorkloadSettings(nodes=2, node_cpu="2", node_memory="8Gi")
MESSAGE = ("0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
           "2 No preemption victims found for incoming pod.")
TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx",
                             "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}]},
}


def unschedulable(pod: Obj) -> Obj | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
            return c  # type: ignore[no-any-return]
    return None


async def split(client: Client, *, placed: Callable[[Obj], bool], expect: int) -> \
        tuple[list[Obj], list[Obj]]:
    """Wait until ``expect`` pods are placed and the others are Unschedulable."""
    async def check() -> tuple[list[Obj], list[Obj]] | None:
        pods = (await client.list(POD, namespace="default", label_selector="app=web")).items
        done = [p for p in pods if placed(p)]
        pending = [p for p in pods if not p["spec"].get("nodeName") and unschedulable(p)]
        if len(done) == expect and len(done) + len(pending) == 5:
            return done, pending
        return None
    result: tuple[list[Obj], list[Obj]] = await wait_for(check)
    return result


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as c:
        yield c


async def test_five_bare_pods_fit_four_and_a_new_node_takes_the_fifth(client: Client) -> None:
    manager = Manager(client=client, settings=ManagerSettings(
        name="kube-controller-manager", graceful_shutdown_timeout=2.0))
    nodes.install(manager, SETTINGS)
    sched = scheduler.install(manager, SETTINGS)
    async with manager.running():
        # nodes register NotReady, tainted not-ready:NoSchedule (TaintNodesByCondition),
        # until their kubelet reports Ready and the node lifecycle controller lifts it
        await wait_for(lambda: sched.cache.node_count() == 2 and not any(
            n.taints for n in sched.cache.node_infos()))
        for i in range(5):
            await client.create({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": f"web-{i}", "namespace": "default",
                                              **TEMPLATE["metadata"]},
                                 "spec": TEMPLATE["spec"]})
        bound, pending = await split(client, placed=lambda p: bool(p["spec"].get("nodeName")),
                                     expect=4)
        assert sorted(p["spec"]["nodeName"] for p in bound) == \
            ["node-1", "node-1", "node-2", "node-2"]
        condition = unschedulable(pending[0])
        assert condition is not None
        assert (condition["status"], condition["message"]) == ("False", MESSAGE)
        assert pending[0]["status"]["phase"] == "Pending"

        await nodeops.add_node(client, cpu="2", settings=SETTINGS)
        bound, pending = await split(client, placed=lambda p: bool(p["spec"].get("nodeName")),
                                     expect=5)
        assert [p["spec"]["nodeName"] for p in bound].count("node-3") == 1


async def test_a_deployment_of_five_runs_four_and_the_fifth_after_a_node_is_added(
        client: Client) -> None:
    manager = build_manager(client, SETTINGS)
    async with manager.running():
        await client.create({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                     "template": TEMPLATE}})

        def running(pod: Obj) -> bool:
            return (pod.get("status") or {}).get("phase") == "Running"

        _, pending = await split(client, placed=running, expect=4)
        condition = unschedulable(pending[0])
        assert condition is not None and condition["message"] == MESSAGE
        assert pending[0]["status"]["phase"] == "Pending"

        await nodeops.add_node(client, cpu="2", settings=SETTINGS)
        await split(client, placed=running, expect=5)
