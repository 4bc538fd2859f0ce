"""Simulated nodes: registration, heartbeats and leases, NotReady, taints and eviction."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from setpoint.client import Client, Kind, NotFoundError, PatchType, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.machinery.metatime import meta_time, parse_time
from setpoint.runtime import Manager, ManagerSettings
from setpoint.workloads import nodeops, nodes
from setpoint.workloads.nodelifecycle import eviction_delay, reconcile_taints
from setpoint.workloads.settings import WorkloadSettings
from tests.conftest import kubectl_path
from tests.waiting import wait_for

NODE = Kind("v1", "Node")
POD = Kind("v1", "Pod")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
Obj = dict[str, Any]


def condition(obj: Obj, type_: str) -> Obj:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def taint_keys(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}


# -- without a server ----------------------------------------------------------------------

def test_node_objects_look_like_a_registered_kubelet() -> None:
    settings = WorkloadSettings(nodes=4)
    node = nodes.default_node(settings, 4)
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "node-4"
    assert labels["topology.kubernetes.io/zone"] == "zone-a"  # round-robin over 3 zones
    assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"] == "amd64"
    status = node["status"]
    assert status["capacity"]["cpu"] == "4" and status["allocatable"]["memory"] == "16Gi"
    assert status["capacity"]["pods"] == "110"
    assert status["addresses"][0] == {"type": "InternalIP", "address": "127.0.1.4"}
    # registered before the runtime status check: Ready=False (pkg/kubelet/runtime.go
    # runtimeErrors with lastBaseRuntimeSync zero, nodestatus/setters.go ReadyCondition)
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == \
        ("False", "KubeletNotReady", "container runtime status check may not have completed yet")
    assert {c["type"] for c in status["conditions"]} == \
        {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}


def test_condition_taints_keep_user_taints_and_their_times() -> None:
    node = nodes.default_node(WorkloadSettings(), 1)
    node["spec"]["taints"] = [{"key": "team", "value": "a", "effect": "NoSchedule"}]
    node["spec"]["unschedulable"] = True
    condition(node, "Ready")["status"] = "Unknown"
    taints = reconcile_taints(node)
    assert taints is not None
    assert {(t["key"], t["effect"]) for t in taints} == {
        ("team", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute")}
    node["spec"]["taints"] = taints
    assert reconcile_taints(node) is None


def test_a_node_without_a_ready_condition_gets_no_ready_taint_and_loses_not_ready() -> None:
    """node_lifecycle_controller.go doNoScheduleTaintingPass maps only the conditions the
    node has (nodeConditionToTaintKeyStatusMap), and processTaintBaseEviction needs a
    Ready condition: the admission's not-ready:NoSchedule goes, nothing is added."""
    node = nodes.default_node(WorkloadSettings(), 1)
    node["status"] = {}
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    assert reconcile_taints(node) == []


