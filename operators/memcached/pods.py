"""What the pods of a Memcached say: which backends can serve, and what stops the others.

Everything here reads pods as the kubelet and the scheduler reported them; nothing writes.
A backend serves when its pod is wanted (ordinal below ``spec.replicas``: pods being scaled
away leave the configuration at once), not being deleted, has an IP, and is Ready.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from operators.memcached.mcrouter import Backend
from setpoint.resources.models.core_v1 import Pod

# container waiting reasons a user has to act on (the kubelet's own words)
STUCK_REASONS = frozenset({
    "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
    "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
})


@dataclass(frozen=True)
class Problem:
    """Why a pod does not serve: a CamelCase reason and a message naming the pod."""

    reason: str
    message: str


@dataclass
class BackendPods:
    """The backends of one Memcached as its pods show them."""

    wanted: int
    existing: int = 0
    ready: list[Backend] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ready_count(self) -> int:
        return len(self.ready)


def ordinal_of(pod_name: str, statefulset: str) -> int | None:
    """The StatefulSet ordinal in a pod's name, or None for a pod not of that set."""
    prefix, _, suffix = pod_name.rpartition("-")
    if prefix != statefulset or not suffix.isdigit():
        return None
    return int(suffix)


def is_ready(pod: Pod) -> bool:
    status = pod.status
    if status is None or not status.pod_ip:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in status.conditions or ())


def problem_of(pod: Pod) -> Problem | None:
    """What the scheduler or the kubelet says keeps ``pod`` from running, if anything."""
    status = pod.status
    name = pod.metadata.name
    if status is None:
        return None
    for condition in status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "False" \
                and condition.reason == "Unschedulable":
            return Problem("Unschedulable", f"pod {name}: {condition.message or 'unschedulable'}")
    for container in status.container_statuses or ():
        waiting = container.state.waiting if container.state is not None else None
        if waiting is not None and waiting.reason in STUCK_REASONS:
            detail = f": {waiting.message}" if waiting.message else ""
            return Problem(waiting.reason,
                           f"pod {name} container {container.name}: {waiting.reason}{detail}")
    if status.phase == "Failed":
        return Problem("PodFailed", f"pod {name} failed: {status.message or status.reason}")
    return None


def read_backends(pods: Iterable[Pod], statefulset: str, wanted: int) -> BackendPods:
    """The ready backends of the StatefulSet ``statefulset`` (ordered by ordinal) and the
    problems of the wanted pods that are not ready."""
    out = BackendPods(wanted=wanted)
    for pod in sorted(pods, key=lambda p: p.metadata.name or ""):
        ordinal = ordinal_of(pod.metadata.name or "", statefulset)
        if ordinal is None or ordinal >= wanted or pod.metadata.deletion_timestamp:
            continue
        out.existing += 1
        if is_ready(pod):
            assert pod.status is not None and pod.status.pod_ip
            out.ready.append(Backend(ordinal, pod.status.pod_ip))
        else:
            problem = problem_of(pod)
            if problem is not None:
                out.problems.append(problem)
    out.ready.sort()
    return out


def pod_problems(pods: Iterable[Pod]) -> list[Problem]:
    """The problems of any pods (the proxies'), terminating ones left out."""
    found = (problem_of(p) for p in sorted(pods, key=lambda p: p.metadata.name or "")
             if not p.metadata.deletion_timestamp)
    return [p for p in found if p is not None]
