"""What the in-process controllers need to know about served resources, and how they write.

The controllers of kube-controller-manager find resources through discovery (preferred
versions) and write as the ``kube-controller-manager`` field manager; these helpers give the
same view of the embedded server's registry.
"""

from __future__ import annotations

from setpoint.cluster.registry import Registry
from setpoint.cluster.registry.options import WriteOptions
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.objects import Obj

CONTROLLER_MANAGER = "kube-controller-manager"

NAMESPACES = "/namespaces"
SERVICEACCOUNTS = "/serviceaccounts"
CONFIGMAPS = "/configmaps"


def controller_write() -> WriteOptions:
    """Options of a write made by kube-controller-manager (its User-Agent names the manager)."""
    return WriteOptions(field_manager=CONTROLLER_MANAGER, field_validation="Ignore")


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


class ServedTypes:
    """The preferred served type of each stored resource, recomputed when the registry changes."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._generation = -1
        self._by_key: dict[str, ResourceType] = {}

    def _refresh(self) -> None:
        if self._generation == self._registry.generation:
            return
        groups = self._registry.groups()
        by_key: dict[str, ResourceType] = {}
        rank: dict[str, int] = {}
        for rt in self._registry.all():
            versions = groups.get(rt.group, [])
            order = versions.index(rt.version) if rt.version in versions else len(versions)
            if rt.storage_key not in by_key or order < rank[rt.storage_key]:
                by_key[rt.storage_key] = rt
                rank[rt.storage_key] = order
        self._by_key = by_key
        self._generation = self._registry.generation

    def for_key(self, storage_key: str) -> ResourceType | None:
        """The preferred served type that stores its objects under ``storage_key``."""
        self._refresh()
        return self._by_key.get(storage_key)

    def namespaced_deletable(self) -> list[ResourceType]:
        """``ServerPreferredNamespacedResources`` filtered to those that support delete."""
        self._refresh()
        return [rt for rt in self._by_key.values() if rt.namespaced and "delete" in rt.verbs]

    def for_object(self, storage_key: str, obj: Obj) -> ResourceType | None:
        """The type at the object's own apiVersion (so an update needs no conversion), else
        the preferred one."""
        group, version = split_api_version(str(obj.get("apiVersion", "")))
        rt = self._registry.get(group, version, self._resource_of(storage_key))
        if rt is not None and rt.storage_key == storage_key and rt.served:
            return rt
        return self.for_key(storage_key)

    @staticmethod
    def _resource_of(storage_key: str) -> str:
        return storage_key.rsplit("/", 1)[-1]
