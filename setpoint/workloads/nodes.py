"""Simulated nodes: their registration, and the kubelet's side of their health.

At start, ``settings.nodes`` Nodes named ``node-1`` … ``node-N`` are registered (existing
ones are kept), spread over ``settings.zones`` round-robin, with the capacity, labels,
addresses and ``nodeInfo`` a kubelet reports. Then, as a kubelet does for its node, the
``node-heartbeat`` controller posts the node's conditions when they change and every
``heartbeat_seconds`` otherwise (``lastHeartbeatTime``; 5 minutes, the kubelet's
``nodeStatusReportFrequency``) and renews its Lease in ``kube-node-lease`` every quarter
of ``node_lease_duration_seconds`` (10 s of 40). The node lifecycle controller
(:mod:`setpoint.workloads.nodelifecycle`) does the controller-manager's side.

Faults are asked for on the Node itself, so that the CLI, tests and any client can drive
them over the API (see :mod:`setpoint.workloads.nodeops`): the annotation
``sim.setpoint.dev/node-ready`` set to ``"false"`` makes the kubelet report ``Ready=False``
(``KubeletNotReady``); set to ``"unknown"`` it stops the kubelet altogether (no status, no
lease), and the node lifecycle controller marks the node ``Unknown`` once its grace period
(``node_monitor_grace_period_seconds``, 40 s) passed without either. Removing it (or
``"true"``) starts the kubelet again: it posts Ready over the controller's Unknown.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from setpoint.client import (
    AlreadyExistsError,
    Client,
    ConflictError,
    NotFoundError,
    PatchType,
)
from setpoint.machinery.metatime import meta_time, micro_time, parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Context, Controller, Manager, Result
from setpoint.workloads import nodelifecycle
from setpoint.workloads.nodelease import LEASE, LEASE_NAMESPACE, NODE
from setpoint.workloads.settings import WorkloadSettings

if TYPE_CHECKING:  # the kubelet package imports this module
    from setpoint.workloads.kubelet.events import KubeletEvents

log = logging.getLogger(__name__)

# pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction: the kubelet renews its Lease
# every quarter of its duration (10 s of 40)
LEASE_RENEW_FRACTION = 0.25

READY_ANNOTATION = "sim.setpoint.dev/node-ready"
"""``"false"``: the kubelet reports NotReady; ``"unknown"``: the kubelet is gone."""
READY, NOT_READY, GONE = "true", "false", "unknown"
REGISTERING = "registering"
"""The kubelet's first status, posted before its first runtime status check."""

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
DEFAULT_REGION = "local"
KUBELET_VERSION = "v1.32.0"
DEFAULT_EPHEMERAL_STORAGE = "100Gi"


def node_name(settings: WorkloadSettings, index: int) -> str:
    return f"{settings.name_prefix}{index}"


def node_address(index: int) -> str:
    """A loopback address per node: node addresses are data only, and nothing must ever
    route outside the machine."""
    return f"127.0.1.{(index - 1) % 254 + 1}"


def kubelet_conditions(mode: str, heartbeat: str,
                       previous: Sequence[Mapping[str, Any]] = ()) -> list[Obj]:
    """The conditions a kubelet posts: pressures False, Ready per ``mode``; transition
    times kept from ``previous`` where the status did not change."""
    if mode == NOT_READY:
        ready = ("False", "KubeletNotReady", "container runtime is down")
    elif mode == REGISTERING:
        # pkg/kubelet/runtime.go runtimeErrors: lastBaseRuntimeSync is still zero when
        # initialNode runs setNodeStatus, and nodestatus/setters.go ReadyCondition turns
        # the error into Ready=False KubeletNotReady
        ready = ("False", "KubeletNotReady",
                 "container runtime status check may not have completed yet")
    else:
        ready = ("True", "KubeletReady", "kubelet is posting ready status")
    wanted = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory",
         "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID",
         "kubelet has sufficient PID available"),
        ("Ready", *ready),
    ]
    old = {c.get("type"): c for c in previous}
    out = []
    for type_, status, reason, message in wanted:
        before = old.get(type_)
        transition = before.get("lastTransitionTime") if before is not None and \
            before.get("status") == status else heartbeat
        out.append({"type": type_, "status": status, "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": transition or heartbeat, "reason": reason,
                    "message": message})
    return out


def node_status(name: str, address: str, *, cpu: str, memory: str, pods: int | str,
                ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE) -> Obj:
    """The status a kubelet registers its node with."""
    resources = {"cpu": str(cpu), "memory": str(memory), "pods": str(pods),
                 "ephemeral-storage": ephemeral_storage, "hugepages-1Gi": "0",
                 "hugepages-2Mi": "0"}
    machine = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.nodes.setpoint.dev")
    return {
        "capacity": dict(resources), "allocatable": dict(resources),
        "conditions": kubelet_conditions(REGISTERING, meta_time()),
        "addresses": [{"type": "InternalIP", "address": address},
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": machine.hex, "systemUUID": str(machine),
            "bootID": str(uuid.uuid4()), "kernelVersion": "simulated",
            "osImage": "Setpoint simulated node", "containerRuntimeVersion": "simulated://1.0",
            "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": "amd64",
        },
    }