def test_a_not_ready_node_gets_no_execute_only_once_a_monitor_tick_saw_it() -> None:
    """processTaintBaseEviction adds not-ready:NoExecute from monitorNodeHealth, every
    nodeMonitorPeriod (pkg/controller/nodelifecycle/node_lifecycle_controller.go), while
    doNoScheduleTaintingPass runs on Node events: a node registered NotReady and Ready
    before the next tick gets only the NoSchedule one (which admission gave it)."""
    node = nodes.default_node(WorkloadSettings(nodes=1), 1)
    node["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    since = parse_time(condition(node, "Ready")["lastTransitionTime"])
    assert since is not None
    assert reconcile_taints(node, last_tick=since - 5.0) is None
    after = reconcile_taints(node, last_tick=since + 6.0)
    assert after is not None and {(t["key"], t["effect"]) for t in after} == {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute")}


def test_eviction_waits_for_the_shortest_toleration_since_the_taint() -> None:
    taint = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
             "timeAdded": "2030-01-01T00:00:00Z"}
    added = 1893456000.0
    pod = {"spec": {"tolerations": [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 300},
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}}
    assert eviction_delay(pod, [taint], added + 10) == 50
    assert eviction_delay({"spec": {}}, [taint], added) == 0  # not tolerated: at once
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    assert eviction_delay(forever, [taint], added) is None


def test_taint_specs_parse_like_kubectl() -> None:
    assert nodeops.parse_taint("dedicated=db:NoSchedule") == \
        nodeops.Taint("dedicated", "NoSchedule", "db")
    assert nodeops.parse_taint("example.com/gpu:NoExecute").value == ""
    with pytest.raises(ValueError, match="invalid taint effect: Sometimes"):
        nodeops.parse_taint("k=v:Sometimes")
    with pytest.raises(ValueError, match="invalid taint spec"):
        nodeops.parse_taint("novalue")


# -- over HTTP ------------------------------------------------------------------------------

@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


@pytest.fixture
async def client(cluster: RunningCluster) -> AsyncIterator[Client]:
    async with Client(load_kubeconfig(cluster.kubeconfig)) as c:
        yield c


@pytest.fixture
async def running(client: Client) -> AsyncIterator[Manager]:
    settings = WorkloadSettings(nodes=3, heartbeat_seconds=1.0, node_lease_duration_seconds=4,
                                node_monitor_grace_period_seconds=4.0)
    manager = Manager(client=client, settings=ManagerSettings(
        name="kube-controller-manager", graceful_shutdown_timeout=2.0))
    nodes.install(manager, settings)
    async with manager.running():
        await wait_for(lambda: len(manager.cache.store_for(NODE)) == 3)
        yield manager


async def bound_pod(client: Client, name: str, node: str, **spec: Any) -> Obj:
    """A pod on ``node`` that a kubelet has made Ready."""
    await client.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": "default"},
                         "spec": {"nodeName": node, "containers": [
                             {"name": "app", "image": "nginx"}], **spec}})
    ready = {"type": "Ready", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": meta_time()}
    result: Obj = await client.patch_status(
        POD, name, {"status": {"phase": "Running", "conditions": [ready]}},
        patch_type=PatchType.STRATEGIC, namespace="default")
    return result


async def test_nodes_are_registered_once_with_zones_spread(client: Client) -> None:
    await client.create(nodes.node_object("node-1", address="127.0.1.1", cpu="1",
                                          memory="1Gi", pods=10))
    settings = WorkloadSettings(nodes=3)
    assert await nodes.register_nodes(client, settings) == ["node-2", "node-3"]
    assert await nodes.register_nodes(client, settings) == []
    listed = {n["metadata"]["name"]: n for n in (await client.list(NODE)).items}
    assert listed["node-1"]["status"]["capacity"]["cpu"] == "1"  # kept as it was
    assert [listed[f"node-{i}"]["metadata"]["labels"]["topology.kubernetes.io/zone"]
            for i in (2, 3)] == ["zone-b", "zone-c"]


async def test_kubelets_heartbeat_and_renew_their_leases(client: Client,
                                                         running: Manager) -> None:
    lease = await wait_for(lambda: running.cache.get(LEASE, "node-2", "kube-node-lease"))
    assert lease["spec"]["holderIdentity"] == "node-2"
    assert lease["spec"]["leaseDurationSeconds"] == 4  # the fixture's node_lease_duration_seconds
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    first_renewal = lease["spec"]["renewTime"]
    beat = condition(await client.get(NODE, "node-2"), "Ready")["lastHeartbeatTime"]

    async def advanced() -> bool:
        node = await client.get(NODE, "node-2")
        renewed = (await client.get(LEASE, "node-2", namespace="kube-node-lease"))
        return bool(condition(node, "Ready")["lastHeartbeatTime"] > beat
                    and renewed["spec"]["renewTime"] > first_renewal)
    await wait_for(advanced)


class _StaleCache:
    """An informer cache that has not seen any write since the node was registered (its
    watch lags, as the workloads' informers do under load)."""

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> Obj | None:
        return None


async def test_a_lagging_cache_does_not_make_the_kubelet_post_or_renew_again() -> None:
    """The kubelet posts its node status when it changed or its report period passed,
    judged by lastStatusReportTime in its memory (kubernetes/kubernetes
    pkg/kubelet/kubelet_node_status.go, tryUpdateNodeStatus), and renews the lease it last
    wrote (k8s.io/component-helpers/apimachinery/lease/controller.go, latestLease), not
    what an informer shows: a reconcile on a stale view writes nothing new."""
    writes: list[str] = []
    async with serve() as running, Client(
            load_kubeconfig(running.kubeconfig), on_request=lambda r: writes.append(
                f"{r.method} {r.path}") if r.method != "GET" else None) as client:
        settings = WorkloadSettings(nodes=1, heartbeat_seconds=30.0)
        await nodes.register_nodes(client, settings)
        stale = await client.get(NODE, "node-1")
        for c in stale["status"]["conditions"]:  # as seen before a heartbeat the cache missed
            c["lastHeartbeatTime"] = "2020-01-01T00:00:00Z"
        heartbeat = nodes.NodeHeartbeat(settings)
        ctx: Any = type("Ctx", (), {"client": client, "cache": _StaleCache()})()
        writes.clear()
        await heartbeat.reconcile(ctx, stale)
        assert sorted(w.split(" ")[0] for w in writes) == ["PATCH", "POST"]  # status, lease
        writes.clear()
        result = await heartbeat.reconcile(ctx, stale)
        assert writes == []
        assert result.requeue_after is not None and result.requeue_after > 1.0


async def test_an_unchanged_node_status_is_posted_every_five_minutes_the_lease_every_ten_s(
        ) -> None:
    """The kubelet renews its Lease every 10 s and posts an unchanged node status only
    once ``nodeStatusReportFrequency`` has passed, 5 minutes by default (KubeletConfiguration
    v1beta1; pkg/kubelet/kubelet_node_status.go, tryUpdateNodeStatus): the parent commit
    posted it every 10 s, a Node event for every informer of Nodes, per node."""
    writes: list[str] = []
    async with serve() as running, Client(
            load_kubeconfig(running.kubeconfig), on_request=lambda r: writes.append(
                r.method) if r.method != "GET" else None) as client:
        settings = WorkloadSettings(nodes=1)
        await nodes.register_nodes(client, settings)
        ctx: Any = type("Ctx", (), {"client": client, "cache": _StaleCache()})()
        # the first post reports the registered NotReady node Ready (a changed condition)
        await nodes.NodeHeartbeat(settings).reconcile(ctx, await client.get(NODE, "node-1"))
        node = await client.get(NODE, "node-1")
        assert condition(node, "Ready")["status"] == "True"
        for age, expected in ((60, ["POST"]), (301, ["PATCH", "POST"])):
            seen = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age))
            for c in node["status"]["conditions"]:
                c["lastHeartbeatTime"] = seen
            writes.clear()
            await nodes.NodeHeartbeat(settings).reconcile(ctx, node)
            assert sorted(writes) == expected  # status patch, lease create


