"""NamespaceLifecycle: no content in missing or terminating namespaces; immortal namespaces.

As the apiserver's ``NamespaceLifecycle`` admission plugin: writes to namespaces themselves
are always admitted (except deleting ``default``, ``kube-system`` or ``kube-public``); a
namespaced object cannot be written into a namespace that does not exist (404) nor created in
one that is terminating (403 with the ``NamespaceTerminating`` cause). Cluster-scoped objects
and deletions of namespaced objects are not its business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
NAMESPACES_KEY = "/namespaces"
_SEEN_LIMIT = 4096


def _is_namespace(rt: ResourceType) -> bool:
    return rt.kind == "Namespace" and not rt.group


def terminating(namespace: dict[str, Any]) -> bool:
    """A namespace being deleted (phase Terminating; the deletion sets both together)."""
    return ((namespace.get("status") or {}).get("phase") == "Terminating"
            or bool(namespace["metadata"].get("deletionTimestamp")))


class NamespaceLifecycle:
    """The admission step for creates and updates (see :func:`check_namespace_delete`)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # namespace name -> (its stored JSON, terminating): every create looks its namespace
        # up, and decoding it each time was a few percent of a create. A write stores new
        # bytes, so the same bytes object means the same namespace version.
        self._seen: dict[str, tuple[bytes, bool]] = {}

    def __repr__(self) -> str:
        return "NamespaceLifecycle()"

    def _terminating(self, ns: str) -> bool | None:
        """Whether namespace ``ns`` is terminating; None when it does not exist."""
        raw = self._store.get_raw(NAMESPACES_KEY, "", ns)
        if raw is None:
            self._seen.pop(ns, None)
            return None
        hit = self._seen.get(ns)
        if hit is not None and hit[0] is raw:
            return hit[1]
        answer = terminating(orjson.loads(raw))
        if len(self._seen) >= _SEEN_LIMIT:
            self._seen.clear()  # (namespaces come and go; the live ones return at once)
        self._seen[ns] = (raw, answer)
        return answer

    def __call__(self, attributes: Attributes) -> None:
        operation, rt, obj = attributes.operation, attributes.rt, attributes.obj
        if operation not in ("CREATE", "UPDATE") or _is_namespace(rt) or not rt.namespaced:
            return
        ns = obj["metadata"].get("namespace") or ""
        is_terminating = self._terminating(ns)
        if is_terminating is None:
            raise errors.not_found("namespaces", ns)
        if operation == "CREATE" and is_terminating:
            # admission.NewForbidden's extractResourceName: before validation an object may
            # have neither name nor generateName
            name = (obj["metadata"].get("name") or obj["metadata"].get("generateName")
                    or "Unknown")
            raise errors.StatusError(
                403, "Forbidden",
                f'{rt.qualified_resource} "{name}" is forbidden: unable to create new content '
                f"in namespace {ns} because it is being terminated",
                name=name, group=rt.group, kind=rt.resource,
                causes=[errors.Cause(NAMESPACE_TERMINATING_CAUSE,
                                     f"namespace {ns} is being terminated",
                                     "metadata.namespace")])


def check_namespace_delete(rt: ResourceType, namespace: str | None, name: str) -> None:
    """The DELETE admission step: the immortal namespaces cannot be deleted (403).

    Runs before the object is read, as mutating admission does for a DELETE request.
    """
    del namespace  # namespaces are cluster-scoped; the signature is the delete hook's
    if _is_namespace(rt) and name in IMMORTAL_NAMESPACES:
        raise errors.forbidden(rt.resource, name, "this namespace may not be deleted")
