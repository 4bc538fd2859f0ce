"""The workloads' program (setpoint/workloads/supervised.py) against an embedded server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from setpoint.client import Client, Kind, PatchType, RequestRecord, load_kubeconfig
from setpoint.cluster import serve
from setpoint.workloads import supervised
from setpoint.workloads.manager import install_areas, new_manager
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import quiet_period, wait_for


async def test_each_node_is_registered_once(caplog: pytest.LogCaptureFixture) -> None:
    """The kubelets register their nodes while the caches fill, and the nodes area's own
    registration (the manager's runnable, once the caches synced) waits for that one
    instead of posting every node again to be refused with 409 AlreadyExists: one POST
    per node, as a kubelet's ``registerWithAPIServer`` makes once it succeeded
    (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go)."""
    caplog.set_level(logging.INFO, logger="setpoint.workloads.nodes")
    posts: list[RequestRecord] = []

    def record(r: RequestRecord) -> None:
        if r.method == "POST" and r.path == "/api/v1/nodes":
            posts.append(r)

    said: list[str] = []
    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=3), stop, said.append))
        try:
            await wait_for(lambda: "nodes-ready" in said or task.done())
            # the runnable says when its registration is over
            await wait_for(lambda: any("nodes_registered" in r.getMessage()
                                       for r in caplog.records))
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    assert sorted((r.code, r.attempt) for r in posts) == [(201, 0)] * 3


async def test_nodes_ready_is_heard_on_the_managers_own_node_watch() -> None:
    """``nodes-ready`` is judged from the manager's node informer, which hears the node
    lifecycle controller's taint-lifting write on the watch it has open: the program lists
    and watches the nodes once (the informer's), with no LIST and WATCH of its own after
    ``started`` (docs/benchmarks.md, Start-up, issue 12)."""
    node_reads: list[RequestRecord] = []

    def record(r: RequestRecord) -> None:
        if r.method == "GET" and r.path == "/api/v1/nodes":
            node_reads.append(r)

    said: list[str] = []
    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=2), stop, said.append))
        try:
            await wait_for(lambda: "nodes-ready" in said or task.done())
            async with Client(load_kubeconfig(running.kubeconfig)) as reader:
                nodes = (await reader.list(Kind("v1", "Node"))).items
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    # what was said holds on the server: both nodes Ready and without the taint
    assert sorted(n["metadata"]["name"] for n in nodes if supervised._schedulable_ready(n)) \
        == ["node-1", "node-2"]
    # the informer's LIST (its WATCH goes to the same path): one LIST, no other
    assert len(node_reads) <= 2


async def test_nodes_are_ready_for_cluster_up_once_the_not_ready_taint_is_lifted() -> None:
    """A node is created with not-ready:NoSchedule (TaintNodesByCondition,
    plugin/pkg/admission/nodetaint/admission.go) and a pod is not placed on it until the
    node lifecycle controller lifts it (node_lifecycle_controller.go
    doNoScheduleTaintingPass): ``cluster up`` says ready only then, not at Ready=True."""
    from setpoint.workloads import nodes

    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as client:
        settings = WorkloadSettings(nodes=1)
        await nodes.register_nodes(client, settings)  # NotReady, no controller
        # the kubelet's first heartbeat reports it Ready (no lifecycle controller runs)
        no_cache: Any = type("Cache", (), {"get": lambda *_: None})()
        ctx: Any = type("Ctx", (), {"client": client, "cache": no_cache})()
        await nodes.NodeHeartbeat(settings).reconcile(
            ctx, await client.get(Kind("v1", "Node"), "node-1"))
        waiting = asyncio.ensure_future(supervised.wait_nodes_ready(client, {"node-1"}))
        try:
            await quiet_period(1.0)  # nothing lifts the taint: still waiting
            assert not waiting.done()
            await client.patch(Kind("v1", "Node"), "node-1", {"spec": {"taints": None}},
                               patch_type=PatchType.MERGE)
            await asyncio.wait_for(waiting, 30)
        finally:
            waiting.cancel()


def _metrics_server_request(r: RequestRecord) -> bool:
    """A request of metrics-server's start: its Service, Endpoints, APIService, or the
    legacy CRDs it deletes (setpoint/workloads/metricsserver/registration.py)."""
    return "metrics-server" in r.path or "metrics.k8s.io" in r.path


def _kubelet_events(events: list[Any]) -> list[Any]:
    return [e for e in events if (e.get("source") or {}).get("component") == "kubelet"]


async def test_metrics_server_starts_once_the_nodes_are_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """metrics-server's registration (a serving certificate, a dozen requests, and the
    aggregator's availability checks on the server) is not part of nodes Ready, and the
    start's window before ready is the critical path of ``cluster up`` (docs/benchmarks.md,
    Start-up, issue 12): it starts once the nodes are reported, as a real metrics-server
    is a pod that runs once a node takes it. Here a node kept NotReady holds the report
    until the (shortened) timeout: no metrics-server request before it, its APIService
    registered after it."""
    from setpoint.workloads import nodes

    monkeypatch.setattr(supervised, "NODE_READY_TIMEOUT", 5.0)
    settings = WorkloadSettings(nodes=1)
    kept_not_ready = nodes.default_node(settings, 1)
    kept_not_ready["metadata"]["annotations"][nodes.READY_ANNOTATION] = nodes.NOT_READY
    early: list[RequestRecord] = []
    said: list[str] = []

    def record(r: RequestRecord) -> None:
        if _metrics_server_request(r) and not any(s.startswith("nodes-") for s in said):
            early.append(r)

    stop = asyncio.Event()
    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as admin:

        async def apiservice_registered() -> Any:
            found = await admin.list(Kind("apiregistration.k8s.io/v1", "APIService"))
            return next((a for a in found.items
                         if a["metadata"]["name"] == "v1beta1.metrics.k8s.io"), None)

        await admin.create(kept_not_ready)
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(client, settings, stop,
                                                         said.append))
        try:
            await wait_for(lambda: "started" in said or task.done())
            await quiet_period(1.0)
            assert early == []
            assert not any(s.startswith("nodes-") for s in said)
            await wait_for(lambda: any(s.startswith("nodes-") for s in said), 60)
            registered = await wait_for(apiservice_registered)
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-not-ready node-1"]
    assert early == []
    assert registered["spec"]["service"]["name"] == "metrics-server"


async def test_the_kubelets_node_events_are_written_once_the_nodes_are_reported() -> None:
    """The kubelets' events about their nodes (``Starting``, one per pressure condition,
    ``NodeAllocatableEnforced``, ``NodeReady``: six per node) are written once the nodes
    are reported, not among the node writes that make them Ready (the start's window before
    ready, docs/benchmarks.md, Start-up, issue 12), as a kubelet's event broadcaster
    writes in the background; they are stamped when they happened
    (``firstTimestamp``), and every one is written."""
    said: list[str] = []
    before_ready: list[RequestRecord] = []

    def record(r: RequestRecord) -> None:
        if r.method == "POST" and r.path.endswith("/events") and "nodes-ready" not in said:
            before_ready.append(r)

    stop = asyncio.Event()
    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as admin:
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=2), stop, said.append))

        async def kubelet_events() -> list[Any] | None:
            found = await admin.list(Kind("v1", "Event"), namespace="default")
            written = [e for e in found.items
                       if (e.get("source") or {}).get("component") == "kubelet"]
            return written if len(written) >= 12 else None

        try:
            await wait_for(lambda: "nodes-ready" in said or task.done())
            events = await wait_for(kubelet_events)
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    # before it, at most the node lifecycle controller's RegisteredNode, one per node
    assert len(before_ready) <= 2
    assert sorted((e["source"]["host"], e["reason"]) for e in events) == sorted(
        (node, reason) for node in ("node-1", "node-2")
        for reason in ("Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                       "NodeHasSufficientPID", "NodeAllocatableEnforced", "NodeReady"))
    assert all(e["firstTimestamp"] <= e["metadata"]["creationTimestamp"] for e in events)


async def test_held_kubelet_events_are_written_at_stop_if_the_nodes_were_never_reported() -> None:
    """A stop before the nodes are reported (``cluster up`` interrupted during its start)
    still writes what the kubelets recorded, as a shut-down broadcaster writes its queue."""
    from setpoint.workloads.kubelet.events import KubeletEvents

    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as client:
        events = KubeletEvents(client)
        never = asyncio.Event()
        events.send_after(never)
        events.at_registration("node-1")
        await quiet_period()
        held = (await client.list(Kind("v1", "Event"), namespace="default")).items
        await asyncio.wait_for(events.stop(), 30)
        written = (await client.list(Kind("v1", "Event"), namespace="default")).items
    assert held == []
    assert sorted(e["reason"] for e in written) == sorted([
        "Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
        "NodeHasSufficientPID", "NodeAllocatableEnforced"])


def _listed_resource(r: RequestRecord) -> str | None:
    """The resource a collection GET (an informer's LIST or WATCH) reads, else None
    (discovery's ``/api/v1`` and ``/apis/GROUP/VERSION`` included)."""
    parts = r.path.strip("/").split("/")
    version_at = 1 if parts[0] == "api" else 2
    if r.method != "GET" or r.template.endswith("{name}") or len(parts) <= version_at + 1:
        return None
    return parts[-1]


async def test_nodes_ready_is_said_before_the_controllers_caches_are_listed() -> None:
    """Nodes Ready needs the kubelets' node status and Leases and the node lifecycle
    controller (nodes, leases, pods: node_lifecycle_controller.go ``Run`` waits for the
    lease, node and pod informers; a kubelet's node status loop reads only its Node and
    Lease, kubelet_node_status.go and component-helpers' lease controller), not
    kube-controller-manager's other controllers or kube-scheduler, whose caches the
    workloads list only once the nodes are reported (setpoint/workloads/startorder.py):
    before ``nodes-ready`` no other kind is read; after it the controllers' are."""
    said: list[str] = []
    before: set[str] = set()
    after: set[str] = set()

    def record(r: RequestRecord) -> None:
        resource = _listed_resource(r)
        if resource is not None:
            (after if "nodes-ready" in said else before).add(resource)

    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig), on_request=record)
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=2), stop, said.append))
        try:
            await wait_for(lambda: "nodes-ready" in said or task.done())
            await wait_for(lambda: {"deployments", "replicasets", "statefulsets", "jobs",
                                    "configmaps", "persistentvolumes"} <= after
                           or task.done())
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    assert before == {"nodes", "leases", "pods"}