async def test_unreachable_node_goes_unknown_tainted_and_its_pods_are_evicted(
        client: Client, running: Manager) -> None:
    await bound_pod(client, "patient", "node-1")  # default 300 s toleration from admission
    await bound_pod(client, "hasty", "node-1", tolerations=[{
        "key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
        "tolerationSeconds": 1}])
    await nodeops.set_not_ready(client, "node-1")

    async def unknown() -> Obj | None:
        node = await client.get(NODE, "node-1")
        wanted = {("node.kubernetes.io/unreachable", "NoSchedule"),
                  ("node.kubernetes.io/unreachable", "NoExecute")}
        return node if wanted <= taint_keys(node) else None
    node = await wait_for(unknown)
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == \
        ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert condition(node, "MemoryPressure")["status"] == "Unknown"

    async def marked() -> bool:
        pod = await client.get(POD, "patient", namespace="default")
        return bool(condition(pod, "Ready")["status"] == "False")
    await wait_for(marked)

    async def evicted() -> Obj | None:
        try:
            pod = await client.get(POD, "hasty", namespace="default")
        except NotFoundError:
            return {"gone": True}
        return pod if pod["metadata"].get("deletionTimestamp") else None
    pod = await wait_for(evicted)
    if "gone" not in pod:
        target = condition(pod, "DisruptionTarget")
        assert target["reason"] == "DeletionByTaintManager"
    patient = await client.get(POD, "patient", namespace="default")
    assert not patient["metadata"].get("deletionTimestamp")

    await nodeops.set_ready(client, "node-1")

    async def recovered() -> bool:
        node = await client.get(NODE, "node-1")
        return condition(node, "Ready")["status"] == "True" and not taint_keys(node)
    await wait_for(recovered)


