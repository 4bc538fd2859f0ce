"""Addressing API resources: what a URL is made of, and discovery to find it.

A resource can be named four ways: a complete :class:`ResourceInfo` (used as is), a
:class:`Kind` (``apiVersion`` + ``kind``), a :class:`GVR` (group, version, plural resource),
or a typed class (see :mod:`setpoint.client.typed`). :class:`Discovery` turns the last three
into a :class:`ResourceInfo` by reading the group-version's resource list once, caching it,
and reading it again when a name is missing (a CRD created since).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from setpoint.client.decoding import json_object
from setpoint.client.errors import NotFoundError, UnknownResourceError
from setpoint.client.transport import Transport
from setpoint.client.typed import is_typed_class


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


_TEMPLATES: dict[tuple[str, str, str, bool, bool, bool, str | None], str] = {}
"""A resource's path templates, made once each (asked per request, for its metrics)."""


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """Everything needed to build a resource's URLs.

    ``resource`` is the plural lower-case name used in paths (``configmaps``);
    ``subresources`` lists what discovery announced (``status``, ``scale``).
    """

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    subresources: frozenset[str] = field(default_factory=frozenset)
    short_names: tuple[str, ...] = ()
    singular_name: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self, namespace: str | None = None, name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path; ``namespace`` is ignored for cluster-scoped resources."""
        # formatted in one piece, not joined from a list (twice per request)
        group = self.group
        prefix = f"/apis/{group}/{self.version}" if group else f"/api/{self.version}"
        base = f"{prefix}/namespaces/{namespace}/{self.resource}" \
            if self.namespaced and namespace else f"{prefix}/{self.resource}"
        if not name:
            return base
        return f"{base}/{name}/{subresource}" if subresource else f"{base}/{name}"

    def template(
        self, namespaced: bool, named: bool, subresource: str | None = None,
    ) -> str:
        """The path with ``{namespace}`` and ``{name}`` placeholders, for metrics."""
        key = (self.group, self.version, self.resource, self.namespaced, namespaced, named,
               subresource)
        made = _TEMPLATES.get(key)
        if made is None:
            made = self.path("{namespace}" if namespaced else None,
                             "{name}" if named else None, subresource)
            if len(_TEMPLATES) >= 4096:
                _TEMPLATES.clear()
            _TEMPLATES[key] = made
        return made

    def __repr__(self) -> str:
        scope = "namespaced" if self.namespaced else "cluster"
        return f"ResourceInfo({self.api_version}, {self.kind}, {self.resource}, {scope})"


@dataclass(frozen=True, slots=True)
class Kind:
    """A resource named by ``apiVersion`` and ``kind``: ``Kind("apps/v1", "Deployment")``."""

    api_version: str
    kind: str

    def __repr__(self) -> str:
        return f"Kind({self.api_version!r}, {self.kind!r})"


@dataclass(frozen=True, slots=True)
class GVR:
    """A resource named by group, version and plural: ``GVR("apps", "v1", "deployments")``."""

    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __repr__(self) -> str:
        return f"GVR({self.group!r}, {self.version!r}, {self.resource!r})"


ResourceRef = ResourceInfo | Kind | GVR | type[Any]


_TYPED_INFOS: dict[type, ResourceInfo] = {}
"""Per typed class that names its plural and scope: its info, made once (a class attribute
read on a pydantic class goes through its metaclass's ``__getattr__`` hook, about 700
instructions, and the frozen info itself costs more than the rest of a resolve)."""


def _typed_info(cls: type[Any]) -> ResourceInfo | None:
    plural = getattr(cls, "plural", None)
    namespaced = getattr(cls, "namespaced", None)
    if not isinstance(plural, str) or not isinstance(namespaced, bool):
        return None
    group, version = split_api_version(cls.api_version)
    info = ResourceInfo(group, version, plural, cls.kind, namespaced)
    if len(_TYPED_INFOS) < 4096 and "<locals>" not in cls.__qualname__:
        _TYPED_INFOS[cls] = info  # classes made in a function (tests) may be many
    return info


class Discovery:
    """Resolves resource names through the server's per-group-version discovery documents.

    Each group-version is fetched once and cached; a name that is missing triggers one
    re-fetch of its group-version (concurrent misses share it) before
    :class:`UnknownResourceError` is raised.
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._cache: dict[str, GroupVersionResources] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._generation: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Discovery(cached={sorted(self._cache)})"

    def invalidate(self, api_version: str | None = None) -> None:
        """Forget one group-version (or all), so the next lookup reads discovery again."""
        if api_version is None:
            self._cache.clear()
        else:
            self._cache.pop(api_version, None)

    async def resolve(self, ref: ResourceRef) -> ResourceInfo:
        """The :class:`ResourceInfo` for any way of naming a resource."""
        known = self.known(ref)
        if known is not None:
            return known
        if isinstance(ref, Kind):
            return await self.for_kind(ref.api_version, ref.kind)
        if isinstance(ref, GVR):
            return await self.for_resource(ref.group, ref.version, ref.resource)
        if is_typed_class(ref):
            return await self.for_kind(ref.api_version, ref.kind)
        raise TypeError(f"cannot address a resource with {ref!r}")

    def known(self, ref: object) -> ResourceInfo | None:
        """What :meth:`resolve` answers for ``ref`` when that needs no request (an info, a
        kind of a group-version already read, a typed class that names its plural and
        scope), else None. Asked by every write, without :meth:`resolve`'s coroutines."""
        if type(ref) is ResourceInfo:
            return ref
        if type(ref) is Kind:
            return self.known_kind(ref.api_version, ref.kind)
        if isinstance(ref, type):
            info = _TYPED_INFOS.get(ref)
            if info is not None:
                return info
            if is_typed_class(ref):
                return _typed_info(ref)
            return None
        return ref if isinstance(ref, ResourceInfo) else None

    def known_kind(self, api_version: object, kind: object) -> ResourceInfo | None:
        """The resource of a kind of a group-version already read, else None."""
        cached = self._cache.get(api_version) if type(api_version) is str else None
        return cached.by_kind.get(kind) if cached is not None and type(kind) is str else None

    async def for_object(self, obj: Mapping[str, Any]) -> ResourceInfo:
        """The resource of an object, from its ``apiVersion`` and ``kind``."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ValueError("object has no apiVersion and kind to address it by")
        return await self.for_kind(api_version, kind)

    async def for_kind(self, api_version: str, kind: str) -> ResourceInfo:
        # every write resolves its kind, most twice: a kind of a known group-version is
        # answered here, without the lookup's coroutines
        cached = self._cache.get(api_version)
        found = cached.by_kind.get(kind) if cached is not None else None
        if found is not None:
            return found
        return await self._lookup(api_version, lambda gv: gv.by_kind.get(kind),
                                  f'kind "{kind}" in {api_version}')

    async def for_resource(self, group: str, version: str, resource: str) -> ResourceInfo:
        api_version = f"{group}/{version}" if group else version
        return await self._lookup(api_version, lambda gv: gv.by_resource.get(resource),
                                  f'resource "{resource}" in {api_version}')

    async def resources(self, api_version: str) -> list[ResourceInfo]:
        """All top-level resources of a group-version."""
        return list((await self._group_version(api_version, refresh=False)).by_resource.values())

    async def _lookup(
        self, api_version: str,
        pick: Callable[[GroupVersionResources], ResourceInfo | None], what: str,
    ) -> ResourceInfo:
        infos = await self._group_version(api_version, refresh=False)
        found = pick(infos)
        if found is None:
            infos = await self._group_version(api_version, refresh=True)
            found = pick(infos)
        if found is None:
            raise UnknownResourceError(f"the server does not serve {what}")
        return found

    async def _group_version(self, api_version: str, refresh: bool) -> GroupVersionResources:
        if not refresh:
            cached = self._cache.get(api_version)
            if cached is not None:
                # every request resolves its resource: a known group-version is answered
                # without a lock (taken only to fetch, so that concurrent askers fetch once)
                return cached
        seen = self._generation.get(api_version, 0)
        lock = self._locks.get(api_version)
        if lock is None:
            lock = self._locks[api_version] = asyncio.Lock()
        async with lock:
            cached = self._cache.get(api_version)
            fresh_since_asked = self._generation.get(api_version, 0) != seen
            if cached is not None and (not refresh or fresh_since_asked):
                return cached
            infos = await self._fetch(api_version)
            self._cache[api_version] = infos
            self._generation[api_version] = self._generation.get(api_version, 0) + 1
            return infos

    async def _fetch(self, api_version: str) -> GroupVersionResources:
        group, version = split_api_version(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            resp = await self._transport.request("GET", path)
        except NotFoundError:
            return GroupVersionResources({}, {})
        return parse_resource_list(json_object(resp.body), group, version)


class GroupVersionResources(NamedTuple):
    """One group-version's resources, by plural and by Kind."""

    by_resource: dict[str, ResourceInfo]
    by_kind: dict[str, ResourceInfo]


def parse_resource_list(
    doc: Mapping[str, Any], group: str, version: str,
) -> GroupVersionResources:
    """Index an ``APIResourceList``, folding ``x/status`` style entries into their parent's
    ``subresources``."""
    subresources: dict[str, set[str]] = {}
    top: list[Mapping[str, Any]] = []
    for entry in doc.get("resources") or []:
        name = entry.get("name", "")
        if "/" in name:
            parent, _, sub = name.partition("/")
            subresources.setdefault(parent, set()).add(sub)
        else:
            top.append(entry)
    out = GroupVersionResources({}, {})
    for entry in top:
        name = entry["name"]
        info = ResourceInfo(
            group=entry.get("group") or group, version=entry.get("version") or version,
            resource=name, kind=entry.get("kind", ""), namespaced=bool(entry.get("namespaced")),
            verbs=tuple(entry.get("verbs") or ()),
            subresources=frozenset(subresources.get(name, ())),
            short_names=tuple(entry.get("shortNames") or ()),
            singular_name=entry.get("singularName") or "",
        )
        out.by_resource[name] = info
        out.by_kind.setdefault(info.kind, info)
    return out
