"""Status conditions with ``metav1.Condition`` semantics.

A condition is ``{type, status, observedGeneration, lastTransitionTime, reason, message}``;
setting one keeps ``lastTransitionTime`` unless ``status`` changes, as the apimachinery
``meta.SetStatusCondition`` helper does, so watchers can tell how long it has been true.
Conditions are dicts here; typed models are converted at the edge (see
:mod:`setpoint.runtime._context`).
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence, Sequence
from typing import Any

from setpoint.machinery.metatime import meta_time

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"

Condition = dict[str, Any]


def status_string(status: bool | str | None) -> str:
    """The wire form of a condition status: a bool, the text itself, or None (Unknown)."""
    if status is None:
        return UNKNOWN
    if isinstance(status, bool):
        return TRUE if status else FALSE
    if status not in (TRUE, FALSE, UNKNOWN):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    return status


def find_condition(conditions: Sequence[Condition] | None, type_: str) -> Condition | None:
    for condition in conditions or ():
        if condition.get("type") == type_:
            return condition
    return None


def is_true(conditions: Sequence[Condition] | None, type_: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == TRUE


def set_condition(
    conditions: MutableSequence[Condition], type_: str, status: bool | str | None, *,
    reason: str, message: str = "", observed_generation: int | None = None,
    clock: Callable[[], str] = meta_time,
) -> bool:
    """Add or update the condition ``type_`` in place; returns whether anything changed.

    ``reason`` is a CamelCase word (the API requires one); ``lastTransitionTime`` moves
    only when ``status`` does.
    """
    if not reason:
        raise ValueError("a condition needs a reason")
    wanted = status_string(status)
    current = find_condition(conditions, type_)
    if current is None:
        new: Condition = {"type": type_, "status": wanted, "lastTransitionTime": clock(),
                          "reason": reason, "message": message}
        if observed_generation is not None:
            new["observedGeneration"] = observed_generation
        conditions.append(new)
        return True
    changed = False
    if current.get("status") != wanted:
        current["status"] = wanted
        current["lastTransitionTime"] = clock()
        changed = True
    for key, value in (("reason", reason), ("message", message)):
        if current.get(key) != value:
            current[key] = value
            changed = True
    if observed_generation is not None and current.get("observedGeneration") \
            != observed_generation:
        current["observedGeneration"] = observed_generation
        changed = True
    if not current.get("lastTransitionTime"):
        current["lastTransitionTime"] = clock()
        changed = True
    return changed


def remove_condition(conditions: MutableSequence[Condition], type_: str) -> bool:
    """Remove the condition ``type_``; returns whether it was there."""
    for i, condition in enumerate(conditions):
        if condition.get("type") == type_:
            del conditions[i]
            return True
    return False
