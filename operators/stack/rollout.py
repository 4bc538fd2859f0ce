"""The MariaDB server's version rollout, read from its pod: which version last ran on the
data, whether the pod of a new version fails to start, and the rollback StatefulSet leaves
to a person.

A StatefulSet rolls a changed template by deleting the pod and making it again from the
new revision on the same claim; the data stays on the claim whatever the new server does.
When the new server does not start, the StatefulSet waits for that pod to be Running and
Ready before anything else, so setting the version back does not replace it either
(pkg/controller/statefulset/stateful_set_control.go ``updateStatefulSet``: a replica
not running and ready stops the ordered loop; Kubernetes' StatefulSet documentation,
"Forced rollback": "you must also delete any Pods that StatefulSet had already attempted
to run with the bad configuration"). The operator does that deletion itself, only for a
pod of a revision that is no longer the one wanted and that fails to start.
"""

from __future__ import annotations

from setpoint.resources.models.apps_v1 import StatefulSet
from setpoint.resources.models.core_v1 import Pod

REVISION_LABEL = "controller-revision-hash"
FAILED_WAITING = frozenset({"CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff",
                            "InvalidImageName", "CreateContainerError",
                            "CreateContainerConfigError", "RunContainerError"})
"""A container's waiting reasons that mean it does not start by itself (the kubelet's,
pkg/kubelet/container/sync_result.go and images/types.go)."""


def image_version(image: str | None) -> str | None:
    """The tag of ``mariadb:<tag>`` (the version the operator put there)."""
    if not image:
        return None
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def server_version(pod: Pod, container: str) -> str | None:
    spec = pod.spec
    return next((image_version(c.image) for c in (spec.containers if spec else None) or ()
                 if c.name == container), None)


def is_ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True"
               for c in (pod.status.conditions if pod.status else None) or ())


def start_failure(pod: Pod, container: str) -> str | None:
    """Why ``container`` does not come up, once the kubelet says it will not by itself
    (waiting in back-off or on an image) or it ended in an error; None while it runs
    (not yet ready: it may still come up) or has not started."""
    if is_ready(pod) or pod.metadata.deletion_timestamp is not None:
        return None
    found = next((c for c in (pod.status.container_statuses if pod.status else None) or ()
                  if c.name == container), None)
    if found is None:
        return None
    state = found.state
    if state is None or state.running is not None:  # running again: it may yet come up
        return None
    ended = state.terminated or (found.last_state.terminated
                                 if found.last_state is not None else None)
    exit_part = f"exit code {ended.exit_code}" if ended is not None else ""
    if state.waiting is not None and state.waiting.reason in FAILED_WAITING:
        why = state.waiting.reason or ""
        detail = exit_part or (state.waiting.message or "")
        return f"{why}: {detail}" if detail else why
    if state.terminated is not None and state.terminated.exit_code != 0:
        return f"{state.terminated.reason or 'Error'}: {exit_part}"
    return None


def stuck_on_an_old_revision(server: StatefulSet, pod: Pod) -> bool:
    """The pod runs a revision the StatefulSet no longer wants (as its controller has
    seen the current spec) and StatefulSet will not replace it: the forced rollback."""
    status = server.status
    if status is None or not status.update_revision \
            or status.observed_generation != server.metadata.generation:
        return False
    revision = (pod.metadata.labels or {}).get(REVISION_LABEL)
    return revision is not None and revision != status.update_revision
