"""Node health judged by Lease and status timestamps, as kube-controller-manager judges it.

kubernetes/kubernetes pkg/controller/nodelifecycle/node_lifecycle_controller.go
(``monitorNodeHealth``, ``tryUpdateNodeHealth``, ``markNodeAsReachable``): a node whose
Lease in ``kube-node-lease`` and Ready ``lastHeartbeatTime`` were both left unrenewed for
``nodeMonitorGracePeriod`` gets its conditions set ``Unknown`` (``NodeStatusUnknown``,
"Kubelet stopped posting node status."), then the unreachable taints; one that never
posted a Ready condition gets ``NodeStatusNeverUpdated`` after ``nodeStartupGracePeriod``
from its creation; the kubelet's next status post makes it Ready and lifts the taints.
The grace periods are short here (WorkloadSettings), the kubelets' lease renewals too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.client import Client, Kind, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.machinery.metatime import parse_time
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads import nodelifecycle, nodeops, nodes
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import quiet_period, wait_for

NODE = Kind("v1", "Node")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
Obj = dict[str, Any]
GRACE = 4.0
UNREACHABLE = {("node.kubernetes.io/unreachable", "NoSchedule"),
               ("node.kubernetes.io/unreachable", "NoExecute")}
# status posts only on change or every 5 minutes (nodeStatusReportFrequency): within a
# test, the renewed Lease is all that keeps a node Ready
SETTINGS = WorkloadSettings(nodes=2, node_lease_duration_seconds=2,  # renewed every 0.5 s
                            node_monitor_grace_period_seconds=GRACE,
                            node_startup_grace_period_seconds=GRACE)


def condition(obj: Obj, type_: str) -> Obj:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def taint_keys(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


@pytest.fixture
async def client(cluster: RunningCluster) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(cluster.kubeconfig)) as c:
        yield c


def manager(client: Client, name: str) -> Manager:
    return Manager(client=client, settings=ManagerSettings(
        name=name, graceful_shutdown_timeout=2.0))


def kubelets(client: Client) -> Manager:
    """The simulated kubelets alone: node status posts and Lease renewals."""
    m = manager(client, "kubelets")
    m.add(nodes.NodeHeartbeat(SETTINGS).controller)
    return m


def controller_manager(client: Client) -> Manager:
    """The node lifecycle and taint eviction controllers alone."""
    m = manager(client, "kube-controller-manager")
    nodelifecycle.install(m, SETTINGS)
    return m


async def node_when(client: Client, name: str, check: Any) -> Obj:
    async def found() -> Obj | None:
        node = await client.get(NODE, name)
        return node if check(node) else None
    result: Obj = await wait_for(found)
    return result


def unknown(node: Obj) -> bool:
    return taint_keys(node) >= UNREACHABLE and \
        condition(node, "Ready")["status"] == "Unknown"


def reachable(node: Obj) -> bool:
    return condition(node, "Ready")["status"] == "True" and not taint_keys(node)


async def test_stopped_kubelets_nodes_go_unknown_after_the_grace_period_and_come_back(
        client: Client) -> None:
    """The testing kit's node fault stops the kubelet (no status, no Lease): the node goes
    Unknown once its Lease is ``nodeMonitorGracePeriod`` old, not before, while a node
    whose kubelet renews only its Lease stays Ready; started again, the kubelet posts
    Ready over the controller's Unknown and the unreachable taints go."""
    await nodes.register_nodes(client, SETTINGS)
    async with kubelets(client).running(), controller_manager(client).running():
        # a status post of the kubelet's own first (Ready False, then True), which it
        # remembers: after the controller's Unknown it must still post Ready again, as
        # tryUpdateNodeStatus compares with the node it fetched (pkg/kubelet/
        # kubelet_node_status.go), not with what it last sent
        await nodeops.set_not_ready(client, "node-1", unreachable=False)
        await node_when(client, "node-1", lambda n: condition(n, "Ready")["status"] == "False")
        await nodeops.set_ready(client, "node-1")
        await node_when(client, "node-1", reachable)
        await nodeops.set_not_ready(client, "node-1")
        node = await node_when(client, "node-1", unknown)
        ready = condition(node, "Ready")
        assert (ready["status"], ready["reason"], ready["message"]) == \
            ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
        assert condition(node, "MemoryPressure")["reason"] == "NodeStatusUnknown"
        lease = await client.get(LEASE, "node-1", namespace="kube-node-lease")
        renewed = parse_time(lease["spec"]["renewTime"])
        went = parse_time(ready["lastTransitionTime"])
        assert renewed is not None and went is not None
        # lastTransitionTime has whole seconds: at least the grace period less one
        assert went >= renewed + GRACE - 1.0, (lease["spec"], ready)
        # node-2's status was posted once, longer than the grace period ago; its Lease
        # renewals alone kept it Ready
        other = await client.get(NODE, "node-2")
        assert condition(other, "Ready")["status"] == "True", other["status"]

        await nodeops.set_ready(client, "node-1")
        node = await node_when(client, "node-1", reachable)
        assert condition(node, "Ready")["reason"] == "KubeletReady"


