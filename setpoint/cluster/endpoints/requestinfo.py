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


def path_segments(path: str) -> list[str]:
    """A decoded path's segments (split after percent-decoding, as Go's router does: "%2F"
    separates segments too); none for "/"."""
    stripped = path.strip("/")
    return stripped.split("/") if stripped else []


def resource_path_of(segments: list[str]) -> ResourcePath | None:
    """The resource a path under ``/api`` or ``/apis/<group>`` names, or None: parsed once
    per request, for the deadline filter and the routes alike."""
    if len(segments) > 2 and segments[0] == "api":
        return _parse(segments, "", 1)
    if len(segments) > 3 and segments[0] == "apis":
        return _parse(segments, segments[1], 2)
    return None


def parse_resource_path(segments: list[str]) -> ResourcePath | None:
    """Decode the segments after ``/api`` or ``/apis``; None when they name no resource
    (k8s.io/apiserver pkg/endpoints/request/requestinfo.go NewRequestInfo).

    ``segments`` starts with the group (empty for the core group) and the version.
    """
    return _parse(segments, segments[0], 1)


def _parse(segments: list[str], group: str, at: int) -> ResourcePath | None:
    """``parse_resource_path`` of ``group`` and ``segments[at:]`` (the version first), read
    in place: every request's path goes through here."""
    version = segments[at]
    at += 1
    end = len(segments)
    watch = at < end and segments[at] == "watch"
    if watch:
        at += 1
    if at == end:
        return None
    ns = None
    if segments[at] == "namespaces" and end - at >= 3 \
            and segments[at + 2] not in _NAMESPACE_SUBRESOURCES:
        ns = segments[at + 1]
        at += 2
    left = end - at
    return ResourcePath(group, version, segments[at], ns,
                        segments[at + 1] if left > 1 else None,
                        segments[at + 2] if left > 2 else "", watch, left > 3)
