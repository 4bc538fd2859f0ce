"""Validation of the status of the workload controllers, as their status strategies'
``ValidateUpdate`` runs it (pkg/apis/apps/validation/validation.go ``ValidateDeploymentStatus``,
``ValidateReplicaSetStatus``, ``ValidateStatefulSetStatus``, ``ValidateDaemonSetStatus``).

Counts may not be negative, and the counts of a subset of the replicas may not exceed the
count of the whole. A write through the main resource keeps the stored status, so these only
ever reject what a ``/status`` write brings.

``validate_status_update`` holds the status rules of the other built-in kinds, run only for a
``/status`` write as their status strategies' ``ValidateUpdate`` runs them, in place of the
kind's own validation (pkg/apis/core/validation/validation.go ``ValidatePodStatusUpdate``,
``ValidateNodeUpdate``, ``ValidateServiceStatusUpdate``, ``ValidateNamespaceStatusUpdate``,
``ValidatePersistentVolumeClaimStatusUpdate``, ``ValidateReplicationControllerStatusUpdate``;
pkg/apis/apps/validation/validation.go ``ValidateDeploymentStatusUpdate`` and kin;
pkg/apis/batch/validation/validation.go ``ValidateJobStatusUpdate`` (validation_jobstatus.py);
pkg/apis/policy/validation ``ValidatePodDisruptionBudgetStatusUpdate``;
pkg/apis/networking/validation ``ValidateIngressStatusUpdate``;
pkg/apis/autoscaling/validation ``ValidateHorizontalPodAutoscalerStatusUpdate``).
"""

from __future__ import annotations

from collections.abc import Callable

from setpoint.cluster.registry.validation_nodes import validate_node_update
from setpoint.cluster.registry.validation_podstatus import (
    validate_pod_status_update,
)
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.conditions import validate_conditions
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj
from setpoint.machinery.quantity import try_from_json

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


# -- status writes of the other built-in kinds (only a ``/status`` write runs these) ---------

_LB_IP_MODES = ("Proxy", "VIP")


def _ip(value: str) -> bool:
    return parse_ip_sloppy(value) is not None


def _service_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateServiceStatusUpdate`` → ``ValidateLoadBalancerStatus``."""
    path = "status.loadBalancer.ingress"
    ingresses = ((new.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if (new.get("spec") or {}).get("type") != "LoadBalancer" and ingresses:
        # AllowServiceLBStatusOnNonLB is off by default
        return [fe.forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")]
    causes: list[Cause] = []
    for i, ingress in enumerate(ingresses):
        at = f"{path}[{i}]"
        ip, mode, host = (ingress.get("ip") or "", ingress.get("ipMode"),
                          ingress.get("hostname") or "")
        if ip and not _ip(ip):
            causes.append(fe.invalid(f"{at}.ip", ip, "must be a valid IP address, (e.g. "
                                                     "10.9.8.7 or 2001:db8::ffff)"))
        if mode is None:
            if ip:
                causes.append(fe.required(f"{at}.ipMode", "must be specified when `ip` is set"))
        elif not ip:
            causes.append(fe.forbidden(f"{at}.ipMode",
                                       "may not be specified when `ip` is not set"))
        elif mode not in _LB_IP_MODES:
            causes.append(fe.not_supported(f"{at}.ipMode", mode, _LB_IP_MODES))
        causes.extend(_hostname_causes(at, host))
    return causes


def _hostname_causes(at: str, host: str) -> list[Cause]:
    """A load balancer ingress point's hostname: a DNS subdomain, not an IP."""
    if not host:
        return []
    causes = [fe.invalid(f"{at}.hostname", host, msg)
              for msg in names.is_dns1123_subdomain(host)]
    if _ip(host):
        causes.append(fe.invalid(f"{at}.hostname", host,
                                 "must be a DNS name, not an IP address"))
    return causes


def _ingress_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateIngressStatusUpdate`` → ``ValidateIngressLoadBalancerStatus`` (1.32's
    ParseIPSloppy check and words; no ipMode on an Ingress)."""
    path = "status.loadBalancer.ingress"
    ingresses = ((new.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    causes: list[Cause] = []
    for i, ingress in enumerate(ingresses):
        at = f"{path}[{i}]"
        ip, host = ingress.get("ip") or "", ingress.get("hostname") or ""
        if ip and not _ip(ip):
            causes.append(fe.invalid(f"{at}.ip", ip, "must be a valid IP address"))
        causes.extend(_hostname_causes(at, host))
    return causes


def _namespace_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateNamespaceStatusUpdate``: the phase follows the deletionTimestamp."""
    phase = (new.get("status") or {}).get("phase") or ""
    if not new["metadata"].get("deletionTimestamp"):
        if phase != "Active":
            return [fe.invalid("status.Phase", phase,
                               "may only be 'Active' if `deletionTimestamp` is empty")]
    elif phase != "Terminating":
        return [fe.invalid("status.Phase", phase,
                           "may only be 'Terminating' if `deletionTimestamp` is not empty")]
    return []


