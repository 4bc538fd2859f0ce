"""Status conditions with ``metav1.Condition`` semantics.

:class:`ConditionedStatus` gives a status model a ``conditions`` list (a map keyed by
``type``, as apply expects) and ``observed_generation``, with read helpers::

    class MemcachedStatus(ConditionedStatus):
        ready_replicas: int = 0

A reconcile sets a condition one way, ``ctx.set_condition`` (it fills
``observedGeneration``)::

    ctx.set_condition("Available", True, reason="MinimumReplicasAvailable")

``ConditionedStatus.set_condition`` and ``remove_condition`` are deprecated aliases. The
functions here behave like apimachinery's ``meta.SetStatusCondition``: the transition
time moves only when the status changes, while reason, message and observedGeneration are
always brought up to date.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import Annotated, Literal

from setpoint.resources._markers import ListType
from setpoint.resources._model import Model
from setpoint.resources.models.meta_v1 import Condition

__all__ = ["Condition", "ConditionedStatus"]

ConditionStatus = Literal["True", "False", "Unknown"]


def _status_text(status: bool | str | None) -> ConditionStatus:
    if status is None:
        return "Unknown"
    if isinstance(status, bool):
        return "True" if status else "False"
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    # checked just above to be one of the three literals
    return status  # type: ignore[return-value]


def find_condition(conditions: list[Condition] | None, type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    for c in conditions or ():
        if c.type == type:
            return c
    return None


def is_condition_true(conditions: list[Condition] | None, type: str) -> bool:
    """True when the condition of ``type`` exists with status ``"True"``."""
    c = find_condition(conditions, type)
    return c is not None and c.status == "True"


def set_condition(
    conditions: list[Condition],
    type: str,
    status: bool | str | None,
    *,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Add or update the condition of ``type`` in place; True when anything changed.

    ``status`` is a bool, ``"True"``/``"False"``/``"Unknown"``, or None for Unknown.
    ``lastTransitionTime`` is set to ``now`` (default: the current time) only when the
    condition is new or its status changes.
    """
    if not reason:
        raise ValueError("a condition needs a reason (CamelCase, non-empty)")
    text = _status_text(status)
    when = (now or datetime.now(UTC)).replace(microsecond=0)
    existing = find_condition(conditions, type)
    if existing is None:
        conditions.append(Condition(
            type=type, status=text, reason=reason, message=message,
            observed_generation=observed_generation, last_transition_time=when,
        ))
        return True
    changed = False
    if existing.status != text:
        existing.status = text
        existing.last_transition_time = when
        changed = True
    for attr, value in (("reason", reason), ("message", message),
                        ("observed_generation", observed_generation)):
        if getattr(existing, attr) != value:
            setattr(existing, attr, value)
            changed = True
    return changed


def remove_condition(conditions: list[Condition], type: str) -> bool:
    """Remove the condition of ``type``; True when there was one."""
    for i, c in enumerate(conditions):
        if c.type == type:
            del conditions[i]
            return True
    return False


class ConditionedStatus(Model):
    """A status with ``conditions`` and ``observedGeneration``, and condition helpers."""

    conditions: Annotated[list[Condition] | None, ListType.map(keys=["type"])] = None
    observed_generation: int | None = None

    def set_condition(
        self,
        type: str,
        status: bool | str | None,
        *,
        reason: str,
        message: str = "",
        observed_generation: int | None = None,
    ) -> bool:
        """Deprecated: ``ctx.set_condition(type, status, reason=...)`` is the one way."""
        warnings.warn("ConditionedStatus.set_condition is deprecated: use "
                      "ctx.set_condition(type, status, reason=...)", DeprecationWarning,
                      stacklevel=2)
        if self.conditions is None:
            self.conditions = []
        return set_condition(self.conditions, type, status, reason=reason, message=message,
                             observed_generation=observed_generation)

    def get_condition(self, type: str) -> Condition | None:
        """The condition of ``type``, or None."""
        return find_condition(self.conditions, type)

    def is_true(self, type: str) -> bool:
        """True when the condition of ``type`` exists with status ``"True"``."""
        return is_condition_true(self.conditions, type)

    def remove_condition(self, type: str) -> bool:
        """Deprecated: ``ctx.remove_condition(type)`` is the one way."""
        warnings.warn("ConditionedStatus.remove_condition is deprecated: use "
                      "ctx.remove_condition(type)", DeprecationWarning, stacklevel=2)
        return remove_condition(self.conditions, type) if self.conditions else False