async def test_kubelet_reporting_not_ready_gets_not_ready_taints(
        client: Client, running: Manager) -> None:
    await nodeops.set_not_ready(client, "node-2", unreachable=False)

    async def tainted() -> Obj | None:
        node = await client.get(NODE, "node-2")
        return node if ("node.kubernetes.io/not-ready", "NoExecute") in taint_keys(node) \
            else None
    node = await wait_for(tainted)
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")


async def test_cordon_adds_the_unschedulable_taint_and_user_no_execute_evicts(
        client: Client, running: Manager) -> None:
    await nodeops.cordon(client, "node-3")

    async def cordoned() -> bool:
        node = await client.get(NODE, "node-3")
        return ("node.kubernetes.io/unschedulable", "NoSchedule") in taint_keys(node)
    await wait_for(cordoned)
    await nodeops.uncordon(client, "node-3")

    async def uncordoned() -> bool:
        return not taint_keys(await client.get(NODE, "node-3"))
    await wait_for(uncordoned)

    await bound_pod(client, "victim", "node-3")
    await nodeops.taint(client, "node-3", "maintenance", "now", "NoExecute")

    async def evicted() -> bool:
        try:
            pod = await client.get(POD, "victim", namespace="default")
        except NotFoundError:
            return True
        return bool(pod["metadata"].get("deletionTimestamp"))
    await wait_for(evicted)
    await nodeops.untaint(client, "node-3", "maintenance")
    assert not taint_keys(await client.get(NODE, "node-3"))


async def test_add_node_picks_the_next_name_zone_and_address(client: Client) -> None:
    await nodes.register_nodes(client, WorkloadSettings(nodes=2))
    added = await nodeops.add_node(client, cpu="8", labels={"disk": "ssd"},
                                   taints=[nodeops.parse_taint("gpu=yes:NoSchedule")])
    assert added["metadata"]["name"] == "node-3"
    assert added["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-c"
    assert added["metadata"]["labels"]["disk"] == "ssd"
    assert added["status"]["capacity"]["cpu"] == "8"
    # TaintNodesByCondition (plugin/pkg/admission/nodetaint/admission.go) appends
    # not-ready:NoSchedule to every created node; no node lifecycle controller runs here
    assert added["spec"]["taints"] == [{"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                                       {"key": "node.kubernetes.io/not-ready",
                                        "effect": "NoSchedule"}]
    assert added["status"]["addresses"][0]["address"] == "127.0.1.3"


async def test_a_node_registers_not_ready_tainted_and_loses_the_taint_once_ready(
        client: Client, running: Manager) -> None:
    """TaintNodesByCondition (plugin/pkg/admission/nodetaint/admission.go) creates the node
    with not-ready:NoSchedule; the node lifecycle controller's doNoScheduleTaintingPass
    (pkg/controller/nodelifecycle/node_lifecycle_controller.go) takes it away once the
    kubelet's Ready=True is there, keeping the node's own taints."""
    added = await nodeops.add_node(client, taints=[nodeops.parse_taint("gpu=yes:NoSchedule")])
    name = added["metadata"]["name"]
    assert taint_keys(added) == {("gpu", "NoSchedule"),
                                 ("node.kubernetes.io/not-ready", "NoSchedule")}

    async def lifted() -> Obj | None:
        node = await client.get(NODE, name)
        return node if taint_keys(node) == {("gpu", "NoSchedule")} else None
    node = await wait_for(lifted)
    assert condition(node, "Ready")["status"] == "True"


async def test_no_pod_is_scheduled_to_a_node_before_the_not_ready_taint_is_lifted(
        client: Client) -> None:
    """kube-scheduler's TaintToleration filter (pkg/scheduler/framework/plugins/
    tainttoleration) rejects the admission's not-ready:NoSchedule; once the node lifecycle
    controller lifts it, the Node update (TaintToleration's queueing hint) binds the pod."""
    from setpoint.workloads import nodelifecycle, scheduler

    settings = WorkloadSettings(nodes=1)
    await nodes.register_nodes(client, settings)
    sched_manager = Manager(client=client, settings=ManagerSettings(
        name="kube-scheduler", graceful_shutdown_timeout=2.0))
    scheduler.install(sched_manager, settings)
    async with sched_manager.running():
        await client.create({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "early", "namespace": "default"},
                             "spec": {"containers": [{"name": "app", "image": "nginx"}]}})

        async def unschedulable() -> Obj | None:
            pod = await client.get(POD, "early", namespace="default")
            for c in (pod.get("status") or {}).get("conditions") or ():
                if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                    return c  # type: ignore[no-any-return]
            return None
        rejected = await wait_for(unschedulable)
        assert "untolerated taint {node.kubernetes.io/not-ready: }" in rejected["message"]
        assert not (await client.get(POD, "early", namespace="default"))["spec"].get("nodeName")

        kcm = Manager(client=client, settings=ManagerSettings(
            name="kube-controller-manager", graceful_shutdown_timeout=2.0))
        nodelifecycle.install(kcm, settings)
        # and the kubelet's heartbeat: its first post reports the node Ready
        kcm.add(nodes.NodeHeartbeat(settings).controller)
        async with kcm.running():
            async def bound() -> str | None:
                pod = await client.get(POD, "early", namespace="default")
                return pod["spec"].get("nodeName")  # type: ignore[no-any-return]
            assert await wait_for(bound) == "node-1"