def _collision_count(new: Obj, old: Obj) -> list[Cause]:
    """``apivalidation.IsDecremented`` on status.collisionCount: it may grow, never shrink
    nor go away once set."""
    after = (new.get("status") or {}).get("collisionCount")
    before = (old.get("status") or {}).get("collisionCount")
    if before is None or (after is not None and _count(new["status"], "collisionCount")
                          >= _count(old["status"], "collisionCount")):
        return []
    value = 0 if after is None else _count(new["status"], "collisionCount")
    return [fe.invalid("status.collisionCount", value, "cannot be decremented")]


def _workload_status_update(kind: str) -> Callable[[Obj, Obj], list[Cause]]:
    """``ValidateDeploymentStatusUpdate``, ``ValidateReplicaSetStatusUpdate``,
    ``ValidateStatefulSetStatusUpdate``, ``ValidateDaemonSetStatusUpdate``: the status
    counts, and (but for ReplicaSets) a collision count that only grows."""
    def check(new: Obj, old: Obj) -> list[Cause]:
        causes = validate_status("apps", kind, new)
        return causes if kind == "ReplicaSet" else causes + _collision_count(new, old)
    return check


def _pvc_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePersistentVolumeClaimStatusUpdate``: the (kept) spec names access modes —
    under the Go field path ``Spec.accessModes`` — and no capacity is below zero, judged by
    ``validateBasicResource`` on the quantity's whole value, rounded away from zero.
    (status.allocatedResources, checked only with RecoverVolumeExpansionFailure, is not.)"""
    causes: list[Cause] = []
    if not (new.get("spec") or {}).get("accessModes"):
        causes.append(fe.required("Spec.accessModes"))
    for resource, value in ((new.get("status") or {}).get("capacity") or {}).items():
        quantity = try_from_json(value)
        if quantity is None:
            continue
        whole = quantity.value()
        if whole < 0:
            causes.append(fe.invalid(f"status.capacity[{resource}]", whole,
                                     "must be a valid resource quantity"))
    return causes


def _replication_controller_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateReplicationControllerStatusUpdate``: a ReplicaSet's status rules."""
    status = new.get("status")
    return _replica_set(status) if isinstance(status, dict) else []


def _pdb_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidatePodDisruptionBudgetStatusUpdate`` (policy/v1): its conditions as
    ``metav1.Condition``s, then its counts; nothing of the spec or metadata."""
    status = new.get("status") or {}
    return (validate_conditions(status.get("conditions"), "status.conditions")
            + [fe.invalid(f"status.{k}", _count(status, k), NON_NEGATIVE)
               for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                         "expectedPods") if _count(status, k) < 0])


def _hpa_status_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateHorizontalPodAutoscalerStatusUpdate``: the two counts, the second under
    the path Go spells ``status.desiredReplicasa``."""
    status = new.get("status") or {}
    return [fe.invalid(path, _count(status, k), NON_NEGATIVE)
            for k, path in (("currentReplicas", "status.currentReplicas"),
                            ("desiredReplicas", "status.desiredReplicasa"))
            if _count(status, k) < 0]


def _job_status_update(new: Obj, old: Obj) -> list[Cause]:
    # (the Job's and the policy's rules are loaded by their first /status write, not by the
    # first status write of any kind: the policy's pull in CEL and the webhook schemas)
    from setpoint.cluster.registry.validation_jobstatus import validate_job_status_update

    return validate_job_status_update(new, old)


def _validating_admission_policy_status_update(new: Obj, old: Obj) -> list[Cause]:
    from setpoint.cluster.registry.validation_policies import (
        validate_validating_admission_policy_status_update,
    )

    return validate_validating_admission_policy_status_update(new, old)


STATUS_UPDATE_VALIDATORS: dict[tuple[str, str], Callable[[Obj, Obj], list[Cause]]] = {
    ("", "ReplicationController"): _replication_controller_status_update,
    ("policy", "PodDisruptionBudget"): _pdb_status_update,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa_status_update,
    ("networking.k8s.io", "Ingress"): _ingress_status_update,
    ("", "Pod"): validate_pod_status_update,
    ("", "Node"): validate_node_update,
    ("", "Service"): _service_status_update,
    ("", "Namespace"): _namespace_status_update,
    ("", "PersistentVolumeClaim"): _pvc_status_update,
    ("apps", "Deployment"): _workload_status_update("Deployment"),
    ("apps", "ReplicaSet"): _workload_status_update("ReplicaSet"),
    ("apps", "StatefulSet"): _workload_status_update("StatefulSet"),
    ("apps", "DaemonSet"): _workload_status_update("DaemonSet"),
    ("batch", "Job"): _job_status_update,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        _validating_admission_policy_status_update,
}


def has_status_update_validation(group: str, kind: str) -> bool:
    """Whether the kind's status strategy validates a ``/status`` write by its own rules
    alone (``validate_status_update``) rather than by the kind's whole validation."""
    return (group, kind) in STATUS_UPDATE_VALIDATORS


def validate_status_update(group: str, kind: str, new: Obj, old: Obj) -> list[Cause]:
    """The causes a ``/status`` write of a built-in kind is rejected for, after the generic
    update checks (each kind's ``ValidateXStatusUpdate`` past its metadata checks)."""
    fn = STATUS_UPDATE_VALIDATORS.get((group, kind))
    return fn(new, old) if fn is not None else []
