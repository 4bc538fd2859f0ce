"""What the server serves, in kube-apiserver's order: groups, versions, subresources.

Discovery (``setpoint.cluster.endpoints.discovery``) and the OpenAPI documents
(``setpoint.cluster.openapi``) both list the registry's types in this order.
"""

from __future__ import annotations

import re

from setpoint.cluster.registry import Registry, ResourceType

# The order in which kube-apiserver v1.32 lists its groups (aggregator priorities).
GROUP_ORDER = (
    "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "flowcontrol.apiserver.k8s.io",
)

_SUBRESOURCE_WRITE = ("get", "patch", "update")
_PROXY_VERBS = ("create", "delete", "get", "patch", "update")

# subresource -> (group, version, kind or None for the parent's kind, verbs); kind "{}" is
# formatted with the parent's kind (nodes/proxy is NodeProxyOptions).
_SUBRESOURCES: dict[str, tuple[str | None, str | None, str | None, tuple[str, ...]]] = {
    "status": (None, None, None, _SUBRESOURCE_WRITE),
    "scale": ("autoscaling", "v1", "Scale", _SUBRESOURCE_WRITE),
    "finalize": (None, None, None, ("update",)),
    "approval": (None, None, None, _SUBRESOURCE_WRITE),
    "ephemeralcontainers": (None, None, None, _SUBRESOURCE_WRITE),
    "resize": (None, None, None, _SUBRESOURCE_WRITE),
    "log": (None, None, None, ("get",)),
    "binding": (None, None, "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "attach": (None, None, "PodAttachOptions", ("create", "get")),
    "exec": (None, None, "PodExecOptions", ("create", "get")),
    "portforward": (None, None, "PodPortForwardOptions", ("create", "get")),
    "proxy": (None, None, "{}ProxyOptions", _PROXY_VERBS),
}

# -- ordering -----------------------------------------------------------------------------

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key putting kube-like versions first: GA > beta > alpha, higher numbers first.

    Versions that do not look like ``v1``/``v2beta1`` sort after them, alphabetically.
    """
    m = _KUBE_VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")


def _group_key(group: str) -> tuple[int, str]:
    try:
        return (GROUP_ORDER.index(group), "")
    except ValueError:
        return (len(GROUP_ORDER), group)


def served_groups(registry: Registry) -> dict[str, dict[str, list[ResourceType]]]:
    """group -> version -> resource types, groups and versions in the server's order; only
    the types discovery lists (``ResourceType.discoverable``: a CRD not yet Established is
    left out)."""
    by_group: dict[str, dict[str, list[ResourceType]]] = {}
    for rt in registry.all():
        if not rt.discoverable:
            continue
        by_group.setdefault(rt.group, {}).setdefault(rt.version, []).append(rt)
    out: dict[str, dict[str, list[ResourceType]]] = {}
    for group in sorted(by_group, key=_group_key):
        versions = by_group[group]
        out[group] = {v: sorted(versions[v], key=lambda r: r.resource)
                      for v in sorted(versions, key=version_priority)}
    return out


def subresource_meta(rt: ResourceType, sub: str) -> tuple[str, str, str, tuple[str, ...]]:
    """(group, version, kind, verbs) of a subresource; group/version default to the parent's."""
    group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, _SUBRESOURCE_WRITE))
    kind = rt.kind if kind is None else kind.format(rt.kind)
    return (rt.group if group is None else group, rt.version if version is None else version,
            kind, verbs)
