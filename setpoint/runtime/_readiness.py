"""Is a built-in object ready? Computed as kstatus does (sigs.k8s.io/cli-utils
pkg/kstatus/status: ``status.go`` for the generic rules, ``core.go`` per kind), with the
words of ``kubectl rollout status`` (kubectl pkg/polymorphichelpers/rollout_status.go)
where it is stricter.

    children = readiness(*ctx.owned(Deployment), *ctx.owned(Service))
    ctx.set_condition("Ready", children.ready, reason=children.reason,
                      message=children.message)

A state is ``Ready`` (kstatus ``Current``), ``InProgress``, ``Failed`` or ``Terminating``.
Before anything about a kind, as kstatus's ``checkGenericProperties``: an object being
deleted is ``Terminating``, and one whose controller has not yet observed its latest
generation (``status.observedGeneration < metadata.generation``) is ``InProgress`` with
reason ``LatestGenerationNotObserved``: its status speaks of an older spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from setpoint.runtime._objects import as_dict

State = Literal["Ready", "InProgress", "Failed", "Terminating"]

READY: State = "Ready"
IN_PROGRESS: State = "InProgress"
FAILED: State = "Failed"
TERMINATING: State = "Terminating"

# the most telling state first: a summary takes the first one any object is in
_SEVERITY: tuple[State, ...] = (FAILED, TERMINATING, IN_PROGRESS, READY)


@dataclass(frozen=True)
class Readiness:
    """Where an object (or a set of objects) stands: ``state``, a CamelCase ``reason``
    (usable as a condition's reason) and a ``message`` for people."""

    state: State
    reason: str
    message: str

    @property
    def ready(self) -> bool:
        return self.state == READY

    @property
    def failed(self) -> bool:
        return self.state == FAILED


def readiness(*objs: object) -> Readiness:
    """The readiness of one object, or the summary of several: the worst state any of them
    is in (Failed, then Terminating, then InProgress), with the reason of the first object
    in it and a message naming each such object. No objects at all are ready."""
    if len(objs) == 1:
        return object_readiness(objs[0])
    results = [(obj, object_readiness(obj)) for obj in objs]
    for state in _SEVERITY:
        matching = [(obj, r) for obj, r in results if r.state == state]
        if not matching:
            continue
        if state == READY:
            return Readiness(READY, "AllReady", f"{len(matching)} object(s) ready")
        message = "; ".join(f"{_label(obj)}: {r.message}" for obj, r in matching)
        return Readiness(state, matching[0][1].reason, message)
    return Readiness(READY, "AllReady", "no objects")


def object_readiness(obj: object) -> Readiness:
    """The readiness of one object (dict or typed)."""
    body = as_dict(obj)
    metadata = body.get("metadata") or {}
    kind = str(body.get("kind") or "")
    if metadata.get("deletionTimestamp"):
        return Readiness(TERMINATING, "Terminating", "Resource scheduled for deletion")
    status = body.get("status") or {}
    observed, generation = status.get("observedGeneration"), metadata.get("generation")
    if isinstance(observed, int) and isinstance(generation, int) and observed != generation:
        return Readiness(IN_PROGRESS, "LatestGenerationNotObserved",
                         f"{kind} generation is {generation}, but latest observed generation "
                         f"is {observed}")
    compute = _KINDS.get((_group(body), kind))
    if compute is None:
        return _generic(body)
    return compute(body.get("spec") or {}, status)


# -- per kind (kstatus core.go) -------------------------------------------------------------

def _deployment(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    # no progressDeadlineSeconds: the controller never says Progressing, so it is assumed
    progressing = spec.get("progressDeadlineSeconds") in (None, 2**31 - 1)
    available = False
    for c in _conditions(status):
        if c.get("type") == "Progressing":
            if c.get("reason") == "ProgressDeadlineExceeded":
                return Readiness(FAILED, "ProgressDeadlineExceeded",
                                 c.get("message") or "Progress deadline exceeded")
            if c.get("status") == "True" and c.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif c.get("type") == "Available" and c.get("status") == "True":
            available = True
    wanted, replicas = _int(spec, "replicas", 1), _int(status, "replicas")
    updated, ready = _int(status, "updatedReplicas"), _int(status, "readyReplicas")
    available_replicas = _int(status, "availableReplicas")
    if wanted > replicas:
        return Readiness(IN_PROGRESS, "LessReplicas", f"replicas: {replicas}/{wanted}")
    if wanted > updated:
        return Readiness(IN_PROGRESS, "LessUpdated",
                         f"{updated} out of {wanted} new replicas have been updated")
    if replicas > wanted:
        return Readiness(IN_PROGRESS, "ExtraPods",
                         f"{replicas - wanted} old replicas are pending termination")
    if updated > available_replicas:
        return Readiness(IN_PROGRESS, "LessAvailable",
                         f"{available_replicas} of {updated} updated replicas are available")
    if wanted > ready:
        return Readiness(IN_PROGRESS, "LessReady", f"Ready: {ready}/{wanted}")
    if not progressing:
        return Readiness(IN_PROGRESS, "ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return Readiness(IN_PROGRESS, "DeploymentNotAvailable", "Deployment not Available")
    return Readiness(READY, "DeploymentAvailable",
                     f"Deployment is available. Replicas: {replicas}")


def _statefulset(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    if (spec.get("updateStrategy") or {}).get("type") == "OnDelete":
        return Readiness(READY, "OnDeleteUpdateStrategy",
                         "StatefulSet is using the ondelete update strategy")
    wanted, replicas = _int(spec, "replicas", 1), _int(status, "replicas")
    ready, current = _int(status, "readyReplicas"), _int(status, "currentReplicas")
    updated = _int(status, "updatedReplicas")
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    partition = rolling.get("partition") if isinstance(rolling.get("partition"), int) else None
    if wanted > replicas:
        return Readiness(IN_PROGRESS, "LessReplicas", f"Replicas: {replicas}/{wanted}")
    if wanted > ready:
        return Readiness(IN_PROGRESS, "LessReady", f"Waiting for {wanted - ready} pods to be "
                                                   f"ready (Ready: {ready}/{wanted})")
    if replicas > wanted:
        return Readiness(IN_PROGRESS, "ExtraPods",
                         f"Pending termination: {replicas - wanted}")
    if partition is not None:
        if updated < wanted - partition:
            return Readiness(IN_PROGRESS, "PartitionRollout",
                             f"Waiting for partitioned roll out to finish: {updated} out of "
                             f"{wanted - partition} new pods have been updated")
        return Readiness(READY, "PartitionRolloutComplete",
                         f"Partition rollout complete. updated: {updated}")
    if wanted > current:
        return Readiness(IN_PROGRESS, "LessCurrent", f"current: {current}/{wanted}")
    if status.get("currentRevision", "") != status.get("updateRevision", ""):
        return Readiness(IN_PROGRESS, "RevisionMismatch",
                         "Waiting for updated revision to match current")
    return Readiness(READY, "AllReplicasReady",
                     f"All replicas scheduled as expected. Replicas: {replicas}")


def _daemonset(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    if not isinstance(status.get("desiredNumberScheduled"), int):
        return Readiness(IN_PROGRESS, "NoDesiredNumber",
                         "Missing .status.desiredNumberScheduled")
    desired = _int(status, "desiredNumberScheduled")
    for field, reason, word in (("currentNumberScheduled", "LessCurrent", "Current"),
                                ("updatedNumberScheduled", "LessUpdated", "Updated"),
                                ("numberAvailable", "LessAvailable", "Available"),
                                ("numberReady", "LessReady", "Ready")):
        have = _int(status, field)
        if desired > have:
            return Readiness(IN_PROGRESS, reason, f"{word}: {have}/{desired}")
    return Readiness(READY, "AllScheduled",
                     f"All replicas scheduled as expected. Replicas: {desired}")


def _job(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    parallelism = _int(spec, "parallelism", 1)
    completions = _int(spec, "completions", parallelism)
    succeeded, failed = _int(status, "succeeded"), _int(status, "failed")
    for c in _conditions(status):
        if c.get("status") != "True":
            continue
        if c.get("type") == "Complete":
            return Readiness(READY, "JobComplete",
                             f"Job Completed. succeeded: {succeeded}/{completions}")
        if c.get("type") == "Failed":
            return Readiness(FAILED, "JobFailed",
                             f"Job Failed. failed: {failed}/{completions}"
                             + (f" ({c['reason']})" if c.get("reason") else ""))
    if not status.get("startTime"):
        return Readiness(IN_PROGRESS, "JobNotStarted", "Job not started")
    # kstatus: a started Job is Current while it runs (its reconcile is done)
    return Readiness(READY, "JobRunning",
                     f"Job in progress. success:{succeeded}, active: {_int(status, 'active')}, "
                     f"failed: {failed}")


def _pod(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    phase = status.get("phase") or ""
    conditions = _conditions(status)
    if phase == "Succeeded":
        return Readiness(READY, "PodSucceeded", "Pod has completed successfully")
    if phase == "Failed":
        # kstatus calls this Current (finished); to an owner asking "does my child
        # work" a pod that ended in failure has failed
        return Readiness(FAILED, "PodFailed", "Pod has completed, but not successfully")
    if phase == "Running":
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            return Readiness(READY, "PodReady", "Pod is Ready")
        looping = [str(cs.get("name")) for cs in status.get("containerStatuses") or []
                   if ((cs.get("state") or {}).get("waiting") or {}).get("reason")
                   == "CrashLoopBackOff"]
        if looping:
            return Readiness(FAILED, "ContainerCrashLooping",
                             f"Containers in CrashLoop state: {','.join(looping)}")
        return Readiness(IN_PROGRESS, "PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        if any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               and c.get("reason") == "Unschedulable" for c in conditions):
            return Readiness(FAILED, "PodUnschedulable", "Pod could not be scheduled")
        return Readiness(IN_PROGRESS, "PodPending", "Pod is in the Pending phase")
    return Readiness(IN_PROGRESS, "PodNotObserved", "Pod phase not available")


def _service(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    if spec.get("type") == "LoadBalancer" and not spec.get("clusterIP"):
        return Readiness(IN_PROGRESS, "NoIPAssigned",
                         "ClusterIP not set. Service type: LoadBalancer")
    return Readiness(READY, "ServiceReady", "Service is ready")


def _pvc(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    phase = status.get("phase") or "unknown"
    if phase == "Lost":  # the bound volume is gone: no controller brings it back
        return Readiness(FAILED, "ClaimLost", "PVC lost its PersistentVolume")
    if phase != "Bound":
        return Readiness(IN_PROGRESS, "NotBound", f"PVC is not Bound. phase: {phase}")
    return Readiness(READY, "Bound", "PVC is Bound")


def _always(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Readiness:
    return Readiness(READY, "AlwaysReady", "Resource is always ready")


def _generic(body: Mapping[str, Any]) -> Readiness:
    """Any other kind, by kstatus's generic conditions: ``Stalled`` is Failed,
    ``Reconciling`` is InProgress, a ``Ready`` condition says it all; no conditions is
    ready."""
    status = body.get("status") or {}
    conditions = {str(c.get("type")): c for c in _conditions(status)}
    stalled = conditions.get("Stalled")
    if stalled is not None and stalled.get("status") == "True":
        return Readiness(FAILED, stalled.get("reason") or "Stalled",
                         stalled.get("message") or "Stalled condition is True")
    reconciling = conditions.get("Reconciling")
    if reconciling is not None and reconciling.get("status") == "True":
        return Readiness(IN_PROGRESS, reconciling.get("reason") or "Reconciling",
                         reconciling.get("message") or "Reconciling condition is True")
    ready = conditions.get("Ready")
    if ready is not None and ready.get("status") != "True":
        return Readiness(IN_PROGRESS, ready.get("reason") or "NotReady",
                         ready.get("message") or "Ready condition is not True")
    return Readiness(READY, "Current", "Resource is current")


_KINDS = {
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("batch", "Job"): _job,
    ("", "Pod"): _pod,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "ConfigMap"): _always,
    ("", "Secret"): _always,
    ("batch", "CronJob"): _always,
}


def _group(body: Mapping[str, Any]) -> str:
    api_version = str(body.get("apiVersion") or "")
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _int(mapping: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _conditions(status: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]


def _label(obj: object) -> str:
    body = as_dict(obj)
    metadata = body.get("metadata") or {}
    return f"{body.get('kind')} {metadata.get('name')}"
