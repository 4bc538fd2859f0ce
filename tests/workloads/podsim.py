"""A stand-in for the scheduler and kubelets in workload controller tests.

:class:`PodSimulator` watches pods over the API, as a kubelet would: it binds every
unscheduled pod to a fake node through ``pods/binding``, then (after ``ready_after``
seconds) writes a kubelet-like status: ``Running`` with the Ready, ContainersReady,
Initialized and PodScheduled conditions True, pod and host IPs and a ready, started
``containerStatuses`` entry per container. Pods with a ``deletionTimestamp`` are finished
off with a zero grace period, as a kubelet does once the containers stopped.

``ready(pod)`` decides per pod whether it may become ready (default: all); pods it
refuses stay Running with Ready False. Tests of other areas may reuse it.

    async with workload_cluster() as env:          # server, client, controllers, simulator
        await env.client.create(deployment(...))
        await wait_for(lambda: ...)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from setpoint.client import Client, ConflictError, Kind, NotFoundError, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings
from tests.waiting import wait_for as wait_for  # re-exported to the tests

POD = Kind("v1", "Pod")
DEPLOYMENT = Kind("apps/v1", "Deployment")
REPLICA_SET = Kind("apps/v1", "ReplicaSet")

Obj = dict[str, Any]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(pod: Obj, pod_ip: str, ready: bool = True) -> Obj:
    """The status a kubelet writes for a pod whose containers run (ready or not)."""
    stamp = now()
    flag = "True" if ready else "False"
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "phase": "Running",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": stamp},
            {"type": "Initialized", "status": "True", "lastTransitionTime": stamp},
            {"type": "Ready", "status": flag, "lastTransitionTime": stamp},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": stamp},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
        ],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": stamp,
        "containerStatuses": [{
            "name": c.get("name"), "image": c.get("image"), "imageID": "",
            "containerID": f"containerd://{c.get('name')}-{pod_ip}", "ready": ready,
            "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": stamp}},
        } for c in containers],
    }


class PodSimulator:
    """Binds pods to ``node`` and makes them Running and Ready (see the module doc)."""

    def __init__(self, client: Client, *, node: str = "sim-node", ready_after: float = 0.0,
                 ready: Callable[[Obj], bool] | None = None) -> None:
        self.client = client
        self.node = node
        self.ready_after = ready_after
        self.ready = ready or (lambda pod: True)
        self._task: asyncio.Task[None] | None = None
        self._busy: dict[str, asyncio.Task[None]] = {}
        self._ips = (f"10.244.{i // 250}.{i % 250 + 1}" for i in itertools.count())

    async def __aenter__(self) -> PodSimulator:
        started = asyncio.Event()
        self._task = asyncio.create_task(self._run(started))
        await started.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        tasks = [t for t in (self._task, *self._busy.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, started: asyncio.Event) -> None:
        listed = await self.client.list_all(POD)
        for pod in listed.items:
            self._handle(pod)
        started.set()
        version = listed.resource_version
        while True:
            watch = self.client.watch(POD, resource_version=version, timeout_seconds=300)
            async with watch:
                async for event_type, pod in watch:
                    if watch.resource_version is not None:
                        version = watch.resource_version
                    if event_type in ("ADDED", "MODIFIED"):
                        self._handle(pod)

    def _handle(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        previous = self._busy.get(uid)
        task = asyncio.create_task(self._step(pod, previous))
        self._busy[uid] = task
        task.add_done_callback(lambda t: self._busy.pop(uid, None) if self._busy.get(uid)
                               is t else None)

    async def _step(self, pod: Obj, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await previous
        m, spec = pod["metadata"], pod.get("spec") or {}
        status = pod.get("status") or {}
        try:
            if m.get("deletionTimestamp"):
                if spec.get("nodeName"):
                    await self.client.delete(POD, m["name"], namespace=m["namespace"],
                                             grace_period_seconds=0)
                return
            if not spec.get("nodeName"):
                await self._bind(pod)
                return
            if status.get("phase") == "Running":
                return
            if self.ready_after:
                await asyncio.sleep(self.ready_after)
            await self.client.patch_status(
                POD, m["name"], {"status": running_status(pod, next(self._ips),
                                                          ready=self.ready(pod))},
                namespace=m["namespace"])
        except (NotFoundError, ConflictError):
            pass

    async def _bind(self, pod: Obj) -> None:
        m = pod["metadata"]
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": m["name"], "namespace": m["namespace"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node}}
        await self.client.request("POST", f"/api/v1/namespaces/{m['namespace']}/pods/"
                                  f"{m['name']}/binding", body=body)

    async def make_ready(self, pod: Obj, ready: bool = True) -> None:
        """Set a running pod's readiness (as a readiness probe would)."""
        m = pod["metadata"]
        await self.client.patch_status(POD, m["name"], {"status": running_status(
            pod, (pod.get("status") or {}).get("podIP") or next(self._ips), ready=ready)},
            namespace=m["namespace"])


@dataclass
class WorkloadEnv:
    cluster: RunningCluster
    client: Client
    manager: Manager
    pods: PodSimulator


@contextlib.asynccontextmanager
async def workload_cluster(
        install: Iterable[Callable[[Manager, Any], None]], *, ready_after: float = 0.0,
        ready: Callable[[Obj], bool] | None = None, simulate: bool = True,
) -> AsyncIterator[WorkloadEnv]:
    """An embedded server, a client, a manager running the controllers ``install`` adds
    and (unless ``simulate`` is False) a pod simulator."""
    from setpoint.workloads.settings import WorkloadSettings

    async with serve() as cluster, Client(load_kubeconfig(cluster.kubeconfig)) as client:
        manager = Manager(client=client, settings=ManagerSettings(
            name="kube-controller-manager", graceful_shutdown_timeout=2.0))
        for add in install:
            add(manager, WorkloadSettings())
        pods = PodSimulator(client, ready_after=ready_after, ready=ready)
        async with manager.running():
            if simulate:
                async with pods:
                    yield WorkloadEnv(cluster, client, manager, pods)
            else:
                yield WorkloadEnv(cluster, client, manager, pods)


@contextlib.asynccontextmanager
async def scheduling_cluster(
        *installs: Callable[[Manager, Any], None],
) -> AsyncIterator[tuple[Client, Manager, Any]]:
    """An embedded server, two simulated nodes of 2 CPUs and kube-scheduler, with the
    controllers ``installs`` add: (client, manager, scheduler), once the nodes are
    schedulable (every node is created not-ready:NoSchedule, TaintNodesByCondition, until
    the node lifecycle controller lifts it)."""
    from setpoint.workloads import nodes, scheduler
    from setpoint.workloads.settings import WorkloadSettings

    async with serve() as running, Client(load_kubeconfig(running.kubeconfig)) as client:
        settings = WorkloadSettings(nodes=2, node_cpu="2")
        manager = Manager(client=client, settings=ManagerSettings(
            name="kube-controller-manager", max_concurrent_reconciles=8,
            graceful_shutdown_timeout=2.0))
        nodes.install(manager, settings)
        sched = scheduler.install(manager, settings)
        for install in installs:
            install(manager, settings)
        async with manager.running():
            await wait_for(lambda: sched.cache.node_count() == 2 and not any(
                n.taints for n in sched.cache.node_infos()))
            yield client, manager, sched
