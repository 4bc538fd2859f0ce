"""The status conditions the namespace controller reports while it empties a namespace.

A port of ``pkg/controller/namespace/deletion/status_condition_utils.go``: five condition
types, each either a failure/remaining report (status True) or its "ok" variant (False);
an existing condition is updated in place and its lastTransitionTime moves only when its
status changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from setpoint.machinery.objects import Obj

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GROUP_VERSION_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

CONDITION_TYPES = (DISCOVERY_FAILURE, GROUP_VERSION_PARSING_FAILURE, CONTENT_FAILURE,
                   CONTENT_REMAINING, FINALIZERS_REMAINING)

OK_MESSAGES = {
    DISCOVERY_FAILURE: "All resources successfully discovered",
    GROUP_VERSION_PARSING_FAILURE: "All legacy kube types successfully parsed",
    CONTENT_FAILURE: "All content successfully deleted, may be waiting on finalization",
    CONTENT_REMAINING: "All content successfully removed",
    FINALIZERS_REMAINING: "All content-preserving finalizers finished",
}
OK_REASONS = {
    DISCOVERY_FAILURE: "ResourcesDiscovered",
    GROUP_VERSION_PARSING_FAILURE: "ParsedGroupVersions",
    CONTENT_FAILURE: "ContentDeleted",
    CONTENT_REMAINING: "ContentRemoved",
    FINALIZERS_REMAINING: "ContentHasNoFinalizers",
}


def _condition(type_: str, status: str, now: str, reason: str, message: str) -> Obj:
    return {"type": type_, "status": status, "lastTransitionTime": now, "reason": reason,
            "message": message}


@dataclass
class ContentTotals:
    """What is left in a namespace: per resource (``resource.group``) and per finalizer."""

    remaining: dict[str, int] = field(default_factory=dict)
    finalizers: dict[str, int] = field(default_factory=dict)


@dataclass
class NamespaceConditionUpdater:
    """Collects the outcome of one deletion pass and turns it into conditions."""

    clock: Callable[[], str]
    new_conditions: list[Obj] = field(default_factory=list)
    content_errors: list[str] = field(default_factory=list)

    def process_delete_content_error(self, message: str) -> None:
        self.content_errors.append(message)

    def process_content_totals(self, totals: ContentTotals) -> None:
        now = self.clock()
        resources = sorted(f"{name} has {n} resource instances"
                           for name, n in totals.remaining.items() if n)
        if totals.remaining:
            self.new_conditions.append(_condition(
                CONTENT_REMAINING, "True", now, "SomeResourcesRemain",
                f"Some resources are remaining: {', '.join(resources)}"))
        finalizers = sorted(f"{name} in {n} resource instances"
                            for name, n in totals.finalizers.items() if n)
        if totals.finalizers:
            self.new_conditions.append(_condition(
                FINALIZERS_REMAINING, "True", now, "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: "
                f"{', '.join(finalizers)}"))

    def update(self, status: Obj) -> bool:
        """Write the conditions into ``status`` (a namespace's status, changed in place);
        whether anything changed."""
        if _find(self.new_conditions, CONTENT_FAILURE) is None and self.content_errors:
            messages = sorted(self.content_errors)
            self.new_conditions.append(_condition(
                CONTENT_FAILURE, "True", self.clock(), "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(messages)} remaining: "
                f"{', '.join(messages)}"))
        return _update_conditions(status, self.new_conditions, self.clock)


def _find(conditions: list[Obj], type_: str) -> Obj | None:
    for c in conditions:
        if c.get("type") == type_:
            return c
    return None


def _update_conditions(status: Obj, new_conditions: list[Obj],
                       clock: Callable[[], str]) -> bool:
    conditions: list[Obj] = [dict(c) for c in status.get("conditions") or []]
    changed = False
    for type_ in CONDITION_TYPES:
        new = _find(new_conditions, type_) or _condition(
            type_, "False", clock(), OK_REASONS[type_], OK_MESSAGES[type_])
        old = _find(conditions, type_)
        if old is None:
            conditions.append(new)
            changed = True
        elif _differs(old, new, ("status", "message", "reason")):
            if old.get("status") != new["status"]:
                old["lastTransitionTime"] = clock()
            for key in ("type", "status", "reason", "message"):
                old[key] = new[key]
            changed = True
    if changed:
        status["conditions"] = conditions
    return changed


def _differs(old: Mapping[str, Any], new: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    return any(old.get(k) != new.get(k) for k in keys)
