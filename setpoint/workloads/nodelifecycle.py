"""The node lifecycle controller: what kube-controller-manager does about node health.

- Node health is judged by timestamps alone, as ``monitorNodeHealth`` / ``tryUpdateNodeHealth``
  do (pkg/controller/nodelifecycle/node_lifecycle_controller.go): the node's last probe is
  the later of its Lease's ``renewTime`` (``kube-node-lease``) and its Ready condition's
  ``lastHeartbeatTime``. When neither was renewed for ``node_monitor_grace_period_seconds``
  (40 s), its kubelet-owned conditions become ``Unknown``, reason ``NodeStatusUnknown``,
  message ``Kubelet stopped posting node status.``; a node that never posted a Ready
  condition gets ``NodeStatusNeverUpdated`` after ``node_startup_grace_period_seconds``
  (60 s) from its creation. A kubelet stops renewing when it is stopped (the
  ``sim.setpoint.dev/node-ready: unknown`` fault); when it comes back its status post
  (Ready=True) lifts the unreachable taints, as ``markNodeAsReachable`` does. A grace
  period that ran out is acted on at the next tick of ``node_monitor_period_seconds`` (5 s)
  from the controller's start, as monitorNodeHealth runs every ``nodeMonitorPeriod``.
- Conditions become taints (``doNoScheduleTaintingPass`` and the NoExecute tainting pass):
  ``not-ready`` / ``unreachable`` with NoSchedule and NoExecute for Ready False / Unknown,
  ``memory-pressure``, ``disk-pressure``, ``pid-pressure``, ``network-unavailable`` with
  NoSchedule, and ``unschedulable`` for a cordoned node. Other taints are left alone. A
  node is created with ``not-ready:NoSchedule`` (TaintNodesByCondition admission,
  ``setpoint.cluster.admission.nodetaint``): the first pass over a node its kubelet
  registered Ready takes it away, so nothing is scheduled to a node before that.
- A node first seen gets a ``RegisteredNode`` event (``Node <name> event: Registered Node
  <name> in Controller``), as monitorNodeHealth records for the nodes it adds to its known set.
- Events are reported as kube-controller-manager's do: ``node-controller`` for the node
  lifecycle controller's, ``taint-eviction-controller`` for the taint eviction controller's.
- When this controller turns a node's ``Ready=True`` into Unknown, the node gets a
  ``NodeNotReady`` event (RecordNodeStatusChange) and its pods ``Ready=False`` with a
  ``NodeNotReady`` warning each (``MarkPodsNotReady``), in the same monitorNodeHealth pass;
  a marking that failed is tried again at the next tick while the node is not Ready
  (``nodesToRetry``). A node registered NotReady, or a kubelet posting False, gets
  neither: its pods are their kubelet's to report.
- Taint-based eviction (the taint eviction controller): a pod on a node with NoExecute
  taints it does not tolerate is deleted at once; one that tolerates them for
  ``tolerationSeconds`` (300 by default, from admission) is deleted when that time has
  passed since the taint was added, after a ``DisruptionTarget`` condition is written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from setpoint.client import ApiError, ClientError, Kind, NotFoundError, PatchType
from setpoint.machinery.metatime import meta_time, parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Context, Controller, Funcs, Manager, Request, Result
from setpoint.runtime._events import EventRecorder
from setpoint.runtime._objects import clone
from setpoint.workloads.controllers.podcontrol import component_recorder
from setpoint.workloads.nodelease import LEASE, LEASE_NAMESPACE, NODE
from setpoint.workloads.scheduler.predicates import tolerates
from setpoint.workloads.settings import WorkloadSettings

POD = Kind("v1", "Pod")
NODE_NAME_INDEX = "setpoint.workloads/spec.nodeName"

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
CONDITION_TAINTS = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
    "NetworkUnavailable": "node.kubernetes.io/network-unavailable",
}
MANAGED_NO_SCHEDULE = {NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT,
                       *CONDITION_TAINTS.values()}
MANAGED_NO_EXECUTE = {NOT_READY_TAINT, UNREACHABLE_TAINT}
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
STOPPED_POSTING = "Kubelet stopped posting node status."


def _condition(node: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    c: Mapping[str, Any]
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def ready_status(node: Mapping[str, Any]) -> str:
    """``True``, ``False`` or ``Unknown`` (a node that never reported counts Unknown)."""
    ready = _condition(node, "Ready")
    return str(ready.get("status")) if ready is not None else "Unknown"


def wanted_taints(node: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (key, effect) pairs the node's conditions and cordon call for.

    Only conditions the node has count (node_lifecycle_controller.go
    ``doNoScheduleTaintingPass`` maps ``node.Status.Conditions`` through
    ``nodeConditionToTaintKeyStatusMap``; ``processTaintBaseEviction`` runs only when
    ``currentReadyCondition != nil``): a node that has not posted a Ready condition gets
    no not-ready/unreachable taint from here, and loses the ``not-ready:NoSchedule`` that
    TaintNodesByCondition admission gave it, as the real pass takes it away."""
    out: set[tuple[str, str]] = set()
    ready = _condition(node, "Ready")
    status = ready.get("status") if ready is not None else None
    if status == "False":
        out |= {(NOT_READY_TAINT, "NoSchedule"), (NOT_READY_TAINT, "NoExecute")}
    elif status == "Unknown":
        out |= {(UNREACHABLE_TAINT, "NoSchedule"), (UNREACHABLE_TAINT, "NoExecute")}
    for type_, key in CONDITION_TAINTS.items():
        condition = _condition(node, type_)
        if condition is not None and condition.get("status") == "True":
            out.add((key, "NoSchedule"))
    if (node.get("spec") or {}).get("unschedulable"):
        out.add((UNSCHEDULABLE_TAINT, "NoSchedule"))
    return out


