"""The DaemonSet controller: one pod on every node that should run it.

A port of ``pkg/controller/daemon``:

- a node should run the daemon when it matches the template's ``nodeSelector`` and required
  node affinity and every NoSchedule/NoExecute taint is tolerated, counting the tolerations
  every daemon pod gets (not-ready and unreachable NoExecute; disk-, memory-, pid-pressure
  and unschedulable NoSchedule; network-unavailable with host networking). A pod may stay
  on a node whose new NoSchedule taints it does not tolerate (``shouldContinueRunning``);
- each pod is pinned to its node with required node affinity ``matchFields``
  ``metadata.name In [node]`` and left to the scheduler to bind, labelled
  ``controller-revision-hash`` (its ControllerRevision's hash) and
  ``pod-template-generation``;
- failed pods are deleted (and recreated), extra pods on a node deleted (the oldest stays),
  pods on nodes that should not run them deleted;
- ``RollingUpdate``: old pods are replaced node by node, at most ``maxUnavailable`` nodes
  without an available daemon pod at a time (unavailable old pods go first); ``maxSurge``
  starts the new pod before the old one goes; ``OnDelete`` waits for deletions;
- status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady,
  numberAvailable, numberUnavailable, updatedNumberScheduled, observedGeneration.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

from setpoint.client import Kind, NotFoundError
from setpoint.machinery.metatime import parse_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.workloads.controllers import history
from setpoint.workloads.controllers.controllerref import claim, is_controlled_by, recheck_owner
from setpoint.workloads.controllers.podcontrol import (
    component_recorder,
    create_pod,
    delete_pod,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    pod_ready_time,
    selector_of,
)
from setpoint.workloads.scheduler.predicates import (
    first_untolerated_taint,
    matches_node_affinity,
)
from setpoint.workloads.settings import WorkloadSettings

DAEMON_SET = Kind("apps/v1", "DaemonSet")
POD = Kind("v1", "Pod")
NODE = Kind("v1", "Node")

REVISION_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
DEFAULT_HISTORY_LIMIT = 10

DAEMON_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def add_daemon_tolerations(spec: Obj) -> None:
    """``AddOrUpdateDaemonPodTolerations``."""
    wanted = list(DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(NETWORK_UNAVAILABLE)
    tolerations = list(spec.get("tolerations") or [])
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        tolerations = [t for t in tolerations
                       if not (t.get("key") == key and t.get("effect") == effect)]
        tolerations.append(toleration)
    spec["tolerations"] = tolerations


def pin_to_node(spec: Obj, node_name: str) -> None:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In",
                             "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    required["nodeSelectorTerms"] = [term]


def daemon_pod_spec(ds: Obj) -> Obj:
    """The template's pod as placed on any node (tolerations added), for predicates."""
    template = (ds.get("spec") or {}).get("template") or {}
    pod = {"metadata": clone(template.get("metadata") or {}),
           "spec": clone(template.get("spec") or {})}
    add_daemon_tolerations(pod["spec"])
    return pod


def node_should_run(pod: Obj, node: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run, should continue running)."""
    if not matches_node_affinity(pod, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    if first_untolerated_taint(taints, tolerations, ("NoExecute",)) is not None:
        return False, False
    if first_untolerated_taint(taints, tolerations, ("NoSchedule",)) is not None:
        return False, True
    return True, True


def node_of(pod: Obj) -> str:
    """The node a daemon pod is for: its ``nodeName`` or its pinned ``matchFields``."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and len(field.get("values") or []) == 1:
                return str(field["values"][0])
    return ""


def scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


