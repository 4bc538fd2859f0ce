"""The testing kit's ``setpoint_workloads``: pods get scheduled and Ready, nodes change."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.client import Client, Kind
from setpoint.machinery.metatime import parse_time
from setpoint.testing.plugin import Waiter
from setpoint.workloads import nodeops

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
LEASE = Kind("coordination.k8s.io/v1", "Lease")


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}}


def is_ready(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


async def test_pods_become_ready_with_the_workloads_running(
        setpoint_workloads: Any, k8s: Client, wait_for: Waiter) -> None:
    assert setpoint_workloads is not None
    await k8s.create(pod("web"))
    ready = await wait_for(POD, "web", is_ready)
    assert ready["spec"]["nodeName"].startswith("node-")
    assert ready["status"]["phase"] == "Running"


async def test_the_nodes_are_registered_and_schedulable_when_the_test_starts(
        setpoint_workloads: Any, k8s: Client) -> None:
    """Every node is created not-ready:NoSchedule (TaintNodesByCondition,
    plugin/pkg/admission/nodetaint/admission.go) and kube-scheduler places nothing there
    until the node lifecycle controller lifts it (node_lifecycle_controller.go
    doNoScheduleTaintingPass): the fixture starts the test after that, as ``cluster up``
    says ready, so the test's first pod is scheduled at once."""
    listed = (await k8s.list(NODE, namespace=None)).items
    assert len(listed) == 3
    for node in listed:
        assert is_ready(node), node["metadata"]["name"]
        assert not [t for t in node["spec"].get("taints") or ()
                    if t["key"] == "node.kubernetes.io/not-ready"], node["spec"]


async def test_a_cordoned_cluster_leaves_new_pods_pending(
        setpoint_workloads: Any, k8s: Client, wait_for: Waiter) -> None:
    async def three_nodes() -> list[dict[str, Any]]:
        listed = (await k8s.list(NODE, namespace=None)).items
        assert len(listed) == 3
        return listed

    nodes = await wait_for(three_nodes)
    for node in nodes:
        await nodeops.cordon(k8s, node["metadata"]["name"])
    await k8s.create(pod("stuck"))

    def unschedulable(obj: dict[str, Any]) -> bool:
        return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in (obj.get("status") or {}).get("conditions") or [])

    stuck = await wait_for(POD, "stuck", unschedulable)
    assert not stuck["spec"].get("nodeName")
    await nodeops.uncordon(k8s, nodes[0]["metadata"]["name"])
    await wait_for(POD, "stuck", is_ready)


@pytest.mark.setpoint_workload_settings(node_monitor_grace_period_seconds=4.0,
                                        node_lease_duration_seconds=2)
async def test_a_node_fault_is_noticed_through_the_lease_and_lifted_by_the_kubelet(
        setpoint_workloads: Any, k8s: Client, wait_for: Waiter) -> None:
    """The kit's node fault stops the kubelet; the node lifecycle controller marks the node
    Unknown only once its Lease is older than the marker's grace period, then taints it
    unreachable (pkg/controller/nodelifecycle/node_lifecycle_controller.go
    tryUpdateNodeHealth); the kubelet back, the node is Ready and untainted."""
    await nodeops.set_not_ready(k8s, "node-1")

    def unreachable(node: dict[str, Any]) -> bool:
        return ("node.kubernetes.io/unreachable", "NoExecute") in {
            (t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}

    node = await wait_for(NODE, "node-1", unreachable)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    lease = await k8s.get(LEASE, "node-1", namespace="kube-node-lease")
    renewed = parse_time(lease["spec"]["renewTime"])
    went = parse_time(ready["lastTransitionTime"])  # whole seconds
    assert renewed is not None and went is not None and went >= renewed + 4.0 - 1.0
    await nodeops.set_ready(k8s, "node-1")
    await wait_for(NODE, "node-1", lambda n: is_ready(n) and not n["spec"].get("taints"))