def _managed(taint: Mapping[str, Any]) -> bool:
    effect, key = taint.get("effect"), taint.get("key")
    return (effect == "NoSchedule" and key in MANAGED_NO_SCHEDULE) or \
        (effect == "NoExecute" and key in MANAGED_NO_EXECUTE)


def withheld_no_execute(node: Mapping[str, Any], last_tick: float | None) -> set[
        tuple[str, str]]:
    """The NoExecute taints the node's Ready condition calls for but no monitor tick has
    seen yet: node_lifecycle_controller.go adds them in ``processTaintBaseEviction``, run by
    ``monitorNodeHealth`` every nodeMonitorPeriod, not on a Node event as the NoSchedule
    ones (``doNoScheduleTaintingPass``). So a node Ready=False only between two ticks (a
    kubelet's registration before its first runtime check) never gets them. Ready=Unknown
    is set by that same pass, which taints at once."""
    if last_tick is None:
        return set()
    current = {(t.get("key"), t.get("effect")) for t in
               (node.get("spec") or {}).get("taints") or ()}
    ready = _condition(node, "Ready") or {}
    if ready.get("status") != "False":
        return set()  # Unknown is the monitor's own write, tainted in the same pass
    since = parse_time(ready.get("lastTransitionTime"))
    # the time is in whole seconds: the transition came at the latest a second after it
    if since is not None and since + 1.0 <= last_tick:
        return set()
    return {(k, e) for k, e in wanted_taints(node) if e == "NoExecute"} - current


def reconcile_taints(node: Mapping[str, Any],
                     last_tick: float | None = None) -> list[Obj] | None:
    """The node's taints with the managed ones made to match its state, or None when they
    already do (existing taints keep their ``timeAdded``); with ``last_tick`` (the monitor's
    latest), NoExecute ones wait for a tick that saw the condition (:func:`withheld_no_execute`)."""
    current = [dict(t) for t in (node.get("spec") or {}).get("taints") or ()]
    wanted = wanted_taints(node) - withheld_no_execute(node, last_tick)
    kept = [t for t in current if not _managed(t) or (t.get("key"), t.get("effect")) in wanted]
    have = {(t.get("key"), t.get("effect")) for t in kept}
    stamp = meta_time()
    for key, effect in sorted(wanted - have):
        kept.append({"key": key, "effect": effect, "timeAdded": stamp})
    return None if kept == current else kept


