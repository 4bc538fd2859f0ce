"""One request's audit event while it is served (k8s.io/apiserver pkg/audit/context.go,
request.go), and how the parts that serve it add to it.

The event of the request being served is found through a context variable, as Go finds it
in the request's ``context.Context``: admission plugins annotate it (``add_annotation``),
the HTTP front gives it the request's body. Nothing is set while auditing is off, or for
a request the policy leaves at level ``None``: each function then returns at its first
line."""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # (the policy's types are loaded when a policy is read: every request path imports
    # this module, and a server without auditing reads none; issue 12)
    from setpoint.cluster.audit.policy import RequestAuditConfig

log = logging.getLogger("setpoint.cluster.audit")

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
_RANK = {level: i for i, level in enumerate(LEVELS)}


def level_at_least(level: str, minimum: str) -> bool:
    """``Level.Less`` negated: whether ``level`` records at least what ``minimum`` does."""
    return _RANK[level] >= _RANK[minimum]


class AuditContext:
    """The event being filled for one audited request, and what the policy said of it."""

    __slots__ = ("config", "event", "long_running")

    def __init__(self, event: dict[str, Any], config: RequestAuditConfig) -> None:
        self.event = event
        self.config = config
        # BasicLongRunningRequestCheck's verdict: its answer logs ResponseStarted
        self.long_running = False

    def __repr__(self) -> str:
        return f"AuditContext(auditID={self.event.get('auditID')!r}, level={self.config.level})"

    def annotate(self, key: str, value: str) -> None:
        """``addAuditAnnotationLocked``: the first value of a key stays."""
        annotations: dict[str, str] = self.event.setdefault("annotations", {})
        kept = annotations.setdefault(key, value)
        if kept != value:
            log.warning("audit_annotation_kept key=%s value=%s kept=%s auditID=%s",
                        key, value, kept, self.event.get("auditID"))


_current: ContextVar[AuditContext | None] = ContextVar("setpoint_audit", default=None)


def current() -> AuditContext | None:
    """The audit event of the request being served, if it is audited."""
    return _current.get()


def activate(context: AuditContext) -> Token[AuditContext | None]:
    """Make ``context`` the request's event until :func:`reset` with the token returned
    (a connection's requests share its context: the next must not see this one's event)."""
    return _current.set(context)


def reset(token: Token[AuditContext | None]) -> None:
    _current.reset(token)


def add_annotation(key: str, value: str, level: str = "Metadata") -> None:
    """``audit.AddAuditAnnotation``; an admission plugin's annotation recorded only at
    ``level`` or more (pkg/admission/audit.go ``logAnnotations``, ``AddAnnotationWithLevel``)."""
    ac = _current.get()
    if ac is not None and level_at_least(ac.config.level, level):
        ac.annotate(key, value)


def log_request_object(obj: Any) -> None:
    """``LogRequestObject``: the objectRef completed from the object sent; at level Request
    and above the object itself (without managedFields if the policy omits them)."""
    ac = _current.get()
    if ac is None or not isinstance(obj, dict):
        return
    meta = obj.get("metadata")
    ref = ac.event.get("objectRef")
    if ref is not None and isinstance(meta, dict):
        for key in ("namespace", "name", "uid", "resourceVersion"):
            if not ref.get(key) and meta.get(key):
                ref[key] = meta[key]
    if level_at_least(ac.config.level, "Request"):
        ac.event["requestObject"] = without_managed_fields(obj) \
            if ac.config.omit_managed_fields else obj


def log_request_patch(patch: Any) -> None:
    """``LogRequestPatch``: the patch as sent, at level Request and above."""
    ac = _current.get()
    if ac is not None and level_at_least(ac.config.level, "Request"):
        ac.event["requestObject"] = patch


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``copyWithoutManagedFields``: an object, or each item of a list, without
    ``metadata.managedFields`` (a copy; the object is not changed)."""
    def strip(item: Any) -> Any:
        if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict) \
                or "managedFields" not in item["metadata"]:
            return item
        meta = {k: v for k, v in item["metadata"].items() if k != "managedFields"}
        return {**item, "metadata": meta}

    copied = strip(obj)
    if isinstance(obj.get("items"), list):
        copied = {**copied, "items": [strip(i) for i in obj["items"]]}
    return copied  # type: ignore[no-any-return]
