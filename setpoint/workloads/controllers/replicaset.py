"""The ReplicaSet controller: keep ``spec.replicas`` pods matching the selector.

A port of ``pkg/controller/replicaset``. Each sync claims the pods of its namespace
(adopting matching orphans, releasing owned pods that stopped matching), then, when its
expectations are met, creates the missing pods from the template in slow-start batches or
deletes the surplus in the order :func:`~.podcontrol.rank_pods_for_deletion` gives
(unscheduled, pending, not ready, doubled-up, recently ready, restarted, newer first), and
writes ``status``: ``replicas`` (active pods), ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas`` (ready for ``minReadySeconds``), ``observedGeneration`` and the
``ReplicaFailure`` condition when creating or deleting failed.

Expectations count the creations and deletions in flight, so a cache that lags the writes
never makes it create or delete twice. Pods it creates are recorded in the cache at once,
which lets the same sync report them in ``status``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from setpoint.client import ApiError, Client, ConflictError, Kind, NotFoundError
from setpoint.machinery.labels import Selector, SelectorError
from setpoint.machinery.metatime import meta_time
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, Manager, Request, Result
from setpoint.runtime._objects import clone, meta, name_of, namespace_of, object_key
from setpoint.runtime._ownership import controller_of
from setpoint.workloads.controllers.controllerref import (
    ControllerOrAdopters,
    claim,
    controller_name,
    index_orphans,
    orphans,
    recheck_owner,
)
from setpoint.workloads.controllers.podcontrol import (
    POD,
    Expectations,
    component_recorder,
    create_pod,
    delete_pod,
    error_text,
    filter_active_pods,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    labels_of,
    pod_from_template,
    pod_key,
    pod_ready_time,
    rank_pods_for_deletion,
    selector_of,
    slow_start_batch,
)
from setpoint.workloads.settings import WorkloadSettings

log = logging.getLogger(__name__)

REPLICA_SET = Kind("apps/v1", "ReplicaSet")
BURST_REPLICAS = 500
"""At most this many pods are created or deleted in one sync (``--replicaset-burst``)."""
NAMESPACE_TERMINATING = "NamespaceTerminating"
REPLICA_FAILURE = "ReplicaFailure"


def _spec_replicas(rs: Mapping[str, Any]) -> int:
    value = (rs.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


class _ExpectationObserver:
    """Counts the pod creations and deletions the controller waits for, as they appear in
    the cache (an informer handler: synchronous, never awaits)."""

    def __init__(self, manager: Manager, expectations: Expectations, kind: Kind) -> None:
        self.manager = manager
        self.expectations = expectations
        self.kind = kind

    def _owner_key(self, pod: Obj) -> str | None:
        owner = controller_name(pod, self.kind.kind, api_group(self.kind))
        if owner is None:
            return None
        rs = self.manager.cache.store_for(self.kind).get(object_key(namespace_of(pod), owner))
        ref = controller_of(pod)
        if rs is None or ref is None or meta(rs).get("uid") != ref.get("uid"):
            return None
        return f"{namespace_of(pod)}/{owner}"

    def on_add(self, obj: Obj) -> None:
        if meta(obj).get("deletionTimestamp"):
            # seen for the first time already terminating: not one of our creations
            self.on_delete(obj)
            return
        key = self._owner_key(obj)
        if key is not None:
            self.expectations.creation_observed(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        if meta(new).get("deletionTimestamp") and not meta(old).get("deletionTimestamp"):
            self.on_delete(new)

    def on_delete(self, obj: Obj) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.expectations.deletion_observed(key, pod_key(obj))


def api_group(kind: Kind) -> str:
    """The API group of ``kind`` (``""``: the core group)."""
    return kind.api_version.rpartition("/")[0]


def _has_cause(error: BaseException, reason: str) -> bool:
    return any(getattr(c, "reason", None) == reason for c in getattr(error, "causes", ()) or ())


class ReplicaSetReconciler:
    """Syncs one ReplicaSet per request (``syncReplicaSet``)."""

    kind = REPLICA_SET

    def __init__(self, manager: Manager, events: Any = None) -> None:
        self.manager = manager
        self.expectations = Expectations()
        self.events = events
        self.burst = BURST_REPLICAS

    def __repr__(self) -> str:
        return f"ReplicaSetReconciler({self.expectations!r})"

    @property
    def client(self) -> Client:
        return self.manager.client

    def record(self, obj: Obj) -> None:
        self.manager.writer.record(obj)

    # -- the sync --------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        cached = self.manager.cache.store_for(self.kind).get(
            object_key(request.namespace, request.name))
        if cached is None:
            self.expectations.forget(key)
            return Result()
        # read in place, as Go reads its lister's pointer until ``rs.DeepCopy()`` before
        # calculateStatus: nothing here writes into it (the status is computed into a copy
        # of its own and PUT as a new body), and the cache replaces, never changes, what it
        # holds. The sync runs on every event of the ReplicaSet's pods: a copy each time
        rs = cached
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.selector(rs)
        except SelectorError as exc:
            log.error("replicaset_invalid_selector key=%s error=%s", key, exc)
            return Result()
        pods = await claim(
            self.client, rs, POD, self._candidates(rs), selector,
            can_adopt=recheck_owner(self.client, rs, self.kind), record=self.record)
        pods = filter_active_pods(pods)
        manage_error: Exception | None = None
        if needs_sync and not meta(rs).get("deletionTimestamp"):
            deleted: set[str] = set()
            manage_error = await self._manage_replicas(pods, rs, deleted)
            # count what this sync did: pods it created are in the cache already, pods it
            # deleted are terminating (no longer active) whether or not the cache knows yet
            pods = [p for p in filter_active_pods(self._owned(rs))
                    if selector.matches(labels_of(p)) and pod_key(p) not in deleted]
        status = calculate_status(rs, pods, manage_error)
        await self._update_status(rs, status)
        if manage_error is not None:
            raise manage_error
        return Result(requeue_after=_next_availability(rs, pods))

    def selector(self, rs: Obj) -> Selector:
        """The pods ``rs`` selects (``spec.selector``, a LabelSelector)."""
        return selector_of((rs.get("spec") or {}).get("selector"))

    def _owned(self, rs: Obj) -> list[Obj]:
        uid = str(meta(rs).get("uid") or "")
        return self.manager.cache.list_raw(POD, index=("owner", uid))

    def _candidates(self, rs: Obj) -> list[Obj]:
        """Active pods this ReplicaSet may claim: those it controls and the orphans of its
        namespace (pods controlled by others are never claimed)."""
        seen: dict[str, Obj] = {}
        for pod in self._owned(rs) + orphans(self.manager, POD, namespace_of(rs)):
            if is_pod_active(pod):
                seen[pod_key(pod)] = pod
        return list(seen.values())

    async def _manage_replicas(self, pods: list[Obj], rs: Obj,
                               deleted: set[str]) -> Exception | None:
        """``manageReplicas``: create or delete pods towards ``spec.replicas`` (adding the
        keys of the pods it deleted to ``deleted``); returns the first failure."""
        key = f"{namespace_of(rs)}/{name_of(rs)}"
        diff = len(pods) - _spec_replicas(rs)
        if diff < 0:
            count = min(-diff, self.burst)
            self.expectations.expect_creations(key, count)
            template = (rs.get("spec") or {}).get("template") or {}

            async def create() -> None:
                try:
                    await create_pod(self.client, rs, pod_from_template(template, rs),
                                     record=self.record, events=self.events)
                except ApiError as exc:
                    if _has_cause(exc, NAMESPACE_TERMINATING):
                        self.expectations.creation_observed(key)
                        return
                    raise

            created, error = await slow_start_batch(count, 1, create)
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            return error
        if diff > 0:
            count = min(diff, self.burst)
            # getPodsToDelete (replica_set.go): no ranking when every pod goes
            doomed = pods[:count] if count >= len(pods) else \
                rank_pods_for_deletion(pods, self._related_pods(rs))[:count]
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
            results = await asyncio.gather(
                *(delete_pod(self.client, rs, pod, events=self.events) for pod in doomed),
                return_exceptions=True)
            first: Exception | None = None
            for pod, result in zip(doomed, results, strict=True):
                if not isinstance(result, BaseException):
                    deleted.add(pod_key(pod))
                    continue
                self.expectations.deletion_observed(key, pod_key(pod))
                if not isinstance(result, Exception):
                    raise result
                if not isinstance(result, NotFoundError) and first is None:
                    first = result
            return first
        return None

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """``getIndirectlyRelatedPods``: the pods of every ReplicaSet with the same
        controller (a Deployment's old and new ones), to spread deletions over nodes."""
        ref = controller_of(rs)
        # by the owner index, not a scan of the namespace: a rollout of thousands of
        # ReplicaSets scales each of them down several times
        siblings = [rs] if ref is None else [
            other for other in self.manager.cache.list_raw(
                self.kind, namespace=namespace_of(rs), index=("owner", str(ref.get("uid"))))
            if (controller_of(other) or {}).get("uid") == ref.get("uid")]
        seen: dict[str, Obj] = {}
        for sibling in siblings:
            for pod in self._owned(sibling):
                seen.setdefault(str(meta(pod).get("uid")), pod)
        return list(seen.values())

    async def _update_status(self, rs: Obj, status: Obj) -> None:
        """``updateReplicaSetStatus``: PUT the status unless nothing changed; one retry
        with a fresh read after a conflict."""
        current = rs.get("status") or {}
        generation = meta(rs).get("generation")
        if _counts(current) == _counts(status) and \
                current.get("observedGeneration") == generation and \
                (current.get("conditions") or []) == (status.get("conditions") or []):
            return
        status["observedGeneration"] = generation
        body = rs
        for attempt in range(2):
            body = {**body, "status": _omit_zero(status)}
            try:
                updated: Obj = await self.client.update_status(body)
            except ConflictError:
                if attempt:
                    raise
                body = await self.client.get(self.kind, name_of(rs), namespace=namespace_of(rs))
                continue
            self.record(updated)
            return


_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def _counts(status: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(int(status.get(k) or 0) for k in _COUNTS)


def _omit_zero(status: Obj) -> Obj:
    """The status as the API serializes it (zero counts other than replicas omitted)."""
    return {k: v for k, v in status.items()
            if k == "replicas" or v not in (0, None, [])}


def calculate_status(rs: Obj, pods: list[Obj], manage_error: Exception | None) -> Obj:
    """``calculateStatus``: counts from the active pods, and ``ReplicaFailure`` set when
    managing replicas failed (``FailedCreate``/``FailedDelete``), removed when it worked."""
    status = clone(rs.get("status") or {})
    template_labels = ((rs.get("spec") or {}).get("template") or {}).get("metadata") or {}
    wanted = template_labels.get("labels") or {}
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    now = time.time()
    fully_labeled = ready = available = 0
    for pod in pods:
        labels = labels_of(pod)
        if all(labels.get(k) == v for k, v in wanted.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    failure = next((c for c in status.get("conditions") or []
                    if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - _spec_replicas(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": REPLICA_FAILURE, "status": "True",
                           "lastTransitionTime": meta_time(), "reason": reason,
                           "message": error_text(manage_error)})
    elif manage_error is not None and failure is not None:
        conditions.append(failure)
    status["conditions"] = conditions
    if not conditions:
        status.pop("conditions")
    status.update(replicas=len(pods), fullyLabeledReplicas=fully_labeled,
                  readyReplicas=ready, availableReplicas=available)
    return status


def _next_availability(rs: Obj, pods: list[Obj]) -> float | None:
    """Seconds until the next ready pod passes ``minReadySeconds`` (the real controller
    requeues after ``minReadySeconds`` for the same reason), or None."""
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    if min_ready <= 0:
        return None
    now = time.time()
    waits = []
    for pod in pods:
        since = pod_ready_time(pod)
        if since is not None and not is_pod_available(pod, min_ready, now):
            waits.append(max(since + min_ready - now, 0.0) + 0.1)
    return min(waits) if waits else None


def replicaset_controller(manager: Manager) -> tuple[Controller[Any], ReplicaSetReconciler]:
    """The ReplicaSet controller definition and its reconciler, wired to ``manager``."""
    reconciler = ReplicaSetReconciler(manager)
    return base_controller(manager, reconciler, "replicaset"), reconciler


def base_controller(manager: Manager, reconciler: ReplicaSetReconciler,
                    name: str) -> Controller[Any]:
    """``NewBaseController``: the controller of ``reconciler.kind``'s pods (the
    ReplicationController manager is this one over its own kind)."""
    kind = reconciler.kind
    manager.informer_for(kind)
    index_orphans(manager, POD)
    manager.informer_for(POD).add_handler(
        _ExpectationObserver(manager, reconciler.expectations, kind))
    return (Controller.for_(kind, name=name)
            .watches(POD, handler=ControllerOrAdopters(
                manager, kind, kind.kind, owner_group=api_group(kind),
                selector=reconciler.selector))
            .reconciler(reconciler))


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the ReplicaSet controller (events from ``replicaset-controller``)."""
    controller, reconciler = replicaset_controller(manager)
    reconciler.events = component_recorder(manager, "replicaset-controller")
    manager.add(controller)
