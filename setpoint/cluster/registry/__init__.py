"""The registry: every served resource type, built-in and custom, and how to find it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from setpoint.cluster.registry.builtin import builtin_resources
from setpoint.cluster.registry.types import ResourceType, ScalePaths
from setpoint.machinery.schema import Schema, definitions

__all__ = ["Registry", "ResourceType", "ScalePaths"]


class Registry:
    """Resource types by group/version/resource and by kind; notifies on change."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._listeners: list[Callable[[], None]] = []
        self.generation = 0  # bumps whenever the set of served types changes
        self._groups: tuple[int, dict[str, list[str]]] | None = None  # (generation, groups)
        for rt in builtin_resources():
            self._by_gvr[(rt.group, rt.version, rt.resource)] = rt

    # -- lookups -----------------------------------------------------------------------
    def get(self, group: str, version: str, resource: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, resource))

    def require(self, group: str, version: str, resource: str) -> ResourceType:
        """The served type, or KeyError: for the server's own writes to built-in types."""
        rt = self.get(group, version, resource)
        if rt is None:
            raise KeyError(f"{group}/{version}/{resource} is not served")
        return rt

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        for rt in self._by_gvr.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.served]

    def versions_of(self, group: str, resource: str) -> list[ResourceType]:
        return [rt for rt in self.all() if rt.group == group and rt.resource == resource]

    def groups(self) -> dict[str, list[str]]:
        """Served group -> its versions, preferred first (custom groups ordered by CRD).
        Kept until the served types change: every request under /apis asks (read only)."""
        cached = self._groups
        if cached is not None and cached[0] == self.generation:
            return cached[1]
        out: dict[str, list[str]] = {}
        for rt in self.all():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        self._groups = (self.generation, out)
        return out

    def schema(self, rt: ResourceType) -> Schema | None:
        """The OpenAPI schema of a resource's objects (built-ins load it on first use)."""
        if rt.schema is None and not rt.is_custom:
            rt.schema = definitions().for_kind(rt.group, rt.version, rt.kind)
        return rt.schema

    # -- custom resources --------------------------------------------------------------
    def replace_custom(self, group: str, resource: str, types: Iterable[ResourceType]) -> None:
        """Serve ``types`` for group/resource instead of what a CRD served before."""
        for key in [k for k in self._by_gvr if k[0] == group and k[2] == resource]:
            if self._by_gvr[key].is_custom:
                del self._by_gvr[key]
        for rt in types:
            self._by_gvr[(rt.group, rt.version, rt.resource)] = rt
        self._changed()

    def remove_custom(self, group: str, resource: str) -> None:
        self.replace_custom(group, resource, ())

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def _changed(self) -> None:
        self.generation += 1
        for listener in self._listeners:
            listener()
