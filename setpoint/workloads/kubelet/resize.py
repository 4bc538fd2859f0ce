"""In-place pod resize on the simulated kubelet (kubelet 1.32 with InPlacePodVerticalScaling
on, as the recorded API server serves ``pods/resize``).

handlePodResourcesResize (pkg/kubelet/kubelet.go) compares what the spec asks for with what
the kubelet has allocated to each container. A difference is a resize request, which
canResizePod decides: a pod whose cpu or memory requests exceed the node's allocatable is
``Infeasible``; one that does not fit beside the node's other active pods (canAdmitPod's
resource fit, against their allocations) is ``Deferred`` and retried on a later sync; else
the allocation takes the new resources and the resize is ``InProgress`` until the runtime
has applied them (the next sync here), when ``status.resize`` is cleared.
``containerStatuses[].resources`` shows what is applied to a running container
(convertContainerStatusResources); ``allocatedResources`` is left out, as its own gate
(InPlacePodVerticalScalingAllocatedStatus, alpha in 1.32) is off by default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from setpoint.machinery.quantity import try_from_json
from setpoint.workloads.kubelet.record import ContainerRecord, PodRecord

Obj = dict[str, Any]
IN_PROGRESS = "InProgress"
DEFERRED = "Deferred"
INFEASIBLE = "Infeasible"
_RESIZED = ("resources", "resizePolicy")


def _resources(c: Mapping[str, Any]) -> Obj:
    r = c.get("resources")
    return {k: v for k, v in r.items() if v} if isinstance(r, dict) else {}


def resizable(record: PodRecord) -> list[ContainerRecord]:
    """The containers a resize may change: regular ones and sidecars."""
    return [*(cr for cr in record.init if cr.sidecar), *record.containers]


def _wanted(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return {str(c.get("name")): c for key in ("initContainers", "containers")
            for c in spec.get(key) or () if isinstance(c, dict)}


def _request(containers: Iterable[Mapping[str, Any]], name: str) -> int:
    """The summed request of ``name`` (milli-units for cpu, bytes else)."""
    total = 0
    for c in containers:
        q = try_from_json(((c.get("resources") or {}).get("requests") or {}).get(name))
        if q is not None:
            total += q.milli_value() if name == "cpu" else q.value()
    return total


def _allocatable(node: Mapping[str, Any], name: str) -> int | None:
    q = try_from_json(((node.get("status") or {}).get("allocatable") or {}).get(name))
    if q is None:
        return None
    return q.milli_value() if name == "cpu" else q.value()


def decide(wanted: list[Mapping[str, Any]], node: Mapping[str, Any],
           others: Iterable[PodRecord]) -> str:
    """canResizePod: Infeasible, Deferred or InProgress for the pod's wanted containers."""
    others = list(others)
    verdict = IN_PROGRESS
    for name in ("cpu", "memory"):
        available = _allocatable(node, name)
        if available is None:
            continue
        needed = _request(wanted, name)
        if needed > available:
            return INFEASIBLE
        used = sum(_request([cr.spec for cr in resizable(o)], name) for o in others)
        if used + needed > available:
            verdict = DEFERRED
    return verdict


def sync_resize(pod: Mapping[str, Any], record: PodRecord, node: Mapping[str, Any],
                others: Iterable[PodRecord]) -> None:
    """One sync's resize step: actuate an accepted resize, or decide a new request."""
    wanted = _wanted(pod)
    containers = resizable(record)
    if record.resize == IN_PROGRESS:
        for cr in containers:  # the runtime applies the allocation (doPodResizeAction)
            cr.applied = _resources(cr.spec)
        record.resize = None
    changed = [cr for cr in containers if cr.name in wanted
               and _resources(wanted[cr.name]) != _resources(cr.spec)]
    if not changed:
        if record.resize != IN_PROGRESS:
            record.resize = None
        return
    desired = [wanted.get(cr.name, cr.spec) for cr in containers]
    verdict = decide(desired, node, others)
    record.resize = verdict
    if verdict != IN_PROGRESS:
        return
    for cr in changed:
        source = wanted[cr.name]
        spec = {k: v for k, v in cr.spec.items() if k not in _RESIZED}
        spec.update({k: source[k] for k in _RESIZED if k in source})
        cr.spec = spec


def status_resources(cr: ContainerRecord) -> Obj:
    """``containerStatuses[].resources`` of a running container: what is applied."""
    return dict(cr.applied if cr.applied is not None else _resources(cr.spec))
