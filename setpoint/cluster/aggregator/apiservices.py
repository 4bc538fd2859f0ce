"""APIServices as the aggregator reads them: which are remote, available, and in what order.

The order is kube-aggregator's (pkg/apis/apiregistration/v1/helper/helpers.go, 1.32):
``ByGroupPriorityMinimum`` (highest first, then by name) groups the APIServices, and within
a group ``ByVersionPriority`` (highest first, then kube-aware version order) puts the
preferred version first.
"""

from __future__ import annotations

from setpoint.cluster.registry.served import version_priority
from setpoint.machinery.objects import Obj

APISERVICES = "apiregistration.k8s.io/apiservices"


def group_version(apiservice: Obj) -> tuple[str, str]:
    spec = apiservice.get("spec") or {}
    return str(spec.get("group") or ""), str(spec.get("version") or "")


def is_remote(apiservice: Obj) -> bool:
    return bool((apiservice.get("spec") or {}).get("service"))


def is_available(apiservice: Obj) -> bool:
    """``IsAPIServiceConditionTrue(apiService, Available)``: what the proxy checks first."""
    for condition in (apiservice.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Available":
            return bool(condition.get("status") == "True")
    return False


def _group_key(apiservice: Obj) -> tuple[int, str]:
    spec = apiservice.get("spec") or {}
    return (-int(spec.get("groupPriorityMinimum") or 0), apiservice["metadata"]["name"])


def _version_key(apiservice: Obj) -> tuple[int, tuple[int, int, int, str]]:
    spec = apiservice.get("spec") or {}
    return (-int(spec.get("versionPriority") or 0), version_priority(str(spec.get("version"))))


def sorted_by_group_and_version(apiservices: list[Obj]) -> list[list[Obj]]:
    """``SortedByGroupAndVersion``: one list per group, groups by priority, the preferred
    version first in each."""
    groups: dict[str, list[Obj]] = {}
    for apiservice in sorted(apiservices, key=_group_key):
        groups.setdefault(group_version(apiservice)[0], []).append(apiservice)
    return [sorted(members, key=_version_key) for members in groups.values()]


def group_priority(apiservices: list[Obj]) -> int:
    """The priority a group is listed by: that of its first APIService."""
    return -_group_key(sorted(apiservices, key=_group_key)[0])[0]