def health_deadline(node: Mapping[str, Any], lease: Mapping[str, Any] | None,
                    settings: WorkloadSettings, first_seen: float | None = None) -> float | None:
    """When (epoch seconds) the node is to be marked Unknown unless it is heard from again;
    None when no time is known to count from.

    tryUpdateNodeHealth (node_lifecycle_controller.go) moves the node's probe timestamp on
    a new Ready ``lastHeartbeatTime`` or a later Lease ``renewTime``, and waits
    ``nodeMonitorGracePeriod`` from it, or ``nodeStartupGracePeriod`` from the node's
    ``creationTimestamp`` when it never posted a Ready condition. The times are the
    kubelets', on this machine's clock, so they are compared as they are. ``first_seen``:
    when this controller first saw the node, where a new nodeHealth starts its probe
    timestamp, so a restarted controller gives every node a whole grace period."""
    ready = _condition(node, "Ready")
    if ready is None:  # the probe timestamp starts at creation then, first seen or not
        grace = settings.node_startup_grace_period_seconds
        start = parse_time((node.get("metadata") or {}).get("creationTimestamp"))
        first_seen = None
    else:
        grace = settings.node_monitor_grace_period_seconds
        start = parse_time(ready.get("lastHeartbeatTime"))
    renewed = parse_time(((lease or {}).get("spec") or {}).get("renewTime"))
    probes = [t for t in (start, renewed, first_seen) if t is not None]
    return max(probes) + grace if probes else None


def unknown_conditions(node: Mapping[str, Any]) -> list[Obj] | None:
    """The conditions after the kubelet stopped posting, or None if already so."""
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or ()]
    stamp = meta_time()
    # a condition the kubelet never posted keeps the node's creation as its heartbeat
    created = (node.get("metadata") or {}).get("creationTimestamp") or stamp
    changed = False
    seen = set()
    for c in conditions:
        seen.add(c.get("type"))
        if c.get("type") in KUBELET_CONDITIONS and c.get("status") != "Unknown":
            c.update(status="Unknown", reason="NodeStatusUnknown", message=STOPPED_POSTING,
                     lastTransitionTime=stamp)
            changed = True
    for type_ in KUBELET_CONDITIONS:
        if type_ not in seen:
            conditions.append({"type": type_, "status": "Unknown", "lastHeartbeatTime": created,
                               "lastTransitionTime": stamp, "reason": "NodeStatusNeverUpdated",
                               "message": "Kubelet never posted node status."})
            changed = True
    return conditions if changed else None


