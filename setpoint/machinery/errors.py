"""Kubernetes ``Status`` errors: the one shape every failure takes on the wire.

The constructors mirror ``k8s.io/apimachinery/pkg/api/errors`` so that the embedded server
answers with the same code, reason, details and causes as the real kube-apiserver, and the
SDK can raise the same exception classes from a real server's answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Cause:
    """One field-level reason of a failure (``details.causes[]``)."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        # metav1.StatusCause: reason and field are omitempty
        out = {"reason": self.reason, "message": self.message} if self.reason else {
            "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class StatusError(Exception):
    """A failure that carries a ``metav1.Status`` body."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: list[Cause] = field(default_factory=list)
    retry_after: int | None = None
    uid: str = ""
    # some answers carry an empty details object ({}), which the apiserver still sends
    keep_empty_details: bool = False
    # the Status's ListMeta.continue: a compacted continuation's 410 says how to resume
    continue_token: str = ""
    # warnings the request recorded before it failed: the apiserver's warning recorder
    # writes them as headers as they come, so the error response carries them too
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.continue_token} if self.continue_token else {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.uid:
            details["uid"] = self.uid
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details or self.reason:
            status["details"] = details
        if not self.reason:
            del status["reason"]
        if not details and not self.keep_empty_details:
            status.pop("details", None)
        status["code"] = self.code
        return status

    @classmethod
    def from_status(cls, status: dict[str, Any], code: int | None = None) -> StatusError:
        details = status.get("details") or {}
        return cls(
            code=int(status.get("code") or code or 500),
            reason=status.get("reason", ""),
            message=status.get("message", ""),
            name=details.get("name", ""),
            group=details.get("group", ""),
            kind=details.get("kind", ""),
            causes=[
                Cause(c.get("reason", ""), c.get("message", ""), c.get("field", ""))
                for c in details.get("causes") or []
            ],
            retry_after=details.get("retryAfterSeconds"),
            uid=details.get("uid", ""),
            continue_token=(status.get("metadata") or {}).get("continue", ""),
        )


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
        name=name, group=group, kind=resource,
    )


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
        name=name, group=group, kind=resource,
    )


def generate_name_conflict(resource: str, name: str, group: str = "") -> StatusError:
    """``NewGenerateNameConflict``: an object of a generated name collided (retry in 1 s)."""
    return StatusError(
        409, "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists, the server was not able to '
        "generate a unique name for the object",
        name=name, group=group, kind=resource, retry_after=1,
    )


def conflict(resource: str, name: str, detail: str, group: str = "") -> StatusError:
    return StatusError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}',
        name=name, group=group, kind=resource,
    )


def stale_conflict(resource: str, name: str, group: str = "") -> StatusError:
    return conflict(
        resource, name,
        "the object has been modified; please apply your changes to the latest version "
        "and try again",
        group,
    )


def invalid(kind: str, name: str, causes: Iterable[Cause], group: str = "") -> StatusError:
    """422 Invalid; ``kind`` is the Kind (``ConfigMap``), as Kubernetes reports it."""
    causes = list(causes)
    parts: list[str] = []
    for c in causes:
        part = f"{c.field}: {c.message}"
        if part not in parts:  # the message names each problem once; causes keep repeats
            parts.append(part)
    if len(parts) == 1:
        summary = parts[0]
    else:
        summary = "[" + ", ".join(parts) + "]"
    return StatusError(
        422, "Invalid", f'{_qualified(kind, group)} "{name}" is invalid: {summary}',
        name=name, group=group, kind=kind, causes=causes,
    )


def bad_request(message: str, causes: Iterable[Cause] = ()) -> StatusError:
    return StatusError(400, "BadRequest", message, causes=list(causes))


def forbidden(resource: str, name: str, reason: str, group: str = "") -> StatusError:
    qualified = _qualified(resource, group)
    target = f'{qualified} "{name}"' if name else qualified
    return StatusError(
        403, "Forbidden", f"{target} is forbidden: {reason}",
        name=name, group=group, kind=resource,
    )


def method_not_allowed() -> StatusError:
    """A method no route of the path takes: go-restful's 405 as the apiserver's
    ``serviceErrorHandler`` writes it (``NewGenericServerResponse``: empty ``details``)."""
    return StatusError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource",
                       keep_empty_details=True)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def method_not_supported(resource: str, action: str, group: str = "") -> StatusError:
    return StatusError(
        405, "MethodNotAllowed", f"{action} is not supported on resources of kind "
        f'"{_qualified(resource, group)}"', group=group, kind=resource,
    )


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415, "UnsupportedMediaType",
        f'the body of the request was in an unknown format - accepted media types include: '
        f"{content_type}",
    )


def resource_expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def request_entity_too_large(message: str) -> StatusError:
    """NewRequestEntityTooLargeError: the message is prefixed."""
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def too_many_requests(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(429, "TooManyRequests", message, retry_after=retry_after)


def timeout(message: str, retry_after: int = 1) -> StatusError:
    """``NewTimeoutError``: the message is prefixed with "Timeout: "; a retry of 0 is omitted
    from its details, which are always there (``{}`` then)."""
    return StatusError(504, "Timeout", f"Timeout: {message}", retry_after=retry_after or None,
                       keep_empty_details=True)


def too_large_resource_version(wanted: int, current: int, retry_after: int) -> StatusError:
    """k8s.io/apiserver/pkg/storage/errors.go ``NewTooLargeResourceVersionError``: a Timeout
    with the ``ResourceVersionTooLarge`` cause."""
    err = timeout(f"Too large resource version: {wanted}, current: {current}", retry_after)
    err.causes = [Cause("ResourceVersionTooLarge", "Too large resource version")]
    return err


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


def path_not_found() -> StatusError:
    """A path no route serves: go-restful's 404 as the apiserver's ``serviceErrorHandler``
    writes it, a generic response with empty ``details`` (``NewGenericServerResponse``)."""
    return StatusError(404, "NotFound", "the server could not find the requested resource",
                       keep_empty_details=True)
