"""The system PriorityClasses kube-apiserver creates when it starts.

pkg/registry/scheduling/rest/storage_scheduling.go: the
``scheduling/bootstrap-system-priority-classes`` post-start hook creates each of
pkg/apis/scheduling/v1/helpers.go's ``SystemPriorityClasses`` that does not exist (it never
updates one that does), so ``kubectl get priorityclasses`` lists them on every cluster.
pkg/registry/scheduling/priorityclass/storage/storage.go ``Delete`` refuses to delete them.
"""

from __future__ import annotations

from collections.abc import Callable

from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.objects import Obj

# pkg/apis/scheduling/types.go: HighestUserDefinablePriority (1e9), SystemCriticalPriority
SYSTEM_CRITICAL_PRIORITY = 2 * 1_000_000_000

SYSTEM_PRIORITY_CLASSES: tuple[Obj, ...] = (
    {"metadata": {"name": "system-node-critical"}, "value": SYSTEM_CRITICAL_PRIORITY + 1000,
     "description": "Used for system critical pods that must not be moved from their current "
                    "node."},
    {"metadata": {"name": "system-cluster-critical"}, "value": SYSTEM_CRITICAL_PRIORITY,
     "description": "Used for system critical pods that must run in the cluster, but can be "
                    "moved to another node if necessary."},
)

Ensure = Callable[[str, str, str, "str | None", Obj], Obj]


def bootstrap_system_priority_classes(ensure: Ensure) -> None:
    """Create the system PriorityClasses that are missing (``AddSystemPriorityClasses``)."""
    for pc in SYSTEM_PRIORITY_CLASSES:
        ensure("scheduling.k8s.io", "v1", "priorityclasses", None,
               {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                **{k: (dict(v) if isinstance(v, dict) else v) for k, v in pc.items()}})


SYSTEM_PRIORITY_CLASS_NAMES = frozenset(pc["metadata"]["name"] for pc in SYSTEM_PRIORITY_CLASSES)


def refuse_system_class_delete(rt: ResourceType, namespace: str | None, name: str) -> None:
    """storage.go ``Delete``: a system class cannot be deleted (403), before it is read."""
    del namespace  # (cluster-scoped; the signature is the delete hook's)
    if (rt.group, rt.resource) == ("scheduling.k8s.io", "priorityclasses") and \
            name in SYSTEM_PRIORITY_CLASS_NAMES and not rt.is_custom:
        raise errors.forbidden(rt.resource, name,
                               "this is a system priority class and cannot be deleted", rt.group)
