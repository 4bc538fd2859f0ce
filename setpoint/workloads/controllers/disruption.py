"""The disruption controller: the status of PodDisruptionBudgets.

A port of ``pkg/controller/disruption``. For each budget it counts the pods its selector
picks in its namespace (``{}`` picks all, no selector none):

- ``expectedPods``: the number of pods for an integer ``minAvailable``; otherwise the sum of
  the scales of the pods' controllers (Deployment through its ReplicaSet, ReplicaSet,
  StatefulSet, ReplicationController, or any owner's ``scale`` subresource);
- ``desiredHealthy``: ``minAvailable`` (a percentage of the expected pods, rounded up), or
  the expected pods minus ``maxUnavailable`` (never below zero);
- ``currentHealthy``: Ready pods that are not being deleted and not recorded in
  ``disruptedPods`` (evictions the server admitted; an entry is dropped once its pod is
  being deleted, or after two minutes);
- ``disruptionsAllowed``: ``currentHealthy - desiredHealthy`` when positive and pods are
  expected, else 0, with the condition ``DisruptionAllowed`` (``SufficientPods`` or
  ``InsufficientPods``; ``SyncFailed`` when the expected count cannot be computed).

The eviction subresource of the server reads ``disruptionsAllowed`` to admit evictions.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from setpoint.client import ApiError, Kind
from setpoint.machinery.labels import SelectorError, from_label_selector
from setpoint.machinery.objects import Obj
from setpoint.runtime import Controller, EventRecorder, Handler, Manager, Request, Result
from setpoint.runtime._conditions import set_condition
from setpoint.runtime._objects import clone, meta, name_of, namespace_of
from setpoint.runtime._ownership import controller_of
from setpoint.workloads.controllers.podcontrol import component_recorder, is_pod_ready
from setpoint.workloads.settings import WorkloadSettings

PDB = Kind("policy/v1", "PodDisruptionBudget")
POD = Kind("v1", "Pod")
REPLICA_SET = Kind("apps/v1", "ReplicaSet")
DEPLOYMENT = Kind("apps/v1", "Deployment")
STATEFUL_SET = Kind("apps/v1", "StatefulSet")

DELETION_TIMEOUT = timedelta(minutes=2)
CONDITION = "DisruptionAllowed"


class ExpectedCountError(Exception):
    """The pods' controllers could not be found (the status fails safe)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def scaled_value(value: Any, total: int) -> int:
    """``GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class DisruptionReconciler:
    """Computes and writes the status of one PodDisruptionBudget."""

    def __init__(self, manager: Manager, events: EventRecorder | None = None) -> None:
        self.manager = manager
        self.events = events

    def __repr__(self) -> str:
        return "DisruptionReconciler()"

    def _event(self, obj: Obj, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            self.events.event(obj, type_, reason, note)

    def pods_of(self, pdb: Obj) -> list[Obj]:
        selector = (pdb.get("spec") or {}).get("selector")
        return self.manager.cache.list_raw(POD, namespace=namespace_of(pdb),
                                           labels=from_label_selector(selector))

    async def reconcile(self, request: Request) -> Result:
        pdb = self.manager.cache.get(PDB, request.name, request.namespace)
        if pdb is None:
            return Result()
        try:
            pods = self.pods_of(pdb)
        except SelectorError as err:
            await self._fail_safe(pdb, str(err))
            return Result()
        if not pods:
            self._event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired = await self.expected_counts(pdb, pods)
        except ExpectedCountError as err:
            self._event(pdb, "Warning", err.reason, str(err))
            await self._fail_safe(pdb, str(err))
            return Result()
        disrupted, recheck = self.disrupted_pods(pdb, pods)
        healthy = sum(1 for p in pods if not meta(p).get("deletionTimestamp")
                      and name_of(p) not in disrupted and is_pod_ready(p))
        await self._write(pdb, expected, desired, healthy, disrupted)
        return Result(requeue_after=recheck)

    async def expected_counts(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int]:
        """``getExpectedPodCount``: (expected pods, desired healthy)."""
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected = await self.expected_scale(pdb, pods)
            unavailable = scaled_value(spec["maxUnavailable"], expected)
            return expected, max(0, expected - unavailable)
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available
        if isinstance(min_available, str):
            expected = await self.expected_scale(pdb, pods)
            return expected, scaled_value(min_available, expected)
        return len(pods), 0

    async def expected_scale(self, pdb: Obj, pods: list[Obj]) -> int:
        """The sum of the scales of the controllers of ``pods``."""
        scales: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                raise ExpectedCountError("NoControllerRef",
                                         f'found no controller ref for pod "{name_of(pod)}"')
            if ref.get("uid") in scales:
                continue
            found = await self._controller_scale(ref, namespace_of(pod))
            if found is None:
                raise ExpectedCountError("NoControllers",
                                         f'found no controllers for pod "{name_of(pod)}"')
            scales[found[0]] = found[1]
        return sum(scales.values())

    async def _controller_scale(self, ref: Obj, namespace: str) -> tuple[str, int] | None:
        """(uid, replicas) of the controller ``ref`` names (a Deployment stands for its
        ReplicaSets), or None."""
        cache = self.manager.cache
        api_version, kind, name = ref.get("apiVersion", ""), ref.get("kind", ""), ref["name"]
        if (api_version, kind) == ("apps/v1", "ReplicaSet"):
            rs = _cached(self.manager, REPLICA_SET, name, namespace)
            if rs is None or meta(rs).get("uid") != ref.get("uid"):
                return None
            owner = controller_of(rs)
            if owner is not None and owner.get("kind") == "Deployment" \
                    and owner.get("apiVersion") == "apps/v1":
                deployment = _cached(self.manager, DEPLOYMENT, owner["name"], namespace)
                if deployment is not None and meta(deployment).get("uid") == owner.get("uid"):
                    return str(owner["uid"]), _replicas(deployment)
                return None
            return str(ref["uid"]), _replicas(rs)
        if (api_version, kind) == ("apps/v1", "StatefulSet") and cache.watches(STATEFUL_SET):
            sts = cache.get(STATEFUL_SET, name, namespace)
            if sts is None or meta(sts).get("uid") != ref.get("uid"):
                return None
            return str(ref["uid"]), _replicas(sts)
        try:
            scale = await self.manager.client.get_scale(Kind(api_version, kind), name,
                                                        namespace=namespace)
        except (ApiError, LookupError, ValueError):
            return None
        if meta(scale).get("uid") not in (None, ref.get("uid")):
            return None
        return str(ref["uid"]), int((scale.get("spec") or {}).get("replicas") or 0)

    def disrupted_pods(self, pdb: Obj, pods: list[Obj]) -> tuple[dict[str, str], float | None]:
        """``buildDisruptedPodMap``: the evictions still in flight, and when to look again."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        by_name = {name_of(p): p for p in pods}
        current = now()
        kept: dict[str, str] = {}
        recheck: float | None = None
        for name, stamp in recorded.items():
            pod = by_name.get(name)
            if pod is None or meta(pod).get("deletionTimestamp"):
                continue
            try:
                expires = parse_time(stamp) + DELETION_TIMEOUT
            except ValueError:
                continue
            if expires < current:
                continue
            kept[name] = stamp
            wait = (expires - current).total_seconds() + 1
            recheck = wait if recheck is None else min(recheck, wait)
        return kept, recheck

    async def _write(self, pdb: Obj, expected: int, desired: int, healthy: int,
                     disrupted: dict[str, str]) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        generation = meta(pdb).get("generation")
        status = clone(pdb.get("status") or {})
        status.update({"currentHealthy": healthy, "desiredHealthy": desired,
                       "disruptionsAllowed": allowed, "expectedPods": expected,
                       "observedGeneration": generation})
        if disrupted:
            status["disruptedPods"] = disrupted
        else:
            status.pop("disruptedPods", None)
        conditions = status.setdefault("conditions", [])
        set_condition(conditions, CONDITION, allowed > 0,
                      reason="SufficientPods" if allowed > 0 else "InsufficientPods",
                      observed_generation=generation)
        await self._put_status(pdb, status)

    async def _fail_safe(self, pdb: Obj, message: str) -> None:
        """``failSafe``: no disruptions until the budget can be computed again."""
        status = clone(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        status["observedGeneration"] = meta(pdb).get("generation")
        conditions = status.setdefault("conditions", [])
        set_condition(conditions, CONDITION, False, reason="SyncFailed", message=message,
                      observed_generation=meta(pdb).get("generation"))
        await self._put_status(pdb, status)

    async def _put_status(self, pdb: Obj, status: Obj) -> None:
        if status == (pdb.get("status") or {}):
            return
        body = clone(pdb)
        body["status"] = status
        # a full status update with the read resourceVersion: an eviction that consumed a
        # disruption meanwhile makes this conflict and be retried, never overwritten
        self.manager.writer.record(await self.manager.client.update_status(body))


def _cached(manager: Manager, kind: Kind, name: str, namespace: str) -> Obj | None:
    if not manager.cache.watches(kind):
        return None
    obj: Obj | None = manager.cache.get(kind, name, namespace)
    return obj


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


class _BudgetsOfPod(Handler):
    """The budgets selecting a pod, on its every add, update and delete, read from the pod
    as it is now: disruption.go ``addPod``/``updatePod``/``deletePod`` (``getPdbForPod`` of
    the current pod only; the version before an update is not looked at)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def __repr__(self) -> str:
        return "BudgetsOfPod()"

    def requests(self, obj: Obj) -> list[Request]:
        labels = meta(obj).get("labels") or {}
        out = []
        for pdb in self.manager.cache.list_raw(PDB, namespace=namespace_of(obj)):
            try:
                selector = from_label_selector((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                out.append(Request(namespace_of(pdb), name_of(pdb)))
        return out

    def update_requests(self, old: Obj, new: Obj) -> list[Request]:
        return self.requests(new)


def install(manager: Manager, settings: WorkloadSettings) -> None:
    """Add the disruption controller. Its budgets hear of pods and of themselves only: the
    workload kinds whose scale it reads are read from their caches, with no handler
    (disruption.go ``NewDisruptionControllerInternal`` takes only their listers)."""
    events = component_recorder(manager, "controllermanager")
    manager.add(Controller.for_(PDB, name="disruption")
                .watches(POD, handler=_BudgetsOfPod(manager))
                .reads(REPLICA_SET, DEPLOYMENT, STATEFUL_SET)
                .reconciler(DisruptionReconciler(manager, events)))