async def test_running_is_said_once_every_added_controller_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``running`` (what ``cluster up`` prints as "workloads running: ... scheduler, ...,
    controllers") comes after ``nodes-ready`` and only once the workers of every controller
    added then (the scheduler, kube-controller-manager's, the kubelets' pod workers) run,
    their caches synced: at ``nodes-ready`` they were only being added."""
    managers: list[Any] = []

    def recorded(client: Client) -> Any:
        managers.append(new_manager(client))
        return managers[-1]

    monkeypatch.setattr(supervised, "new_manager", recorded)
    said: list[str] = []
    running_when_said: dict[str, tuple[int, int]] = {}

    def say(line: str) -> None:
        said.append(line)
        if line in ("nodes-ready", "running"):  # (controllers, of which running)
            controllers = managers[0].running_controllers
            running_when_said[line] = (len(controllers),
                                       sum(rc.started.is_set() for rc in controllers))

    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig))
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=2), stop, say))
        try:
            await wait_for(lambda: "running" in said or task.done(), 60)
        finally:
            stop.set()
            await task
    assert said[:3] == ["started", "nodes-ready", "running"]
    at_nodes_ready, at_running = running_when_said["nodes-ready"], running_when_said["running"]
    assert at_running[0] > at_nodes_ready[0]  # the later areas' controllers were added
    assert at_running[1] == at_running[0]  # and every one of them runs


async def test_a_deployment_created_at_nodes_ready_gets_its_pods_running() -> None:
    """The controllers, scheduler and the kubelets' pod workers are added to the running
    manager once the nodes are reported, and each lists its kinds when added
    (level-triggered, as an informer's initial LIST hands every object to its handlers:
    client-go tools/cache/reflector.go ``ListAndWatch``): a Deployment created the moment
    ``nodes-ready`` is said, before they have listed, gets its ReplicaSet and its pods,
    scheduled to the nodes and run."""
    said: list[str] = []
    stop = asyncio.Event()
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "at-ready", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "at-ready"}},
                 "template": {"metadata": {"labels": {"app": "at-ready"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as admin:
        created: list[asyncio.Future[Any]] = []

        def tell(line: str) -> None:
            said.append(line)
            if line == "nodes-ready":  # sent before the controllers are even added
                created.append(asyncio.ensure_future(admin.create(deployment)))

        client = Client(load_kubeconfig(running.kubeconfig))
        task = asyncio.ensure_future(supervised.run_with(
            client, WorkloadSettings(nodes=2), stop, tell))

        async def available() -> Any:
            got = await admin.get(Kind("apps/v1", "Deployment"), "at-ready",
                                  namespace="default")
            return got if (got.get("status") or {}).get("availableReplicas") == 2 else None

        try:
            await wait_for(lambda: bool(created) or task.done())
            await created[0]
            await wait_for(available, 60)
            pods = (await admin.list(Kind("v1", "Pod"), namespace="default",
                                     label_selector="app=at-ready")).items
        finally:
            stop.set()
            await task
    assert said[:2] == ["started", "nodes-ready"]
    assert sorted(p["status"]["phase"] for p in pods) == ["Running", "Running"]
    assert all(p["spec"]["nodeName"] in ("node-1", "node-2") for p in pods)


async def test_the_workloads_stop_when_the_later_areas_cannot_be_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Once ``nodes-ready`` is said the parent (``cluster up``) waits only for ``running``
    or the child's exit: when installing the scheduler and controllers fails, the
    workloads stop with that error instead of running on with Ready nodes and nothing to
    place or run their pods (a half-started kube-controller-manager exits too: its ``Run`` ends in
    ``klog.Fatalf`` when a controller fails to start, kubernetes/kubernetes
    cmd/kube-controller-manager/app/controllermanager.go ``StartControllers``)."""
    installed = install_areas
    calls: list[list[str]] = []

    def install_failing_later(manager: Any, settings: WorkloadSettings,
                              areas: list[str]) -> None:
        calls.append(list(areas))
        if len(calls) > 1:
            raise RuntimeError("area failed to install")
        installed(manager, settings, areas)

    monkeypatch.setattr(supervised, "install_areas", install_failing_later)
    said: list[str] = []
    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig))
        with pytest.raises(RuntimeError, match="area failed to install"):
            await asyncio.wait_for(
                supervised.run_with(client, WorkloadSettings(nodes=1), stop, said.append),
                60)
    assert said[:2] == ["started", "nodes-ready"]
    assert stop.is_set()
    assert len(calls) == 2 and calls[1]


