"""What an API request is about, read from its method and path (the apiserver's RequestInfo).

Fault rules and request counters speak Kubernetes, not HTTP: "a PATCH of configmaps",
"the watch of widgets". :func:`request_info` derives the verb (get, list, watch, create,
update, patch, delete, deletecollection), the resource with its subresource, the namespace
and the name from a request line, the way the apiserver's ``RequestInfoFactory`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """One request, in Kubernetes terms. ``resource`` is empty for non-resource paths
    (``/version``, discovery); ``subresource`` is ``""`` for the object itself."""

    method: str
    verb: str
    path: str
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def is_watch(self) -> bool:
        return self.verb == "watch"

    @property
    def full_resource(self) -> str:
        """``plural`` or ``plural/subresource``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.verb} {self.full_resource or self.path} {where}{self.name}".rstrip()


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Parse ``/api/v1/...`` and ``/apis/<group>/<version>/...`` paths; anything else is a
    non-resource request whose verb is the lowercased method."""
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        rest = []
    if not rest:  # discovery and other non-resource paths
        return RequestInfo(method, method.lower(), path)
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) >= 2:
        # as the apiserver: /namespaces/{ns} is also "in" ns; what follows is a resource,
        # except the Namespace's own subresources
        namespace = rest[1]
        if len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) >= 2 else ""
    subresource = "/".join(rest[2:])
    if method == "GET":
        # a named GET is a get whatever its query; a collection's is a watch when `watch` is a
        # true bool to the parameter codec: present and neither "0" nor "false" in any case
        # (apiserver request.go NewRequestInfo, apimachinery Convert_Slice_string_To_bool)
        watch = query.get("watch")
        if name:
            verb = "get"
        elif watch is not None and watch != "0" and watch.lower() != "false":
            verb = "watch"
        else:
            verb = "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return RequestInfo(method, verb, path, group, version, namespace, resource, subresource,
                       name)
