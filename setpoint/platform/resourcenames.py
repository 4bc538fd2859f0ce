"""What a user may type for a kind, resolved as kubectl resolves it from discovery.

``deploy``, ``deployments``, ``deployment``, ``Deployment``, ``deploy.apps``,
``deployments.apps``, ``deployments.v1.apps`` and ``Deployment.v1.apps`` all name the same
resource. The rules follow k8s.io/cli-runtime/pkg/resource/builder.go ``mappingFor`` (a
resource argument first, a kind argument second), k8s.io/apimachinery/pkg/runtime/schema
``ParseResourceArg``/``ParseKindArg`` (``resource.version.group`` / ``resource.group``),
k8s.io/client-go/restmapper/shortcut.go ``expandResourceShortcut`` (short names, exact
group, then a group prefix) and k8s.io/apimachinery/pkg/api/meta/restmapper.go (plural and
singular names, lower-cased; an empty singularName is the lower-cased kind).
"""

from __future__ import annotations

from collections.abc import Sequence

from setpoint.client import ApiError, Client, ClientError, Kind, ResourceInfo
from setpoint.platform.settle import gather_settled
from setpoint.runtime import Cache

GroupKind = tuple[str, str]


async def served_resources(client: Client, cache: Cache) -> list[ResourceInfo]:
    """Discovery's entries for the kinds ``cache`` holds (the client cached them when it
    listed them); a kind not served is left out."""
    async def one(kind: Kind) -> ResourceInfo | None:
        try:
            return await client.resolve(kind)
        except (ApiError, ClientError):
            return None
    found = await gather_settled(*(one(Kind(k.api_version, k.kind)) for k in cache.kinds))
    return [info for info in found if info is not None]


def _singular(info: ResourceInfo) -> str:
    return info.singular_name or info.kind.lower()


def _expand_short_name(resource: str, group: str, served: Sequence[ResourceInfo]) -> str:
    """shortcut.go: a full plural or singular name is kept; else a short name in the same
    group (any group when none was typed) becomes its resource's plural."""
    for info in served:
        if (not group or group == info.group) and resource in (info.resource, _singular(info)):
            return resource
    for info in served:
        if (not group or group == info.group) and resource in info.short_names:
            return info.resource
    for info in served:
        if group and info.group.startswith(group) and resource in info.short_names:
            return info.resource
    return resource


def _by_resource(resource: str, group: str | None, version: str | None,
                 served: Sequence[ResourceInfo]) -> list[ResourceInfo]:
    resource = _expand_short_name(resource, group or "", served)
    return [info for info in served
            if resource in (info.resource, _singular(info))
            and (group is None or info.group == group)
            and (version is None or info.version == version)]


def resources_for(arg: str, served: Sequence[ResourceInfo]) -> list[GroupKind]:
    """The group-kinds ``arg`` names among ``served``; empty when it names none."""
    for resource, group, version in _resource_args(arg.lower()):
        found = _by_resource(resource, group, version, served)
        if found:
            return _group_kinds(found)
    kind, _, rest = arg.partition(".")
    for group, version in _kind_args(rest):  # the kind matched as written
        found = [info for info in served if info.kind == kind
                 and (group is None or info.group == group)
                 and (version is None or info.version == version)]
        if found:
            return _group_kinds(found)
    return []


def _resource_args(arg: str) -> list[tuple[str, str | None, str | None]]:
    """ParseResourceArg: (resource, group, version) of ``resource.version.group`` (when
    there are two dots or more), then of ``resource.group``."""
    out: list[tuple[str, str | None, str | None]] = []
    if arg.count(".") >= 2:
        resource, version, group = arg.split(".", 2)
        out.append((resource, group, version))
    resource, dot, rest = arg.partition(".")
    out.append((resource, rest if dot else None, None))
    return out


def _kind_args(rest: str) -> list[tuple[str | None, str | None]]:
    """ParseKindArg: (group, version) of ``Kind.version.group``, then of ``Kind.group``."""
    out: list[tuple[str | None, str | None]] = []
    if "." in rest:
        version, _, group = rest.partition(".")
        out.append((group, version))
    out.append((rest or None, None))
    return out


def _group_kinds(found: Sequence[ResourceInfo]) -> list[GroupKind]:
    return list(dict.fromkeys((info.group, info.kind) for info in found))
