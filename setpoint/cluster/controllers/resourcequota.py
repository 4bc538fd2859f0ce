"""The resource quota controller: ``status.hard`` follows ``spec.hard``, ``status.used`` is counted.

kubernetes v1.32 pkg/controller/resourcequota/resource_quota_controller.go: a quota that is
added, or updated so that its status no longer covers its spec (``needsFullResync``), is
synced; so is every quota every five minutes (``--resource-quota-sync-period``), and every
quota of a namespace that tracks a resource when an object of it is deleted, or a pod becomes
terminal, or a service changes type (replenishment, resource_quota_monitor.go with the
evaluators' ``UpdateFilter``). ``syncResourceQuota`` recomputes the usage of the resources
the quota limits by listing the namespace's objects (``quota.CalculateUsage``), keeps earlier
observations of the others, masks it to the hard limits, and writes the status when it
changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.controllers.queue import Retry, WorkQueue
from setpoint.cluster.controllers.resources import ServedTypes, controller_write
from setpoint.cluster.quota import resources as rl
from setpoint.cluster.quota.evaluators import (
    Evaluator,
    evaluator_for,
    evaluators_for_names,
    is_terminal,
)
from setpoint.cluster.serializer.decode import Decoded
from setpoint.cluster.storage import Event
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import Quantity

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.registry.rest import REST
    from setpoint.cluster.registry.types import ResourceType
    from setpoint.cluster.storage import Informer

RESOURCEQUOTAS = "/resourcequotas"
PODS = "/pods"
SERVICES = "/services"
RESYNC_SECONDS = 300.0  # the controller manager's default --resource-quota-sync-period

Key = tuple[str, str]  # (namespace, name)


def needs_full_resync(quota: Obj) -> bool:
    """``addQuota`` / ``updateQuota``: the status lacks the spec's limits or their usage."""
    spec_hard = rl.parse((quota.get("spec") or {}).get("hard"))
    status = quota.get("status") or {}
    if not rl.equals(spec_hard, rl.parse(status.get("hard"))):
        return True
    used = status.get("used") or {}
    return any(name not in used for name in spec_hard)


def _replenishes(event: Event) -> bool:
    """A deletion, or an update the evaluator's ``UpdateFilter`` counts (a pod that became
    terminal, a service whose type changed)."""
    if event.type == "DELETED":
        return True
    if event.type != "MODIFIED" or event.prev is None:
        return False
    if event.resource == PODS:
        return is_terminal(event.obj) and not is_terminal(event.prev)
    if event.resource == SERVICES:
        return bool((event.obj.get("spec") or {}).get("type")
                    != (event.prev.get("spec") or {}).get("type"))
    return False


class ResourceQuotaController:
    """Keeps every ResourceQuota's status: its hard limits and the namespace's usage."""

    def __init__(self, store: Informer, rest: REST, rt: ResourceType,
                 registry: Registry) -> None:
        self._store = store
        self._rest = rest
        self._rt = rt
        self._served = ServedTypes(registry)
        self.queue: WorkQueue[Key] = WorkQueue("resourcequota", self._sync)
        store.add_listener(self._on_event)

    def start(self) -> None:
        for quota in self._store.list(RESOURCEQUOTAS):
            meta = quota["metadata"]
            self.queue.add((meta["namespace"], meta["name"]))

    def _on_event(self, event: Event) -> None:
        if event.resource == RESOURCEQUOTAS:
            if event.type == "ADDED" or (event.type == "MODIFIED"
                                         and needs_full_resync(event.obj)):
                self.queue.add((event.namespace, event.name))
            return
        # most writes are creates and most clusters have no quota: cheap answers first
        if event.type == "ADDED" or not self._store.count(RESOURCEQUOTAS) \
                or not event.namespace or not _replenishes(event):
            return
        group, _, resource = event.resource.partition("/")
        evaluator = evaluator_for(group, resource)
        for quota in self._store.list(RESOURCEQUOTAS, event.namespace):
            if evaluator.matching_resources((quota.get("status") or {}).get("hard") or {}):
                self.queue.add((event.namespace, quota["metadata"]["name"]))

    def _sync(self, key: Key) -> float | None:
        namespace, name = key
        quota = self._store.get(RESOURCEQUOTAS, namespace, name)
        if quota is None:
            return None
        status = quota.get("status") or {}
        hard = rl.parse((quota.get("spec") or {}).get("hard"))
        dirty = (not rl.equals(hard, rl.parse(status.get("hard")))
                 or status.get("hard") is None or status.get("used") is None)
        previous = rl.parse(status.get("used"))
        used = dict(previous)
        used.update(self._usage(quota, namespace, list(hard)))
        used = rl.mask(used, hard)
        dirty = dirty or not rl.equals(used, previous)
        if dirty:
            body = {**quota, "apiVersion": "v1", "kind": "ResourceQuota",
                    "status": {"hard": rl.to_json(hard), "used": rl.to_json(used)}}
            try:
                self._rest.update(self._rt, namespace, name, Decoded(body), controller_write(),
                                  "status")
            except StatusError as err:
                if err.code == 404:
                    return None
                if err.code == 409:
                    raise Retry(str(err)) from err
                raise
        return RESYNC_SECONDS

    def _usage(self, quota: Obj, namespace: str, hard: list[str]) -> rl.ResourceList:
        """``quota.CalculateUsage`` over the evaluators of the limited resources."""
        total: rl.ResourceList = {}
        for evaluator in evaluators_for_names(hard):
            matched = evaluator.matching_resources(hard)
            if not matched or self._served.for_key(evaluator.storage_key) is None:
                continue
            total = rl.add(total, self._usage_stats(evaluator, quota, namespace, matched))
        return total

    def _usage_stats(self, evaluator: Evaluator, quota: Obj, namespace: str,
                     matched: list[str]) -> rl.ResourceList:
        """generic.CalculateUsageStats: each tracked resource from zero, plus the usage of
        every object in the quota's scopes."""
        stats: rl.ResourceList = dict.fromkeys(matched, Quantity.from_int(0))
        for item in self._store.list(evaluator.storage_key, namespace):
            if evaluator.matches_scopes(quota, item):
                stats = rl.add(stats, evaluator.usage(item))
        return stats

