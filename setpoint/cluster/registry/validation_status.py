"""Validation of the status of the workload controllers, as their status strategies'
``ValidateUpdate`` runs it (pkg/apis/apps/validation/validation.go ``ValidateDeploymentStatus``,
``ValidateReplicaSetStatus``, ``ValidateStatefulSetStatus``, ``ValidateDaemonSetStatus``).

Counts may not be negative, and the counts of a subset of the replicas may not exceed the
count of the whole. A write through the main resource keeps the stored status, so these only
ever reject what a ``/status`` write brings.
"""

from __future__ import annotations

from collections.abc import Callable

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

NON_NEGATIVE = "must be greater than or equal to 0"
OVER_REPLICAS = "cannot be greater than status.replicas"
OVER_READY = "cannot be greater than readyReplicas"


def _count(status: Obj, key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _non_negative(status: Obj, keys: tuple[str, ...]) -> list[Cause]:
    return [fe.invalid(f"status.{k}", _count(status, k), NON_NEGATIVE)
            for k in keys if _count(status, k) < 0]


def _subsets(status: Obj, keys: tuple[str, ...]) -> list[Cause]:
    replicas = _count(status, "replicas")
    causes = [fe.invalid(f"status.{k}", _count(status, k), OVER_REPLICAS)
              for k in keys if _count(status, k) > replicas]
    if _count(status, "availableReplicas") > _count(status, "readyReplicas"):
        causes.append(fe.invalid("status.availableReplicas",
                                 _count(status, "availableReplicas"), OVER_READY))
    return causes


def _deployment(status: Obj) -> list[Cause]:
    return (_non_negative(status, ("observedGeneration", "replicas", "updatedReplicas",
                                   "readyReplicas", "availableReplicas", "unavailableReplicas",
                                   "collisionCount"))
            + _subsets(status, ("updatedReplicas", "readyReplicas", "availableReplicas")))


def _replica_set(status: Obj) -> list[Cause]:
    return (_non_negative(status, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                   "availableReplicas", "observedGeneration"))
            + _subsets(status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")))


def _stateful_set(status: Obj) -> list[Cause]:
    return (_non_negative(status, ("replicas", "readyReplicas", "currentReplicas",
                                   "updatedReplicas", "availableReplicas", "observedGeneration",
                                   "collisionCount"))
            + _subsets(status, ("readyReplicas", "currentReplicas", "updatedReplicas",
                                "availableReplicas")))


def _daemon_set(status: Obj) -> list[Cause]:
    return _non_negative(status, (
        "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
        "numberReady", "observedGeneration", "updatedNumberScheduled", "numberAvailable",
        "numberUnavailable", "collisionCount"))


STATUS_VALIDATORS: dict[tuple[str, str], Callable[[Obj], list[Cause]]] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
}


def validate_status(group: str, kind: str, obj: Obj) -> list[Cause]:
    """The causes ``obj``'s status is rejected for (none for kinds without these rules)."""
    fn = STATUS_VALIDATORS.get((group, kind))
    status = obj.get("status")
    return fn(status) if fn is not None and isinstance(status, dict) else []
