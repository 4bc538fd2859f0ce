"""The object a TokenRequest binds its token to (``spec.boundObjectRef``).

As pkg/registry/core/serviceaccount/storage/token.go (1.32) does: a token may be bound to a
Pod (which must run as the service account), a Node (ServiceAccountTokenNodeBinding, on by
default since 1.31) or a Secret of the request's namespace; the object must exist and, when
the reference names a uid, be that very object. The claims it adds follow
pkg/serviceaccount/claims.go: the bound object's name and uid, and for a scheduled pod its
node's (ServiceAccountTokenPodNodeInfo, on by default since 1.30).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from setpoint.machinery import errors

# (namespace, resource path, name) -> the stored object or None
Lookup = Callable[[str, str, str], dict[str, Any] | None]

# kind -> (storage resource path, namespaced, claim key)
_BINDABLE = {"Pod": ("/pods", True), "Node": ("/nodes", False), "Secret": ("/secrets", True)}


def _group_version(api_version: str) -> tuple[str, str]:
    """``schema.ParseGroupVersion`` as ``FromAPIVersionAndKind`` uses it."""
    if "/" in api_version:
        group, _, version = api_version.partition("/")
        return group, version
    return "", api_version


def _ref(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"name": str(meta.get("name", "")), "uid": str(meta.get("uid", ""))}


def bound_claims(ref: Any, namespace: str, service_account: str,
                 lookup: Lookup) -> dict[str, dict[str, str]]:
    """The ``kubernetes.io`` claims the bound object adds (empty without a reference), or
    the error the apiserver answers for a reference it cannot bind to."""
    if not isinstance(ref, dict):
        return {}
    kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    group, version = _group_version(str(ref.get("apiVersion") or ""))
    bindable = _BINDABLE.get(kind) if group == "" else None
    if bindable is None:
        raise errors.bad_request(
            f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    resource, namespaced = bindable
    obj = lookup(namespace if namespaced else "", resource, name)
    if obj is None:
        raise errors.not_found(resource.lstrip("/"), name)
    claims = {kind.lower(): _ref(obj)}
    if kind == "Pod":
        spec = obj.get("spec") or {}
        if spec.get("serviceAccountName", "") != service_account:
            raise errors.bad_request(
                f'cannot bind token for serviceaccount "{service_account}" to pod running '
                "with different serviceaccount name.")
        node_name = spec.get("nodeName")
        if node_name:
            # a node that does not exist (yet) is still named, without a uid
            node = lookup("", "/nodes", node_name)
            claims["node"] = _ref(node) if node is not None else {"name": node_name}
    want_uid = ref.get("uid")
    if want_uid and want_uid != claims[kind.lower()]["uid"]:
        # NewConflict(GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ...)
        raise errors.conflict(
            kind, name,
            f"the UID in the bound object reference ({want_uid}) does not match the UID in "
            "record. The object might have been deleted and then recreated")
    return claims


def bound_objects_exist(claims: dict[str, Any], lookup: Lookup) -> bool:
    """Whether the objects a token was bound to still exist as the very objects it names
    (pkg/serviceaccount/claims.go, validator.Validate: else "service account token has been
    invalidated"). A pod-bound token's node claim is information only; a token bound to a
    node itself is checked against it (ServiceAccountTokenNodeBindingValidation)."""
    info = claims.get("kubernetes.io") or {}
    namespace = str(info.get("namespace", ""))
    checks = [("pod", "/pods", namespace), ("secret", "/secrets", namespace)]
    if "pod" not in info:
        checks.append(("node", "/nodes", ""))
    for key, resource, ns in checks:
        ref = info.get(key)
        if not isinstance(ref, dict):
            continue
        obj = lookup(ns, resource, str(ref.get("name", "")))
        if obj is None or (obj.get("metadata") or {}).get("uid") != ref.get("uid"):
            return False
    return True
