"""The workloads benchmark's second floor, "floor (faithful writes)": the writes a real
Kubernetes 1.32 cluster makes for a Deployment of 10 replicas, made by one HTTP client with
no controller, scheduler or kubelet behind it.

The first floor (``bench/workloads.py`` ``floor``) writes 3 per pod (create, binding,
status) and 4 per replaced pod; the stop condition it is compared with reads Deployment
status, which it never writes. This one makes, per Deployment, every write the
controllers' rules make whatever the timing, at the fewest a real cluster can make: pods
become Ready a step at a time (all pods of one step together), so each status is written
once per change of what it counts. Sources (kubernetes/kubernetes at v1.32):

- Deployment controller (pkg/controller/deployment): ``sync.go getNewReplicaSet`` creates the
  new ReplicaSet (replicas from ``NewRSNewReplicas``: 10 for a first rollout, 3 with the
  default 25 % surge on a template change) and writes Deployment status with
  ``UpdateStatus`` (the Progressing condition ``NewReplicaSetCreated``, the revision);
  ``sync.go scaleReplicaSet`` writes a ReplicaSet's replicas with ``Update`` and records
  ``ScalingReplicaSet`` (record.EventRecorder: a core/v1 Event); ``rolling.go
  reconcileNewReplicaSet`` / ``reconcileOldReplicaSets`` give the steps 3/8, 5/5, 8/3, 10/0
  (new/old) with surge 3 and unavailable 2; ``progress.go syncRolloutStatus`` writes status
  whenever ``calculateStatus`` differs: once on the sync that creates the ReplicaSet, then on
  each change of the ReplicaSets' replicas and of their available replicas.
- ReplicaSet controller (pkg/controller/replicaset): ``manageReplicas`` creates or deletes
  pods, one ``SuccessfulCreate`` / ``SuccessfulDelete`` Event each
  (pkg/controller/controller_utils.go ``RealPodControl``); ``replica_set_utils.go
  updateReplicaSetStatus`` writes status (``UpdateStatus``) when replicas, ready or
  available change: after its pods exist and after they are ready.
- kube-scheduler: one ``pods/binding`` POST per pod (pkg/scheduler/framework/plugins/
  defaultbinder ``Bind``) and one ``Scheduled`` events.k8s.io/v1 Event
  (pkg/scheduler/schedule_one.go ``bindingCycle``, ``fwk.EventRecorder().Eventf``).
- kubelet: one pod status write carrying Running and Ready (pkg/kubelet/status
  status_manager.go ``syncPod``, which writes only a status that differs from the last one
  written; the simulation's kubelet coalesces to one), and the three core/v1 Events of the
  container's start about ``spec.containers{app}`` (record.EventRecorder):
  pkg/kubelet/images/image_manager.go ``EnsureImageExists`` records ``Pulled`` (``Container
  image "..." already present on machine``: the image is ``IfNotPresent``, and the fewest
  writes are with it already on the node, so no ``Pulling``), then
  pkg/kubelet/kuberuntime/kuberuntime_container.go ``startContainer`` records ``Created``
  and ``Started``. A real kubelet often writes a Pending status first; the simulated one
  does not, so that is not here (a floor with writes the simulation does not make would
  flatter it).

Per Deployment: 88 writes to Ready (8.8 per pod) and 138 to replace its 10 pods (13.8 per
replaced pod), plus the driver's create and template PATCH, which both floors make. Not
here, as in the first floor: the watches (the controllers' informers), Leases, and Events a
recorder writes late or as series PATCHes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from bench import workload_objects as objects
from bench.workload_objects import NS, REPLICAS

Obj = dict[str, Any]
Expect = Callable[..., Awaitable[Any]]

# rolling.go with maxSurge 3 and maxUnavailable 2 of 10 (the default 25 %), every pod of a
# step Ready before the next sync: (new ReplicaSet's replicas, old ReplicaSet's replicas)
ROLLING_STEPS = ((3, 8), (5, 5), (8, 3), (10, 0))
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
READY_WRITES_PER_DEPLOYMENT = 88
ROLLOUT_WRITES_PER_DEPLOYMENT = 138


class FaithfulWrites:
    """The writes of one Deployment's controllers, scheduler and kubelets, in their order."""

    def __init__(self, session: aiohttp.ClientSession, expect: Expect, index: int) -> None:
        self.session, self.expect, self.i = session, expect, index
        self.name = objects.deployment_name(index)
        self.deployment: Obj = {}
        self.writes = 0
        self._pods: dict[str, list[str]] = {}  # ReplicaSet name -> its pods' names

    # -- HTTP ----------------------------------------------------------------------------
    async def _send(self, method: str, path: str, body: Obj | None, status: int,
                    headers: dict[str, str] = JSON) -> Obj:
        self.writes += 1
        data = None if body is None else orjson.dumps(body)
        async with self.session.request(method, path, data=data, headers=headers) as r:
            answer: Obj = await self.expect(r, status)
            return answer

    async def _event(self, about: Obj, reason: str, message: str,
                     node: str | None = None) -> None:
        """A core/v1 Event as client-go's record.EventRecorder writes it (the kubelet's
        about the pod's container, from its node)."""
        now = objects.now()
        ref = {"kind": about["kind"], "namespace": NS, "name": about["metadata"]["name"],
               "uid": about["metadata"]["uid"], "apiVersion": about["apiVersion"],
               "resourceVersion": about["metadata"]["resourceVersion"]}
        source: Obj = {"component": "deployment-controller" if reason == "ScalingReplicaSet"
                       else "replicaset-controller"}
        if node is not None:
            ref["fieldPath"] = "spec.containers{app}"
            source = {"component": "kubelet", "host": node}
        await self._send("POST", f"/api/v1/namespaces/{NS}/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{self.writes:x}{id(self):x}", "namespace": NS},
            "involvedObject": ref, "reason": reason, "message": message,
            "source": source,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Normal",
            "reportingComponent": "", "reportingInstance": ""}, 201)

    async def _deployment_status(self, **status: Any) -> None:
        path = f"/apis/apps/v1/namespaces/{NS}/deployments/{self.name}/status"
        body = {**self.deployment, "status": {
            "observedGeneration": self.deployment["metadata"].get("generation", 1), **status}}
        self.deployment = await self._send("PUT", path, body, 200)

    async def _replica_set_status(self, rs: Obj, **status: Any) -> Obj:
        path = (f"/apis/apps/v1/namespaces/{NS}/replicasets/"
                f"{rs['metadata']['name']}/status")
        return await self._send("PUT", path, {**rs, "status": {
            "observedGeneration": rs["metadata"].get("generation", 1), **status}}, 200)

    # -- the controllers -----------------------------------------------------------------
    async def _new_replica_set(self, version: str, replicas: int) -> Obj:
        rs = await self._send("POST", f"/apis/apps/v1/namespaces/{NS}/replicasets",
                              objects.replica_set(self.deployment, version, replicas), 201)
        self._pods[rs["metadata"]["name"]] = []
        await self._event(self.deployment, "ScalingReplicaSet",
                          f"Scaled up replica set {rs['metadata']['name']} from 0 to {replicas}")
        return rs

    async def _scale(self, rs: Obj, replicas: int) -> Obj:
        before = rs["spec"]["replicas"]
        scaled = {**rs, "spec": {**rs["spec"], "replicas": replicas}}
        path = f"/apis/apps/v1/namespaces/{NS}/replicasets/{rs['metadata']['name']}"
        answer = await self._send("PUT", path, scaled, 200)
        way = "up" if replicas > before else "down"
        await self._event(self.deployment, "ScalingReplicaSet",
                          f"Scaled {way} replica set {rs['metadata']['name']} from {before} "
                          f"to {replicas}")
        return answer

    async def _create_pods(self, rs: Obj, count: int) -> list[Obj]:
        async def one(_: int) -> Obj:
            pod = await self._send("POST", f"/api/v1/namespaces/{NS}/pods",
                                   objects.owned_pod(rs), 201)
            self._pods[rs["metadata"]["name"]].append(pod["metadata"]["name"])
            await self._event(rs, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
            return pod
        return list(await asyncio.gather(*(one(k) for k in range(count))))

    async def _delete_pods(self, rs: Obj, count: int) -> None:
        names = self._pods[rs["metadata"]["name"]]
        gone, names[:] = names[:count], names[count:]

        async def one(name: str) -> None:
            await self._send("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}", None, 200)
            await self._event(rs, "SuccessfulDelete", f"Deleted pod: {name}")
        await asyncio.gather(*(one(name) for name in gone))

    async def _run_pods(self, pods: list[Obj]) -> None:
        """The scheduler's binding and Scheduled event, the kubelet's status."""
        async def one(k: int, pod: Obj) -> None:
            name = pod["metadata"]["name"]
            node = (self.i * REPLICAS + k) % objects.NODES
            path = f"/api/v1/namespaces/{NS}/pods/{name}"
            await self._send("POST", f"{path}/binding",
                             objects.binding(name, f"node-{node + 1}"), 201)
            await self._send("POST", f"/apis/events.k8s.io/v1/namespaces/{NS}/events",
                             objects.scheduled_event(pod, f"node-{node + 1}"), 201)
            host = f"node-{node + 1}"
            await self._event(pod, "Pulled",
                              f'Container image "{objects.IMAGE}" already present on machine',
                              host)
            await self._event(pod, "Created", "Created container: app", host)
            await self._event(pod, "Started", "Started container app", host)
            await self._send("PATCH", f"{path}/status",
                             objects.running_status(self.i * REPLICAS + k, node), 200, MERGE)
        await asyncio.gather(*(one(k, pod) for k, pod in enumerate(pods)))

    # -- the two phases ------------------------------------------------------------------
    async def ready(self) -> None:
        """Create the Deployment (the driver's write) and make its 10 pods Ready."""
        self.deployment = await self._send(
            "POST", f"/apis/apps/v1/namespaces/{NS}/deployments",
            objects.deployment(self.i, 0), 201)
        rs = await self._new_replica_set("1", REPLICAS)
        await self._deployment_status(conditions=[objects.progressing("NewReplicaSetCreated")])
        await self._deployment_status(replicas=0, unavailableReplicas=REPLICAS, conditions=[
            objects.available(False), objects.progressing("ReplicaSetUpdated")])
        pods = await self._create_pods(rs, REPLICAS)
        rs = await self._replica_set_status(rs, replicas=REPLICAS,
                                            fullyLabeledReplicas=REPLICAS)
        await self._deployment_status(
            replicas=REPLICAS, updatedReplicas=REPLICAS, unavailableReplicas=REPLICAS,
            conditions=[objects.available(False), objects.progressing("ReplicaSetUpdated")])
        await self._run_pods(pods)
        self.replica_set = await self._replica_set_status(
            rs, replicas=REPLICAS, fullyLabeledReplicas=REPLICAS, readyReplicas=REPLICAS,
            availableReplicas=REPLICAS)
        await self._deployment_status(**_complete())

    async def rollout(self) -> None:
        """Change the template (the driver's write) and replace the 10 pods."""
        self.deployment = await self._send(
            "PATCH", f"/apis/apps/v1/namespaces/{NS}/deployments/{self.name}",
            objects.template_patch("2"), 200,
            {"Content-Type": "application/strategic-merge-patch+json"})
        old = self.replica_set
        new = await self._new_replica_set("2", ROLLING_STEPS[0][0])
        await self._deployment_status(conditions=[objects.available(True),
                                                  objects.progressing("NewReplicaSetCreated")])
        new_ready = 0
        for step, (new_count, old_count) in enumerate(ROLLING_STEPS):
            if step:
                new = await self._scale(new, new_count)
            old = await self._scale(old, old_count)
            # the sync that scaled (or created) also writes the status it calculated
            await self._deployment_status(**_rolling(new_ready, new_ready, old_count))
            pods = await self._create_pods(new, new_count - new_ready)
            await self._delete_pods(old, old["status"]["replicas"] - old_count)
            new = await self._replica_set_status(new, replicas=new_count,
                                                 fullyLabeledReplicas=new_count,
                                                 readyReplicas=new_ready,
                                                 availableReplicas=new_ready)
            old = await self._replica_set_status(
                old, replicas=old_count, fullyLabeledReplicas=old_count,
                readyReplicas=old_count, availableReplicas=old_count)
            await self._deployment_status(**_rolling(new_count, new_ready, old_count))
            await self._run_pods(pods)
            new_ready = new_count
            new = await self._replica_set_status(
                new, replicas=new_count, fullyLabeledReplicas=new_count,
                readyReplicas=new_count, availableReplicas=new_count)
        await self._deployment_status(**_complete())


def _rolling(updated: int, new_available: int, old: int) -> Obj:
    available = new_available + old
    return {"replicas": updated + old, "updatedReplicas": updated,
            "readyReplicas": available, "availableReplicas": available,
            "unavailableReplicas": max(REPLICAS - available, 0),
            "conditions": [objects.available(available >= REPLICAS - 2),
                           objects.progressing("ReplicaSetUpdated")]}


def _complete() -> Obj:
    return {"replicas": REPLICAS, "updatedReplicas": REPLICAS, "readyReplicas": REPLICAS,
            "availableReplicas": REPLICAS,
            "conditions": [objects.available(True),
                           objects.progressing("NewReplicaSetAvailable")]}