async def test_kubectl_cordon_gives_the_unschedulable_taint_and_uncordon_lifts_it(
        cluster: RunningCluster, client: Client, running: Manager, tmp_path: Path) -> None:
    """``kubectl cordon`` sets spec.unschedulable (k8s.io/kubectl pkg/drain/cordon.go);
    doNoScheduleTaintingPass (node_lifecycle_controller.go) adds
    node.kubernetes.io/unschedulable:NoSchedule, stamped by SwapNodeControllerTaint, and
    takes it away on ``kubectl uncordon``."""
    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl_path(), "--kubeconfig", str(cluster.kubeconfig), "--cache-dir",
             str(tmp_path / "cache"), *args], capture_output=True, text=True, timeout=60,
            env={**os.environ, "HOME": str(tmp_path)})

    unschedulable = ("node.kubernetes.io/unschedulable", "NoSchedule")
    cordoned = await asyncio.to_thread(kubectl, "cordon", "node-2")
    assert (cordoned.returncode, cordoned.stdout) == (0, "node/node-2 cordoned\n"), \
        cordoned.stderr

    async def tainted() -> Obj | None:
        node = await client.get(NODE, "node-2")
        return node if unschedulable in taint_keys(node) else None
    node = await wait_for(tainted)
    (taint,) = [t for t in node["spec"]["taints"] if t["key"] == unschedulable[0]]
    assert parse_time(taint.get("timeAdded")) is not None
    assert taint_keys(node) == {unschedulable}  # the registration's not-ready one is gone

    uncordoned = await asyncio.to_thread(kubectl, "uncordon", "node-2")
    assert uncordoned.returncode == 0, uncordoned.stderr

    async def lifted() -> bool:
        return not taint_keys(await client.get(NODE, "node-2"))
    await wait_for(lifted)


