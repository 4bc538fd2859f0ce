"""What a request asks for: the API path decoded into verb, resource, namespace and name."""

from __future__ import annotations

from dataclasses import dataclass

# /api/v1/namespaces/<name>/<these> address the namespace itself, not a resource in it
_NAMESPACE_SUBRESOURCES = {"status", "finalize"}


@dataclass(slots=True)
class ResourcePath:
    """A request for objects: ``/apis/<g>/<v>/namespaces/<ns>/<resource>/<name>/<sub>``."""

    group: str
    version: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    legacy_watch: bool = False  # the deprecated /watch/ path prefix
    # segments after the subresource: the RequestInfo parser ignores them ("other/stuff/we/
    # don't/interpret"); go-restful has no route for them, the CRD handler serves as if absent
    extra: bool = False


def parse_resource_path(segments: list[str]) -> ResourcePath | None:
    """Decode the segments after ``/api`` or ``/apis``; None when they name no resource
    (k8s.io/apiserver pkg/endpoints/request/requestinfo.go NewRequestInfo).

    ``segments`` starts with the group (empty for the core group) and the version.
    """
    group, version, rest = segments[0], segments[1], segments[2:]
    watch = False
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    if not rest:
        return None
    ns = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        ns, rest = rest[1], rest[2:]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else ""
    return ResourcePath(group, version, rest[0], ns, name, sub, watch, len(rest) > 3)