def index_by_node(pod: Obj) -> Iterable[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return (node,) if node else ()


class NodeLifecycle:
    """Node health → conditions, taints and pod readiness (one controller over Nodes)."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None,
                 settings: WorkloadSettings | None = None) -> None:
        self.manager = manager
        self.events = events
        self.settings = settings or WorkloadSettings()
        # monitorNodeHealth's nodesToRetry: nodes whose pods' marking failed part way
        self._retry: set[str] = set()
        # monitorNodeHealth's knownNodeSet: names, in memory, so a restarted
        # controller-manager registers every node again, as the real one does
        # (and when first seen, where its probe timestamp starts)
        self._known: dict[str, float] = {}
        # monitorNodeHealth runs every nodeMonitorPeriod from the controller's start
        # (wait.UntilWithContext in node_lifecycle_controller.go Run): deadlines are
        # acted on at those ticks
        self._epoch = time.time()
        self.controller: Controller[Obj] = Controller.for_(NODE, name="node-lifecycle")
        # Leases are read from the cache, not watched: a renewal every 10 s per node would
        # be a reconcile each; the node is looked at again when its deadline comes, as
        # monitorNodeHealth polls every nodeMonitorPeriod
        self.controller.reads(POD).reads(LEASE)
        self.controller.reconcile(self.reconcile)

    def __repr__(self) -> str:
        return "NodeLifecycle()"

    async def reconcile(self, ctx: Context[Obj], node: Obj) -> Result:
        name = str(node["metadata"]["name"])
        if name not in self._known:
            self._known[name] = time.time()
            if self.events is not None:
                # pkg/controller/nodelifecycle/node_lifecycle_controller.go monitorNodeHealth,
                # through pkg/controller/util/node/controller_utils.go RecordNodeEvent
                self.events.normal(node, "RegisteredNode",
                                   f"Node {name} event: Registered Node {name} in Controller")
        deadline = health_deadline(node, ctx.cache.get(LEASE, name, LEASE_NAMESPACE),
                                   self.settings, self._known[name])
        now = time.time()
        recheck: float | None = None
        if deadline is not None and now < deadline:
            recheck = self._next_tick(deadline) - now + 0.05
        else:
            conditions = unknown_conditions(node)
            if conditions is not None:
                await ctx.client.patch_status(NODE, name, {"status": {"conditions": conditions}},
                                              patch_type=PatchType.MERGE)
                if ready_status(node) == "True":
                    # monitorNodeHealth reports NodeNotReady and marks the pods only when its
                    # own update turned an observed Ready=True into Unknown
                    # (currentReadyCondition != True && observedReadyCondition == True): a
                    # kubelet posting False, or a node registered NotReady, is the kubelet's
                    # to report, not node-controller's
                    if self.events is not None:
                        self.events.normal(node, "NodeNotReady",
                                           f"Node {name} status is now: NodeNotReady")
                    await self._mark_pods(ctx, name)
                return Result()  # the write comes back as an event
        last_tick = self._last_tick(now)
        if withheld_no_execute(node, last_tick):
            tick = self._next_tick(now + 1e-3) - now + 0.05
            recheck = tick if recheck is None else min(recheck, tick)
        taints = reconcile_taints(node, last_tick)
        if taints is not None:
            body = clone(node)
            body.setdefault("spec", {})["taints"] = taints or None
            await ctx.client.update(body)  # resourceVersion set: a conflict retries
        if name in self._retry:
            # monitorNodeHealth: ``needsRetry && observedReadyCondition.Status != True``
            # marks again; any other pass drops the node from nodesToRetry
            if ready_status(node) == "True":
                self._retry.discard(name)
            else:
                await self._mark_pods(ctx, name)
        return Result(requeue_after=recheck)

    def _last_tick(self, now: float) -> float | None:
        """The latest monitor tick at or before ``now`` (None: every moment is one)."""
        period = self.settings.node_monitor_period_seconds
        if period <= 0:
            return None
        return self._epoch + math.floor((now - self._epoch) / period) * period

    def _next_tick(self, deadline: float) -> float:
        """The first monitor tick at or after ``deadline``."""
        period = self.settings.node_monitor_period_seconds
        if period <= 0:
            return deadline
        return self._epoch + math.ceil((deadline - self._epoch) / period) * period

    async def _mark_pods(self, ctx: Context[Obj], name: str) -> None:
        """Pods of the node ``Ready=False``, each with a ``NodeNotReady`` warning, as
        pkg/controller/util/node/controller_utils.go ``MarkPodsNotReady`` writes them: a
        pod already ``Ready=False`` (or without the condition) is left alone, a gone one
        skipped, and one that failed leaves the node in nodesToRetry (re-raised, so the
        reconcile is retried; the next pass marks only what is still to be marked)."""
        self._retry.add(name)
        stamp = meta_time()
        failed: ApiError | ClientError | None = None
        for pod in ctx.cache.list_raw(POD, index=(NODE_NAME_INDEX, name)):
            ready_condition = _condition(pod, "Ready")
            if ready_condition is None or ready_condition.get("status") == "False":
                continue
            condition = {**ready_condition, "status": "False", "lastTransitionTime": stamp}
            metadata = pod["metadata"]
            try:
                await ctx.client.patch_status(
                    POD, metadata["name"], {"status": {"conditions": [condition]}},
                    patch_type=PatchType.STRATEGIC, namespace=metadata["namespace"])
            except NotFoundError:
                continue
            except (ApiError, ClientError) as error:  # the others are still marked
                failed = error
                continue
            if self.events is not None:
                self.events.warning(pod, "NodeNotReady", "Node is not ready")
        if failed is not None:
            raise failed
        self._retry.discard(name)


# -- taint-based eviction ------------------------------------------------------------------

def no_execute_taints(node: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or ()
            if t.get("effect") == "NoExecute"]


def eviction_delay(pod: Mapping[str, Any], taints: Sequence[Mapping[str, Any]],
                   now: float) -> float | None:
    """Seconds until the pod must be evicted for ``taints`` (0: now), None: never."""
    if not taints:
        return None
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or ()
                   if (t.get("effect") or "NoExecute") == "NoExecute"]
    used = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        used.extend(matching)
    seconds = [t["tolerationSeconds"] for t in used if t.get("tolerationSeconds") is not None]
    if not seconds:
        return None
    shortest = max(0, min(int(s) for s in seconds))
    added = [parse_time(t.get("timeAdded")) for t in taints]
    start = min((a for a in added if a is not None), default=now)
    return max(0.0, start + shortest - now)


class TaintEviction:
    """Deletes pods from nodes whose NoExecute taints they do not (or no longer) tolerate."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

        def on_tainted_node(pod: Obj) -> bool:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name:
                return False
            return bool(no_execute_taints(manager.cache.store_for(NODE).get(node_name)))

        def pods_of(node: Obj) -> Iterable[Request]:
            if not no_execute_taints(node):
                return ()
            name = node["metadata"]["name"]
            return [Request(p["metadata"]["namespace"], p["metadata"]["name"])
                    for p in manager.cache.list_raw(POD, index=(NODE_NAME_INDEX, name))]

        self.controller: Controller[Obj] = (
            Controller.for_(POD, name="taint-eviction", predicates=[Funcs(
                create=on_tainted_node, update=lambda _, new: on_tainted_node(new),
                delete=lambda _: False)])
            .watches(NODE, map_func=pods_of, predicates=[Funcs(
                update=lambda old, new: no_execute_taints(old) != no_execute_taints(new),
                delete=lambda _: False)]))
        self.controller.reconcile(self.reconcile)

    def __repr__(self) -> str:
        return "TaintEviction()"

    async def reconcile(self, ctx: Context[Obj], pod: Obj) -> Result:
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp") or \
                (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return Result()
        # read in place, as the predicate does (Go's listers hand out their pointers): a
        # copy of the Node for every pod event of a tainted node was read and thrown away
        node = ctx.cache.store_for(NODE).get((pod.get("spec") or {}).get("nodeName") or "")
        delay = eviction_delay(pod, no_execute_taints(node), time.time())
        if delay is None:
            return Result()
        if delay > 0:
            return Result(requeue_after=delay)
        namespace, name = metadata["namespace"], metadata["name"]
        if self.events is not None:  # taint_eviction.go emitPodDeletionEvent
            self.events.normal(pod, "TaintManagerEviction",
                               f"Marking for deletion Pod {namespace}/{name}")
        condition = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": meta_time(), "reason": "DeletionByTaintManager",
                     "message": "Taint manager: deleting due to NoExecute taint"}
        try:
            await ctx.client.patch_status(POD, name, {"status": {"conditions": [condition]}},
                                          patch_type=PatchType.STRATEGIC, namespace=namespace)
            await ctx.client.delete(POD, name, namespace=namespace, uid=metadata.get("uid"))
        except NotFoundError:
            pass
        return Result()


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the node lifecycle and taint eviction controllers to ``manager``."""
    store = manager.cache.store_for(POD, create=True)
    store.add_indexer(NODE_NAME_INDEX, index_by_node)
    # the components' names: kube-controller-manager's nodelifecycle and tainteviction
    # controllers' event sources (pkg/controller/nodelifecycle/node_lifecycle_controller.go
    # NewNodeLifecycleController, pkg/controller/tainteviction/taint_eviction.go New)
    node_lifecycle = NodeLifecycle(manager, component_recorder(manager, "node-controller"),
                                   settings)
    manager.add(node_lifecycle.controller)
    manager.add(TaintEviction(manager, component_recorder(manager,
                                                          "taint-eviction-controller")).controller)