async def test_a_crashed_kubelet_is_noticed_through_its_lease_alone(client: Client) -> None:
    """No annotation: the kubelets stop (their process gone), their nodes go Unknown
    and tainted unreachable after the grace period; kubelets started again make them
    Ready and lift the NoExecute taints (``markNodeAsReachable``)."""
    await nodes.register_nodes(client, SETTINGS)
    async with controller_manager(client).running():
        async with kubelets(client).running():
            await node_when(client, "node-2", reachable)
        await node_when(client, "node-2", unknown)
        async with kubelets(client).running():
            await node_when(client, "node-2", reachable)
            await node_when(client, "node-1", reachable)


async def test_a_node_that_never_posted_status_is_unknown_after_the_startup_grace(
        client: Client) -> None:
    """A Node created without status and no kubelet: ``NodeStatusNeverUpdated``, its
    heartbeat the node's creation (``tryUpdateNodeHealth``, nodeStartupGracePeriod)."""
    created: Obj = await client.create({"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": "silent"}})
    async with controller_manager(client).running():
        node = await node_when(client, "silent", unknown)
    ready = condition(node, "Ready")
    assert (ready["reason"], ready["message"]) == \
        ("NodeStatusNeverUpdated", "Kubelet never posted node status.")
    assert ready["lastHeartbeatTime"] == created["metadata"]["creationTimestamp"]
    assert {c["type"] for c in node["status"]["conditions"]} >= \
        {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}


def test_a_restarted_controller_gives_every_posted_node_a_whole_grace_period() -> None:
    """tryUpdateNodeHealth starts a node it has no health data of at ``nc.now()``: a
    controller-manager that comes back after its nodes' leases went stale waits the grace
    period before marking them; a node that never posted counts from its creation."""
    node = nodes.default_node(SETTINGS, 1)
    stale = "2020-01-01T00:00:00Z"
    condition(node, "Ready")["lastHeartbeatTime"] = stale
    node["metadata"]["creationTimestamp"] = stale
    lease = {"spec": {"renewTime": "2020-01-01T00:00:01.000000Z"}}
    seen = 2_000_000_000.0
    assert nodelifecycle.health_deadline(node, lease, SETTINGS, seen) == seen + GRACE
    renewed, created = parse_time("2020-01-01T00:00:01Z"), parse_time(stale)
    assert renewed is not None and created is not None
    assert nodelifecycle.health_deadline(node, lease, SETTINGS) == renewed + GRACE
    del node["status"]["conditions"]
    assert nodelifecycle.health_deadline(node, None, SETTINGS, seen) == created + GRACE