def node_object(name: str, *, address: str, cpu: str, memory: str, pods: int | str,
                zone: str | None = None, region: str = DEFAULT_REGION,
                labels: Mapping[str, str] | None = None,
                taints: Sequence[Mapping[str, Any]] = (),
                ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE) -> Obj:
    """A Node as a kubelet registers it (labels, annotations, status)."""
    node_labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    }
    if zone:
        node_labels[ZONE_LABEL] = zone
        node_labels[REGION_LABEL] = region
    node_labels.update(labels or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": node_status(name, address, cpu=cpu, memory=memory, pods=pods,
                              ephemeral_storage=ephemeral_storage),
    }


def default_node(settings: WorkloadSettings, index: int) -> Obj:
    """Node ``index`` (1-based) of the settings."""
    zones = settings.zones
    zone = zones[(index - 1) % len(zones)] if zones else None
    return node_object(node_name(settings, index), address=node_address(index),
                       cpu=settings.node_cpu, memory=settings.node_memory,
                       pods=settings.node_pods, zone=zone,
                       region=settings.extra.get("region", DEFAULT_REGION))


async def register_nodes(client: Client, settings: WorkloadSettings) -> list[str]:
    """Create the settings' nodes that do not exist yet, all at once (each kubelet
    registers its own); returns the names created, in order.

    Each is created with its first status, as a kubelet's ``initialNode`` ends with
    ``setNodeStatus`` (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go): Ready is
    False then, as the runtime status check (``updateRuntimeUp``, run concurrently) has not
    completed; the heartbeat's first post (``NodeHeartbeat``) reports it Ready."""

    async def register(index: int) -> str | None:
        try:
            await client.create(default_node(settings, index))
        except AlreadyExistsError:
            return None
        return node_name(settings, index)

    created = await asyncio.gather(*(register(i) for i in range(1, settings.nodes + 1)))
    return [name for name in created if name is not None]


def ready_mode(node: Mapping[str, Any]) -> str:
    """What the fault annotation asks of the node's kubelet."""
    value = ((node.get("metadata") or {}).get("annotations") or {}).get(READY_ANNOTATION)
    value = (value or READY).lower()
    return value if value in (NOT_READY, GONE) else READY


