"""NamespaceLifecycle: no new objects in a namespace that does not exist or is terminating."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.apiserver import APIServer

IMMORTAL = {"default", "kube-system", "kube-public"}


class NamespaceLifecycle:
    def __init__(self, api: APIServer) -> None:
        self._api = api

    def __call__(self, operation: str, rt: ResourceType, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> None:
        if operation != "CREATE" or not rt.namespaced:
            return
        ns = obj["metadata"].get("namespace", "")
        namespace = self._api.store.get("/namespaces", "", ns)
        if namespace is None:
            raise errors.not_found("namespaces", ns)
        if namespace["metadata"].get("deletionTimestamp"):
            raise errors.StatusError(
                403, "Forbidden",
                f'{rt.qualified_resource} "{obj["metadata"].get("name", "")}" is forbidden: '
                f"unable to create new content in namespace {ns} because it is being terminated",
                name=obj["metadata"].get("name", ""), group=rt.group, kind=rt.resource,
                causes=[errors.Cause("NamespaceTerminating",
                                     f"namespace {ns} is being terminated", "metadata.namespace")])


def check_namespace_delete(rt: ResourceType, name: str) -> None:
    """The system namespaces cannot be deleted."""
    if rt.kind == "Namespace" and not rt.group and name in IMMORTAL:
        raise errors.forbidden("namespaces", name,
                               "this namespace may not be deleted")