async def test_a_kubelet_registers_its_node_not_ready_and_reports_ready_in_one_status_write(
        cluster: RunningCluster, tmp_path: Path) -> None:
    """kubelet_node_status.go initialNode runs setNodeStatus before updateRuntimeUp has
    completed (pkg/kubelet/runtime.go runtimeErrors: ``container runtime status check may
    not have completed yet`` while lastBaseRuntimeSync is zero), so nodestatus/setters.go
    ReadyCondition registers the node Ready=False, KubeletNotReady; the next status update
    reports it Ready. kubectl shows NotReady, then Ready."""
    writes: list[str] = []
    async with Client(load_kubeconfig(cluster.kubeconfig), on_request=lambda r: writes.append(
            f"{r.method} {r.path}") if r.method != "GET" else None) as client:
        settings = WorkloadSettings(nodes=1)
        await nodes.register_nodes(client, settings)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_bytes(Path(cluster.kubeconfig).read_bytes())
        kubeconfig.chmod(0o600)

        def kubectl_nodes() -> str:
            return subprocess.run(
                [kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
                 str(tmp_path / "cache"), "get", "nodes", "--no-headers"],
                capture_output=True, text=True, check=True, timeout=60,
                env={**os.environ, "HOME": str(tmp_path)}).stdout
        registered = await client.get(NODE, "node-1")
        ready = condition(registered, "Ready")
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False", "KubeletNotReady",
            "container runtime status check may not have completed yet")
        assert (await asyncio.to_thread(kubectl_nodes)).split()[1] == "NotReady"
        writes.clear()
        manager = Manager(client=client, settings=ManagerSettings(
            name="kubelet", graceful_shutdown_timeout=2.0))
        manager.add(nodes.NodeHeartbeat(settings).controller)
        async with manager.running():
            async def reported_ready() -> Obj | None:
                node = await client.get(NODE, "node-1")
                return node if condition(node, "Ready")["status"] == "True" else None
            node = await wait_for(reported_ready)
        ready = condition(node, "Ready")
        assert (ready["reason"], ready["message"]) == ("KubeletReady",
                                                       "kubelet is posting ready status")
        assert [w for w in writes if "/nodes/" in w] == ["PATCH /api/v1/nodes/node-1/status"]
        assert (await asyncio.to_thread(kubectl_nodes)).split()[1] == "Ready"


async def test_describe_a_registered_node_shows_its_kubelets_start_events(
        cluster: RunningCluster, running: Manager, tmp_path: Path) -> None:
    """What a real kubelet records about the node it starts and registers, as ``kubectl
    describe node`` lists it (``From: kubelet``): ``Starting`` (pkg/kubelet/kubelet.go
    BirthCry: "Starting kubelet."), ``NodeHasSufficientMemory``, ``NodeHasNoDiskPressure``,
    ``NodeHasSufficientPID`` (pkg/kubelet/nodestatus/setters.go MemoryPressureCondition,
    DiskPressureCondition, PIDPressureCondition: a new condition's empty status is not False,
    so each records ``Node <name> status is now: <reason>``) and ``NodeAllocatableEnforced``
    (pkg/kubelet/cm/node_container_manager_linux.go enforceNodeAllocatableCgroups: "Updated
    Node Allocatable limit across pods"), all about the node's ref whose uid is its name
    (kubelet.go nodeRef)."""
    kubelet_reasons = ["Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                       "NodeHasSufficientPID", "NodeAllocatableEnforced"]

    async def recorded() -> list[Obj]:
        listed = await running.client.list(Kind("v1", "Event"), namespace="default")
        return [e for e in listed.items if e["involvedObject"].get("name") == "node-2"
                and (e.get("source") or {}).get("component") == "kubelet"
                and e["reason"] in kubelet_reasons]
    events = await wait_for(lambda: _all_five(recorded))
    assert {e["involvedObject"]["uid"] for e in events} == {"node-2"}
    assert {e["involvedObject"]["kind"] for e in events} == {"Node"}

    described = await asyncio.to_thread(subprocess.run, [
        kubectl_path(), "--kubeconfig", str(cluster.kubeconfig), "--cache-dir",
        str(tmp_path / "cache"), "describe", "node", "node-2"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
    assert described.returncode == 0, described.stderr
    rows = described.stdout.split("\nEvents:\n", 1)[1].splitlines()[2:]
    kubelet_rows = {" ".join(r.split()[:2] + r.split()[3:]) for r in rows
                    if r.split()[3:4] == ["kubelet"]}
    assert kubelet_rows >= {
        "Normal Starting kubelet Starting kubelet.",
        "Normal NodeHasSufficientMemory kubelet Node node-2 status is now: "
        "NodeHasSufficientMemory",
        "Normal NodeHasNoDiskPressure kubelet Node node-2 status is now: NodeHasNoDiskPressure",
        "Normal NodeHasSufficientPID kubelet Node node-2 status is now: NodeHasSufficientPID",
        "Normal NodeAllocatableEnforced kubelet Updated Node Allocatable limit across pods"}


async def _all_five(recorded: Any) -> list[Obj] | None:
    events: list[Obj] = await recorded()
    return events if len({e["reason"] for e in events}) == 5 else None
