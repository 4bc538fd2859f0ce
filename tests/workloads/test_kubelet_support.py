"""Helpers for the simulated kubelet's tests: a cluster with nodes and only the kubelet.

Pods are bound with the ``binding`` subresource, so these tests need no scheduler; nodes are
created here, not by the node area, so that only the kubelet is under test.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from setpoint.client import Client, Kind, RequestRecord, load_kubeconfig
from setpoint.cluster import RunningCluster, serve
from setpoint.runtime import Manager, ManagerSettings
from setpoint.testing.waiting import wait_for_object
from setpoint.workloads import kubelet
from setpoint.workloads.kubelet import KubeletOptions, PodWorkers
from setpoint.workloads.settings import WorkloadSettings
from tests.waiting import wait_for as wait_for  # re-exported to the kubelet tests

POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")
Obj = dict[str, Any]

FAST = KubeletOptions(grace_cap=1.0, probe_delay_cap=0.5, backoff_base=0.3, backoff_cap=1.0,
                      metrics_debounce=0.05)


def node(name: str, address: str, *, ready: str = "True", cpu: str = "4",
         memory: str = "16Gi") -> Obj:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": ready,
                                       "reason": "KubeletReady"}],
                       "addresses": [{"type": "InternalIP", "address": address},
                                     {"type": "Hostname", "address": name}]}}


def pod(name: str, *containers: str, annotations: dict[str, str] | None = None,
        namespace: str = "default", **spec: Any) -> Obj:
    """A pod with containers named ``containers`` (default one named ``app``)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": dict(annotations or {})},
            "spec": {"containers": [{"name": c, "image": "nginx"}
                                    for c in containers or ("app",)], **spec}}


@dataclass
class Env:
    cluster: RunningCluster
    client: Client
    manager: Manager
    workers: PodWorkers
    requests: list[RequestRecord] = field(default_factory=list)

    async def run(self, body: Obj, node_name: str = "node-a") -> Obj:
        """Create the pod and bind it to ``node_name``."""
        created = await self.client.create(body)
        await self.run_bound(created["metadata"]["name"], node_name,
                             created["metadata"]["namespace"])
        return created

    async def run_bound(self, name: str, node_name: str = "node-a",
                        namespace: str = "default") -> None:
        """Bind the existing pod ``name`` to ``node_name`` (as the scheduler does)."""
        await self.client.request(
            "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
            body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                  "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})

    async def get(self, name: str, namespace: str = "default") -> Obj:
        return await self.client.get(POD, name, namespace=namespace)

    async def until(self, name: str, check: Callable[[Obj], bool], timeout: float = 30.0,
                    namespace: str = "default") -> Obj:
        """The pod once ``check`` holds; on timeout the failure shows the pod as last seen."""
        pod: Obj = await wait_for_object(self.client, POD, name, check, namespace=namespace,
                                         timeout=timeout)
        return pod

    def status_writes(self, name: str) -> int:
        """PATCHes of ``name``'s status the kubelet sent."""
        return sum(1 for r in self.requests if r.method == "PATCH"
                   and r.path.endswith(f"/pods/{name}/status"))

    async def restart_kubelet(self, options: KubeletOptions = FAST) -> None:
        """Stop this kubelet manager and start a fresh one (new memory, same cluster)."""
        await self.manager.stop()
        self.manager, self.workers = build(self.client, options)
        await self.manager.start()


def build(client: Client, options: KubeletOptions) -> tuple[Manager, PodWorkers]:
    manager = Manager(client=client, settings=ManagerSettings(name="kubelet",
                                                              record_events=False))
    workers = kubelet.install(manager, WorkloadSettings(), options)
    return manager, workers


def condition(obj: Obj, type_: str) -> Obj:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def ready(obj: Obj) -> bool:
    return condition(obj, "Ready").get("status") == "True"


def phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def statuses(obj: Obj, init: bool = False) -> dict[str, Obj]:
    key = "initContainerStatuses" if init else "containerStatuses"
    return {cs["name"]: cs for cs in (obj.get("status") or {}).get(key) or ()}


@contextlib.asynccontextmanager
async def kubelet_env(options: KubeletOptions = FAST,
                      nodes: tuple[Obj, ...] | None = None,
                      before_start: Callable[[Client], Awaitable[None]] | None = None,
                      ) -> AsyncIterator[Env]:
    """A cluster with nodes ``node-a`` and ``node-b`` and a running kubelet;
    ``before_start(client)`` runs before the kubelet starts."""
    async with serve() as cluster:
        records: list[RequestRecord] = []
        async with Client(load_kubeconfig(cluster.kubeconfig), field_manager="kubelet",
                          on_request=records.append) as client:
            for body in nodes if nodes is not None else (
                    node("node-a", "127.0.1.1"), node("node-b", "127.0.1.2")):
                await client.create(body)
            if before_start is not None:
                await before_start(client)
            manager, workers = build(client, options)
            env = Env(cluster, client, manager, workers, records)
            await manager.start()
            try:
                yield env
            finally:
                await env.manager.stop()