class NodeHeartbeat:
    """The kubelet's node status and lease loop, for every node, as one controller."""

    def __init__(self, settings: WorkloadSettings, events: KubeletEvents | None = None) -> None:
        self.settings = settings
        self.events = events
        # What this kubelet last wrote, by node uid, judged instead of the cache when the
        # cache is behind it (its watch lags under load): a real kubelet keeps
        # lastStatusReportTime in memory (pkg/kubelet/kubelet_node_status.go,
        # tryUpdateNodeStatus) and its lease controller renews the latestLease it last
        # wrote (k8s.io/component-helpers/apimachinery/lease/controller.go), so neither
        # writes again because an informer has not seen its previous write yet. Judged by
        # the cache alone, each lagging reconcile posted the status again and renewed the
        # lease from a stale resourceVersion (a Conflict, retried every 0.2 s).
        # (the heartbeat time it posted, the conditions' signature), by node uid
        self._posted: dict[str, tuple[float, list[tuple[Any, Any, Any]]]] = {}
        self._leases: dict[str, Obj] = {}
        self.controller: Controller[Obj] = Controller.for_(
            NODE, name="node-heartbeat").reads(LEASE)
        self.controller.reconcile(self.reconcile)

    def __repr__(self) -> str:
        return f"NodeHeartbeat(every={self.settings.heartbeat_seconds}s)"

    async def reconcile(self, ctx: Context[Obj], node: Obj) -> Result:
        if ready_mode(node) == GONE:
            return Result()  # a stopped kubelet posts nothing
        next_status = await self._post_status(ctx, node)
        next_lease = await self._renew_lease(ctx, node)
        return Result(requeue_after=max(0.05, min(next_status, next_lease)))

    async def _post_status(self, ctx: Context[Obj], node: Obj) -> float:
        """Post conditions when they change or a heartbeat is due; seconds to the next."""
        status = node.get("status") or {}
        conditions = status.get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        period = self.settings.heartbeat_seconds
        last = parse_time((ready or {}).get("lastHeartbeatTime"))
        reported = [(c.get("type"), c.get("status"), c.get("reason")) for c in conditions]
        uid = str(node["metadata"].get("uid"))
        posted = self._posted.get(uid)
        # The cache is behind only while its heartbeat is older than the one posted: once
        # it has caught up, what it holds counts, so that conditions someone else wrote
        # since (the node lifecycle controller's Unknown keeps our lastHeartbeatTime) are
        # seen and posted over, as tryUpdateNodeStatus compares with the node it fetched.
        if posted is not None and (last is None or posted[0] > last):
            last, reported = posted  # the cache has not seen our last post yet
        age = time.time() - last if last is not None else period
        mode = ready_mode(node)
        wanted = kubelet_conditions(mode, "", conditions)
        signature = [(c["type"], c["status"], c["reason"]) for c in wanted]
        if signature == reported and age < period - 0.5:
            return period - age
        heartbeat = meta_time()
        patch: Obj = {"conditions": kubelet_conditions(mode, heartbeat, conditions)}
        posted_ready = next(c["status"] for c in patch["conditions"] if c["type"] == "Ready")
        if ready is not None and self.events is not None and \
                ready.get("status") != posted_ready:
            # nodestatus/setters.go ReadyCondition: a changed Ready status is the
            # kubelet's NodeReady or NodeNotReady event (none when first appended)
            self.events.about_node(node, "NodeReady" if posted_ready == "True"
                                   else "NodeNotReady")
        if not status.get("capacity"):
            name = str(node["metadata"]["name"])
            digits = "".join(ch for ch in name[-3:] if ch.isdigit())
            address = node_address(int(digits)) if digits else node_address(254)
            patch.update({k: v for k, v in node_status(
                name, address, cpu=self.settings.node_cpu,
                memory=self.settings.node_memory, pods=self.settings.node_pods).items()
                if k != "conditions" and not status.get(k)})
        await ctx.client.patch_status(NODE, str(node["metadata"]["name"]), {"status": patch},
                                      patch_type=PatchType.MERGE)
        self._posted[uid] = (parse_time(heartbeat) or time.time(), signature)
        return period

    async def _renew_lease(self, ctx: Context[Obj], node: Obj) -> float:
        """Create or renew the node's Lease; seconds to the next renewal."""
        metadata = node["metadata"]
        name = str(metadata["name"])
        uid = str(metadata.get("uid"))
        lease = ctx.cache.get(LEASE, name, LEASE_NAMESPACE)
        renewed = parse_time((lease or {}).get("spec", {}).get("renewTime"))
        mine = self._leases.get(uid)
        mine_renewed = parse_time((mine or {}).get("spec", {}).get("renewTime"))
        if mine is not None and mine_renewed is not None and (
                renewed is None or mine_renewed >= renewed):
            lease, renewed = dict(mine), mine_renewed  # the cache has not seen it yet
        duration = self.settings.node_lease_duration_seconds
        every = duration * LEASE_RENEW_FRACTION
        if renewed is not None:
            left = every - (time.time() - renewed)
            if left > min(0.5, every / 10):  # not woken a little early: wait for it
                return left
        spec = {"holderIdentity": name, "leaseDurationSeconds": duration,
                "renewTime": micro_time()}
        try:
            if lease is None:
                written: Obj = await ctx.client.create({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                                 "ownerReferences": [{
                                     "apiVersion": "v1", "kind": "Node", "name": name,
                                     "uid": metadata.get("uid")}]},
                    "spec": spec})
            else:
                lease["spec"] = {**(lease.get("spec") or {}), **spec}
                written = await ctx.client.update(lease)
        except (AlreadyExistsError, ConflictError, NotFoundError):
            # someone else wrote or deleted it: as the lease
            # controller drops latestLease on an error, take it from the cache next time
            self._leases.pop(uid, None)
            return 0.2
        self._leases[uid] = written
        return every


class NodeRegistration:
    """The kubelets' registration of the settings' nodes, made once per manager: as the
    manager's runnable (once its caches synced), or earlier, when its program calls
    :meth:`start` before the manager starts, so that the nodes are created while the
    caches fill (``setpoint.workloads.supervised``); the runnable then waits for that one
    instead of posting the nodes again."""

    def __init__(self, settings: WorkloadSettings, events: KubeletEvents | None = None) -> None:
        self.settings = settings
        self.events = events
        self._task: asyncio.Future[list[str]] | None = None

    def __repr__(self) -> str:
        return f"NodeRegistration(nodes={self.settings.nodes})"

    def start(self, client: Client) -> asyncio.Future[list[str]]:
        """Register the nodes now (once): the names created, when done."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._register(client))
        return self._task

    async def _register(self, client: Client) -> list[str]:
        created = await register_nodes(client, self.settings)
        if self.events is not None:
            for name in created:  # a kept node's kubelet did not start again
                self.events.at_registration(name)
        return created

    async def __call__(self, manager: Manager) -> None:
        created = await self.start(manager.client)
        log.info("nodes_registered created=%s", ",".join(created) or "-")


def node_registration(manager: Manager) -> NodeRegistration | None:
    """The node registration :func:`install` gave ``manager`` (None without one)."""
    return next((r for r in manager.runnables if isinstance(r, NodeRegistration)), None)


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Register the nodes at start and run their kubelets' heartbeats and the node
    lifecycle controller (NotReady handling, condition taints, taint-based eviction)."""
    # imported here: setpoint.workloads.kubelet imports this module (its pod workers read
    # the node's fault modes)
    from setpoint.workloads.kubelet.events import KubeletEvents

    events = KubeletEvents(manager.client)
    manager.add_runnable(NodeRegistration(settings, events))

    async def flush_events(_: Manager) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await events.stop()

    manager.add_runnable(flush_events)
    manager.add(NodeHeartbeat(settings, events).controller)
    nodelifecycle.install(manager, settings)
