"""PriorityClass validation: kubernetes v1.32 pkg/apis/scheduling/validation/validation.go
(``ValidatePriorityClass``, ``ValidatePriorityClassUpdate``) with
pkg/apis/scheduling/v1/helpers.go ``IsKnownSystemPriorityClass``: names with the
``system-`` prefix are the system classes' alone, with their values."""

from __future__ import annotations

from setpoint.machinery import fielderrors as fe
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
# pkg/apis/scheduling/v1/helpers.go systemPriorityClasses (globalDefault false for both)
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY + 1000,
                           "system-cluster-critical": 2 * HIGHEST_USER_DEFINABLE_PRIORITY}
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


def _known_system_class(name: str, value: object, global_default: bool) -> str:
    """``IsKnownSystemPriorityClass``'s error, or "" for a known one."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(pc: Obj) -> list[Cause]:
    causes: list[Cause] = []
    name = str((pc.get("metadata") or {}).get("name") or "")
    value = pc.get("value", 0)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        error = _known_system_class(name, value, pc.get("globalDefault") is True)
        if error:
            causes.append(fe.forbidden(
                "metadata.name", f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' "
                f"prefix are reserved for system use only. error: {error}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(fe.forbidden("value", "maximum allowed value of a user defined "
                                            f"priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(fe.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return causes


def validate_priority_class_update(new: Obj, old: Obj) -> list[Cause]:
    causes: list[Cause] = []
    if new.get("value", 0) != old.get("value", 0):
        causes.append(fe.forbidden("value", "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        causes.append(fe.invalid("preemptionPolicy", new.get("preemptionPolicy"),
                                 "field is immutable"))
    return causes
