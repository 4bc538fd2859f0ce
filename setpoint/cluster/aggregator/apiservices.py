"""APIServices as the aggregator reads them: which are remote, available, and in what order.

The order is kube-aggregator's (pkg/apis/apiregistration/v1/helper/helpers.go, 1.32):
``ByGroupPriorityMinimum`` (highest first, then by name) groups the APIServices, and within
a group ``ByVersionPriority`` (highest first, then kube-aware version order) puts the
preferred version first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from setpoint.cluster.aggregator.priorities import (
    AGGREGATOR_GROUP,
    API_VERSION_PRIORITIES,
    CRD_GROUP_PRIORITY_MINIMUM,
    CRD_VERSION_PRIORITY,
    apiservice_name,
)
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


def priority_of(apiservice: Obj) -> tuple[str, str, int, int]:
    """(group, version, groupPriorityMinimum, versionPriority) of an APIService."""
    spec = apiservice.get("spec") or {}
    return (*group_version(apiservice), int(spec.get("groupPriorityMinimum") or 0),
            int(spec.get("versionPriority") or 0))


class GroupOrder:
    """The order of groups and versions in discovery, from the APIServices' priorities.

    handler_apis.go lists the aggregator's own group first, then ``SortedByGroupAndVersion``
    of every APIService: a group ranks by its first APIService under ``ByGroupPriorityMinimum``
    (highest ``groupPriorityMinimum``, then the APIService's name), its versions by
    ``ByVersionPriority`` (highest ``versionPriority``, then kube-aware version order). A
    served group-version without an APIService (not registered yet, or one deleted) ranks
    as the APIService it would get: a built-in one's priorities, else a CRD's.
    """

    def __init__(self, priorities: Mapping[str, tuple[str, str, int, int]]) -> None:
        self._priorities = priorities  # APIService name -> (group, version, gpm, vp)

    def __repr__(self) -> str:
        return f"GroupOrder({len(self._priorities)} APIServices)"

    def _priority(self, group: str, version: str) -> tuple[int, int]:
        known = self._priorities.get(apiservice_name(group, version))
        if known is not None and known[:2] == (group, version):
            return known[2], known[3]
        return API_VERSION_PRIORITIES.get(
            (group, version), (CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY))

    def group_key(self, group: str, versions: Iterable[str]) -> tuple[int, int, str]:
        if group == AGGREGATOR_GROUP:
            return (0, 0, "")
        ranks = [(-self._priority(group, v)[0], apiservice_name(group, v)) for v in versions]
        best = min(ranks) if ranks else (0, apiservice_name(group, ""))
        return (1, *best)

    def version_key(self, group: str, version: str) -> tuple[int, tuple[int, int, int, str]]:
        return (-self._priority(group, version)[1], version_priority(version))

    def versions(self, group: str, versions: Iterable[str]) -> list[str]:
        return sorted(versions, key=lambda v: self.version_key(group, v))