def test_a_run_out_grace_period_is_acted_on_at_the_next_monitor_tick() -> None:
    """monitorNodeHealth runs every nodeMonitorPeriod from the controller's start
    (node_lifecycle_controller.go Run, wait.UntilWithContext): a deadline between two
    ticks waits for the later one."""
    lifecycle = nodelifecycle.NodeLifecycle(
        Manager(), settings=WorkloadSettings(node_monitor_period_seconds=5.0))
    start = lifecycle._epoch
    assert lifecycle._next_tick(start + 1.0) == start + 5.0
    assert lifecycle._next_tick(start + 5.0) == start + 5.0
    assert lifecycle._next_tick(start + 12.5) == start + 15.0


POD = Kind("v1", "Pod")
EVENT = Kind("v1", "Event")


async def bound_ready_pod(client: Client, name: str, node: str) -> None:
    """A pod on ``node`` whose kubelet (field manager ``kubelet``) reported it Ready."""
    await client.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": "default"},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "app", "image": "nginx:1.27"}]}})
    await client.patch_status(POD, name, {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        namespace="default", field_manager="kubelet")


def status_writers(pod: Obj) -> set[str]:
    return {e["manager"] for e in pod["metadata"].get("managedFields") or ()
            if e.get("subresource") == "status"}


async def pod_events(client: Client, name: str) -> list[tuple[Any, ...]]:
    listed = await client.list(EVENT, namespace="default")
    return [(e["type"], e["reason"], e["message"], (e.get("source") or {}).get("component"))
            for e in listed.items if e["involvedObject"].get("name") == name]


async def test_pods_are_marked_not_ready_only_by_the_controllers_own_unknown(
        cluster: RunningCluster, client: Client) -> None:
    """pkg/controller/nodelifecycle/node_lifecycle_controller.go ``monitorNodeHealth``
    calls ``MarkPodsNotReady`` (pkg/controller/util/node/controller_utils.go) only when
    its own ``tryUpdateNodeHealth`` turned an observed ``Ready=True`` into Unknown (or on
    its ``nodesToRetry`` path after a failed marking): the pod of a stopped kubelet's node
    gets ``Ready=False`` written by kube-controller-manager, with a ``NodeNotReady``
    warning from ``node-controller``; the pod of a node whose kubelet posts ``Ready=False``
    is left to its kubelet: no write of the controller's, no event."""
    await nodes.register_nodes(client, SETTINGS)
    await bound_ready_pod(client, "on-not-ready", "node-1")
    await bound_ready_pod(client, "on-stopped", "node-2")
    async with Client(load_kubeconfig(cluster.kubeconfig),
                      field_manager="kube-controller-manager") as kcm_client:
        kcm = Manager(client=kcm_client, settings=ManagerSettings(
            name="kube-controller-manager", graceful_shutdown_timeout=2.0))
        nodelifecycle.install(kcm, SETTINGS)
        async with kubelets(client).running(), kcm.running():
            await node_when(client, "node-1", reachable)
            await node_when(client, "node-2", reachable)
            await nodeops.set_not_ready(client, "node-1", unreachable=False)
            await nodeops.set_not_ready(client, "node-2")
            # the controller saw node-1's False: it tainted it not-ready
            await node_when(client, "node-1", lambda n: (
                "node.kubernetes.io/not-ready", "NoSchedule") in taint_keys(n))
            await node_when(client, "node-2", unknown)

            async def marked() -> Obj | None:
                pod: Obj = await client.get(POD, "on-stopped", namespace="default")
                return pod if condition(pod, "Ready")["status"] == "False" else None
            stopped = await wait_for(marked)
            assert "kube-controller-manager" in status_writers(stopped), \
                stopped["metadata"]["managedFields"]
            assert await wait_for(lambda: pod_events(client, "on-stopped")) == [
                ("Warning", "NodeNotReady", "Node is not ready", "node-controller")]

            await quiet_period()
            kept = await client.get(POD, "on-not-ready", namespace="default")
            assert condition(kept, "Ready")["status"] == "True", kept["status"]
            assert status_writers(kept) == {"kubelet"}, kept["metadata"]["managedFields"]
            assert await pod_events(client, "on-not-ready") == []
            assert await pod_events(client, "on-stopped") == [
                ("Warning", "NodeNotReady", "Node is not ready", "node-controller")]
