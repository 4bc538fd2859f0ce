"""``metav1.Condition`` lists validated as apimachinery's ``ValidateConditions``
(pkg/apis/meta/v1/validation/validation.go): a repeated type, then each condition's type (a
label name), status, observed generation, transition time, reason and message."""

from __future__ import annotations

import re
from typing import Any

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.errors import Cause

CONDITION_STATUSES = ("False", "True", "Unknown")
MAX_REASON_LENGTH = 1024
MAX_MESSAGE_LENGTH = 32 * 1024
_REASON_FMT = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON = re.compile(f"^{_REASON_FMT}$")
_REASON_ERROR = names.regex_error(
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
    _REASON_FMT, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")


def validate_condition(condition: Any, path: str) -> list[Cause]:
    condition = condition if isinstance(condition, dict) else {}
    kind = str(condition.get("type") or "")
    causes = [fe.invalid(f"{path}.type", kind, m) for m in names.is_qualified_name(kind)]
    status = str(condition.get("status") or "")
    if status not in CONDITION_STATUSES:
        causes.append(fe.not_supported(f"{path}.status", status, CONDITION_STATUSES))
    generation = condition.get("observedGeneration")
    if isinstance(generation, int) and generation < 0:
        causes.append(fe.invalid(f"{path}.observedGeneration", generation,
                                 "must be greater than or equal to zero"))
    if not condition.get("lastTransitionTime"):
        causes.append(fe.required(f"{path}.lastTransitionTime", "must be set"))
    reason = str(condition.get("reason") or "")
    if not reason:
        causes.append(fe.required(f"{path}.reason", "must be set"))
    else:
        if not _REASON.match(reason):
            causes.append(fe.invalid(f"{path}.reason", reason, _REASON_ERROR))
        if len(reason.encode()) > MAX_REASON_LENGTH:
            causes.append(fe.too_long(f"{path}.reason", MAX_REASON_LENGTH))
    if len(str(condition.get("message") or "").encode()) > MAX_MESSAGE_LENGTH:
        causes.append(fe.too_long(f"{path}.message", MAX_MESSAGE_LENGTH))
    return causes


def validate_conditions(conditions: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions or []):
        kind = str((condition or {}).get("type") or "") if isinstance(condition, dict) else ""
        if kind in seen:
            causes.append(fe.duplicate(f"{fe.index(path, i)}.type", kind))
        seen.add(kind)
        causes.extend(validate_condition(condition, fe.index(path, i)))
    return causes
