"""The namespace controller: a namespace being deleted is emptied, then finalized.

As kube-controller-manager's ``namespace-controller`` (``namespaced_resources_deleter.go``):
for a namespace with a deletionTimestamp, every object of every served namespaced resource in
it is deleted (Background propagation; objects with finalizers linger until those are
removed), the outcome is reported in five status conditions, and once nothing is left the
``kubernetes`` finalizer is removed from ``spec.finalizers`` through ``/finalize``, which lets
the namespace go.

The real controller polls (it requeues a namespace after half the time it estimates its
content needs); this one also wakes up whenever an object in a terminating namespace changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from setpoint.cluster.controllers.namespaceconditions import (
    ContentTotals,
    NamespaceConditionUpdater,
)
from setpoint.cluster.controllers.queue import Retry, WorkQueue
from setpoint.cluster.controllers.resources import NAMESPACES, ServedTypes, controller_write
from setpoint.cluster.registry.options import DeleteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.storage import Store

FINALIZER_KUBERNETES = "kubernetes"
# what the controller waits for objects that still have finalizers (finalizerEstimateSeconds)
FINALIZER_ESTIMATE_SECONDS = 15


@dataclass
class _ResourceOutcome:
    """What deleting one resource's content left behind (gvrDeletionMetadata)."""

    estimate: int = 0
    remaining: int = 0
    finalizers: dict[str, int] = field(default_factory=dict)


def _seconds_since(timestamp: str) -> float:
    start = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return (datetime.now(UTC) - start).total_seconds()


def _gvr_string(rt: ResourceType) -> str:
    """``schema.GroupVersionResource`` printed with %v."""
    return f"{rt.group}/{rt.version}, Resource={rt.resource}"


class NamespaceController:
    """Deletes the content of terminating namespaces and then finalizes them."""

    def __init__(self, store: Store, rest: REST, rt: ResourceType, registry: Registry) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._registry = registry
        self._types = ServedTypes(registry)
        self._terminating: set[str] = set()
        self.queue: WorkQueue[str] = WorkQueue("namespace", self._sync)
        store.add_listener(self._on_event)

    def start(self) -> None:
        for namespace in self._store.list(NAMESPACES):
            if namespace["metadata"].get("deletionTimestamp"):
                name = namespace["metadata"]["name"]
                self._terminating.add(name)
                self.queue.add(name)

    def _on_event(self, event: Event) -> None:
        if event.resource == NAMESPACES:
            if event.type == "DELETED":
                self._terminating.discard(event.name)
            elif event.obj["metadata"].get("deletionTimestamp"):
                self._terminating.add(event.name)
                self.queue.add(event.name)
        elif event.namespace and event.namespace in self._terminating:
            self.queue.add(event.namespace)

    # -- one pass ----------------------------------------------------------------------
    def _sync(self, name: str) -> float | None:
        namespace = self._store.get(NAMESPACES, "", name)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return None
        namespace = self._ensure_terminating(namespace)
        if FINALIZER_KUBERNETES not in ((namespace.get("spec") or {}).get("finalizers") or []):
            return None
        estimate = self._delete_all_content(namespace)
        if estimate > 0:
            return estimate / 2 + 1  # ResourcesRemainingError: look again later
        self._finalize(namespace)
        return None

    def _ensure_terminating(self, namespace: Obj) -> Obj:
        if (namespace.get("status") or {}).get("phase") == "Terminating":
            return namespace
        new = {**namespace, "status": {**(namespace.get("status") or {}),
                                       "phase": "Terminating"}}
        return self._write_status(new)

    def _write_status(self, namespace: Obj) -> Obj:
        name = namespace["metadata"]["name"]
        return self._rest.update(self._rt, None, name, Decoded(namespace),
                                     controller_write(), "status").obj

    def _finalize(self, namespace: Obj) -> None:
        spec = namespace.get("spec") or {}
        kept = sorted({f for f in spec.get("finalizers") or [] if f != FINALIZER_KUBERNETES})
        body = {**namespace, "spec": {**spec, "finalizers": kept}}
        try:
            self._rest.update(self._rt, None, namespace["metadata"]["name"], Decoded(body),
                              controller_write(), "finalize")
        except StatusError as err:
            if err.code != 404:
                raise

    # -- content -----------------------------------------------------------------------
    def _delete_all_content(self, namespace: Obj) -> int:
        """Delete what the namespace holds; report it in the conditions; return how long
        (seconds) the remaining content is expected to take. Raises Retry on failures."""
        name = namespace["metadata"]["name"]
        deleted_at = namespace["metadata"]["deletionTimestamp"]
        updater = NamespaceConditionUpdater(self._rest.clock)
        totals = ContentTotals()
        estimate = 0
        errors: list[str] = []
        for rt in self._types.namespaced_deletable():
            outcome, error = self._delete_resource_content(rt, name, deleted_at)
            if error is not None:
                errors.append(error)
                updater.process_delete_content_error(error)
            estimate = max(estimate, outcome.estimate)
            if outcome.remaining > 0:
                totals.remaining[f"{rt.resource}.{rt.group}"] = outcome.remaining
                for finalizer, count in outcome.finalizers.items():
                    if count:
                        totals.finalizers[finalizer] = totals.finalizers.get(finalizer, 0) + count
        updater.process_content_totals(totals)
        live = self._store.get(NAMESPACES, "", name)
        if live is not None:
            status = dict(live.get("status") or {})
            if updater.update(status):
                self._write_status({**live, "status": status})
        if errors:
            raise Retry("; ".join(sorted(errors)))
        return estimate

    def _delete_resource_content(self, rt: ResourceType, namespace: str,
                                 deleted_at: str) -> tuple[_ResourceOutcome, str | None]:
        store = self._store
        estimate = self._estimate_graceful_termination(rt, namespace, deleted_at)
        options = DeleteOptions(propagation_policy="Background")
        for obj in store.list(rt.storage_key, namespace):
            try:
                self._rest.delete(rt, namespace, obj["metadata"]["name"], options)
            except StatusError as err:
                if err.code in (404, 405):
                    continue
                return _ResourceOutcome(estimate), str(err)
        items = store.list(rt.storage_key, namespace)
        if not items:
            return _ResourceOutcome(), None
        finalizers: dict[str, int] = {}
        for item in items:
            for finalizer in item["metadata"].get("finalizers") or []:
                finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
        if estimate:
            return _ResourceOutcome(estimate, len(items), finalizers), None
        if finalizers:
            return _ResourceOutcome(FINALIZER_ESTIMATE_SECONDS, len(items), finalizers), None
        return _ResourceOutcome(estimate, len(items)), (
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{_gvr_string(rt)}")

    def _estimate_graceful_termination(self, rt: ResourceType, namespace: str,
                                       deleted_at: str) -> int:
        """Pods need their grace period; nothing else is expected to linger."""
        if rt.group or rt.resource != "pods":
            return 0
        estimate = 0
        for pod in self._store.list(rt.storage_key, namespace):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            if grace is not None and grace > estimate:
                estimate = int(grace)
        if _seconds_since(deleted_at) >= estimate:
            return 0
        return estimate
