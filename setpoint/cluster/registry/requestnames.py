"""The object's name and namespace checked against the request's URL, as every write handler of
k8s.io/apiserver does before the store sees the object: ``EnsureObjectNamespaceMatchesRequest
Namespace`` (registry/rest/meta.go) first, then ``checkName`` (endpoints/handlers/rest.go)."""

from __future__ import annotations

from typing import Any

from setpoint.machinery import errors


def ensure_namespace_matches(meta: dict[str, Any], namespaced: bool, ns: str | None) -> None:
    """A namespace the object leaves out is the request's; a cluster-scoped object's is
    cleared; any other namespace is a 400 (``EnsureObjectNamespaceMatchesRequestNamespace``)."""
    if not namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace") or ""
    if given and given != ns:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the "
            "request")
    meta["namespace"] = ns


def check_name(meta: dict[str, Any], name: str) -> None:
    """``checkName``: an object without a name cannot be matched (``ContextBasedNaming.
    ObjectName`` answers ``errEmptyName``); another name than the URL's is a 400."""
    given = meta.get("name") or ""
    if not given:
        raise errors.bad_request(f"the name of the object ({name} based on URL) was "
                                 "undeterminable: name must be provided")
    if given != name:
        raise errors.bad_request(
            f"the name of the object ({given}) does not match the name on the URL ({name})")