async def test_the_workloads_stop_saying_why_when_an_added_controllers_caches_never_sync(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller installed once the nodes are reported whose caches do not sync within
    its timeout stops the manager (controller-runtime's manager returns a controller's
    failed sync); the workloads then say ``error`` with that reason, never ``running``,
    and end, as they do when an area cannot be installed."""
    from setpoint.runtime import Context, Controller

    installed = install_areas
    calls: list[list[str]] = []
    unserved = Controller.for_(Kind("example.com/v1", "Missing"), name="missing")

    @unserved.reconcile
    async def reconcile(ctx: Context[Any], obj: Any) -> None:
        pass

    def install_with_unserved(manager: Any, settings: WorkloadSettings,
                              areas: list[str]) -> None:
        calls.append(list(areas))
        installed(manager, settings, areas)
        if len(calls) > 1:
            manager.add(unserved.with_options(cache_sync_timeout=0.5))

    monkeypatch.setattr(supervised, "install_areas", install_with_unserved)
    said: list[str] = []
    stop = asyncio.Event()
    async with serve() as running:
        client = Client(load_kubeconfig(running.kubeconfig))
        await asyncio.wait_for(
            supervised.run_with(client, WorkloadSettings(nodes=1), stop, said.append), 60)
    assert said[:2] == ["started", "nodes-ready"]
    assert "running" not in said
    assert said[2].startswith('error controller "missing": timed out after 0.5s waiting for '
                              "cache to be synced for Kind Missing.example.com/v1"), said
    assert stop.is_set()