class DaemonSetReconciler:
    """``syncDaemonSet`` for one DaemonSet per reconcile."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "DaemonSetReconciler()"

    async def reconcile(self, request: Request) -> Result:
        ds = self.manager.cache.get(DAEMON_SET, request.name, request.namespace)
        if ds is None or meta(ds).get("deletionTimestamp"):
            return Result()
        spec = ds.get("spec") or {}
        selector = selector_of(spec.get("selector"))
        candidates = self.manager.cache.list_raw(POD, namespace=request.namespace)
        pods = await claim(self.manager.client, ds, POD, candidates, selector,
                           can_adopt=recheck_owner(self.manager.client, ds, DAEMON_SET),
                           record=self.manager.writer.record)
        await history.claim_revisions(self.manager, ds, DAEMON_SET, release=True)
        revisions = history.owned_revisions(self.manager, ds)
        collision = int((ds.get("status") or {}).get("collisionCount") or 0)
        revision, collision = await history.ensure_update_revision(
            self.manager, ds, revisions, collision)
        hash_ = str((meta(revision).get("labels") or {}).get(history.HASH_LABEL) or "")
        nodes = self.manager.cache.list_raw(NODE)
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_node.setdefault(node_of(pod), []).append(pod)
        requeue = await self._sync_nodes(ds, nodes, by_node, hash_)
        pods = [p for p in self.manager.cache.list_raw(POD, namespace=request.namespace)
                if is_controlled_by(p, ds)]
        await self._write_status(ds, nodes, pods, hash_, collision)
        live = {name_of(revision)} | {f"{name_of(ds)}-{_hash_of(p)}" for p in pods}
        limit = spec.get("revisionHistoryLimit")
        await history.truncate_history(self.manager, history.owned_revisions(self.manager, ds),
                                       live, DEFAULT_HISTORY_LIMIT if limit is None
                                       else int(limit))
        return Result(requeue_after=requeue)

    async def _sync_nodes(self, ds: Obj, nodes: list[Obj], by_node: dict[str, list[Obj]],
                          hash_: str) -> float | None:
        """``manage`` then ``rollingUpdate``: which nodes get a pod, which pods go."""
        template_pod = daemon_pod_spec(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        create_on: list[str] = []
        delete: list[Obj] = []
        for node in nodes:
            node_name = name_of(node)
            should_run, should_continue = node_should_run(template_pod, node)
            daemon_pods = [p for p in by_node.pop(node_name, []) if not _terminating(p)]
            if should_run and not daemon_pods:
                create_on.append(node_name)
            elif should_continue:
                failed = [p for p in daemon_pods if _phase(p) == "Failed"]
                delete.extend(failed)
                running = [p for p in daemon_pods if p not in failed]
                if should_run and not running and failed:
                    continue  # the failed pod goes first; a new one comes after
                delete.extend(_extra_pods(running, hash_))
            else:
                delete.extend(daemon_pods)
        for orphaned in by_node.values():  # pods for nodes that no longer exist
            delete.extend(p for p in orphaned if not _terminating(p))
        for node_name in create_on:
            await self._create(ds, node_name, hash_)
        for pod in delete:
            await self._delete(ds, pod)
        if create_on or delete:
            return None
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return None
        return await self._rolling_update(ds, nodes, template_pod, hash_, min_ready)

    async def _rolling_update(self, ds: Obj, nodes: list[Obj], template_pod: Obj,
                              hash_: str, min_ready: int) -> float | None:
        pods = [p for p in self.manager.cache.list_raw(POD, namespace=namespace_of(ds))
                if is_controlled_by(p, ds)]
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_node.setdefault(node_of(pod), []).append(pod)
        desired = [n for n in nodes if node_should_run(template_pod, n)[0]]
        rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        max_surge = scaled(rolling.get("maxSurge", 0), len(desired), True)
        max_unavailable = scaled(rolling.get("maxUnavailable", 1), len(desired), True)
        if max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1
        unavailable = 0
        replace_now: list[Obj] = []
        candidates: list[Obj] = []
        surge_nodes: list[str] = []
        requeue: float | None = None
        for node in desired:
            node_pods = [p for p in by_node.get(name_of(node), []) if not _terminating(p)]
            new = [p for p in node_pods if _hash_of(p) == hash_]
            old = [p for p in node_pods if _hash_of(p) != hash_]
            new_available = any(is_pod_available(p, min_ready) for p in new)
            if not old:
                if not new_available:
                    unavailable += 1
                    requeue = _soonest(requeue, new, min_ready)
                continue
            old_available = any(is_pod_available(p, min_ready) for p in old)
            if max_surge == 0:
                if not old_available:
                    unavailable += 1
                    replace_now.extend(old)
                else:
                    candidates.extend(old)
            elif new_available:
                replace_now.extend(old)  # the surge pod is up: the old one may go
            elif not new:
                surge_nodes.append(name_of(node))
            else:
                requeue = _soonest(requeue, new, min_ready)
        if max_surge == 0:
            budget = max(0, max_unavailable - unavailable)
            replace_now.extend(candidates[:budget])
        else:
            for node_name in surge_nodes[:max(0, max_surge)]:
                await self._create(ds, node_name, hash_)
        for pod in replace_now:
            await self._delete(ds, pod)
        return requeue

    async def _create(self, ds: Obj, node_name: str, hash_: str) -> None:
        template = (ds.get("spec") or {}).get("template") or {}
        pod = pod_from_template(template, ds)
        labels = pod["metadata"].setdefault("labels", {})
        labels[REVISION_LABEL] = hash_
        labels[GENERATION_LABEL] = str(meta(ds).get("generation") or 1)
        add_daemon_tolerations(pod["spec"])
        pin_to_node(pod["spec"], node_name)
        await create_pod(self.manager.client, ds, pod, record=self.manager.writer.record,
                         events=self.events)

    async def _delete(self, ds: Obj, pod: Obj) -> None:
        with contextlib.suppress(NotFoundError):
            await delete_pod(self.manager.client, ds, pod, events=self.events)

    async def _write_status(self, ds: Obj, nodes: list[Obj], pods: list[Obj], hash_: str,
                            collision: int) -> None:
        template_pod = daemon_pod_spec(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            if not _terminating(pod):
                by_node.setdefault(node_of(pod), []).append(pod)
        counts = dict.fromkeys(("desired", "current", "misscheduled", "ready", "available",
                                "updated"), 0)
        for node in nodes:
            node_pods = by_node.get(name_of(node), [])
            should_run, _ = node_should_run(template_pod, node)
            if should_run:
                counts["desired"] += 1
                if node_pods:
                    counts["current"] += 1
                    oldest = min(node_pods, key=_created)
                    if is_pod_ready(oldest):
                        counts["ready"] += 1
                        counts["available"] += is_pod_available(oldest, min_ready)
                    counts["updated"] += any(_hash_of(p) == hash_ for p in node_pods)
            elif node_pods:
                counts["misscheduled"] += 1
        status: Obj = {
            "currentNumberScheduled": counts["current"],
            "numberMisscheduled": counts["misscheduled"],
            "desiredNumberScheduled": counts["desired"],
            "numberReady": counts["ready"],
            "observedGeneration": meta(ds).get("generation"),
            "updatedNumberScheduled": counts["updated"] or None,
            "numberAvailable": counts["available"] or None,
            "numberUnavailable": (counts["desired"] - counts["available"]) or None,
            "collisionCount": collision or None,
        }
        for key in ("conditions",):
            if (ds.get("status") or {}).get(key):
                status[key] = ds["status"][key]
        status = {k: v for k, v in status.items() if v is not None}
        if status == (ds.get("status") or {}):
            return
        body = clone(ds)
        body["status"] = status
        await self.manager.writer.update_status(body)


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def _hash_of(pod: Obj) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL) or "")


def _created(pod: Obj) -> tuple[float, str]:
    return parse_time(meta(pod).get("creationTimestamp")) or 0.0, name_of(pod)


def _extra_pods(pods: list[Obj], hash_: str) -> list[Obj]:
    """More than one pod on a node: the oldest stays (a surge pair of old and new is left
    to the rolling update)."""
    if len(pods) <= 1:
        return []
    if len(pods) == 2 and len({_hash_of(p) == hash_ for p in pods}) == 2:
        return []
    keep = min(pods, key=_created)
    return [p for p in pods if p is not keep]


def _soonest(current: float | None, pods: list[Obj], min_ready: int) -> float | None:
    """When a ready pod will have been ready for ``min_ready`` seconds."""
    for pod in pods:
        since = pod_ready_time(pod)
        if since is not None and min_ready:
            wait = max(0.1, since + min_ready - time.time() + 0.1)
            current = wait if current is None else min(current, wait)
    return current


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the DaemonSet controller (events from ``daemonset-controller``)."""

    def all_sets(_node: Obj) -> list[Request]:
        return [Request(namespace_of(d), name_of(d)) for d in manager.cache.list_raw(DAEMON_SET)]

    events = component_recorder(manager, "daemonset-controller")
    manager.add(Controller.for_(DAEMON_SET, name="daemonset")
                .owns(POD)
                .owns(history.CONTROLLER_REVISION)
                .watches(NODE, map_func=all_sets)
                .reconciler(DaemonSetReconciler(manager, events)))
