"""The ``approval`` subresource of CertificateSigningRequests (what ``kubectl certificate
approve`` and ``deny`` write): pkg/registry/certificates/certificates/strategy.go
``csrApprovalStrategy``. An update through it changes only ``status.conditions``: the spec and
the rest of the status stay as stored, and each condition without times gets them
(``populateConditionTimestamps``: ``lastUpdateTime`` now; ``lastTransitionTime`` the stored
condition's of the same type and status, else now).
"""

from __future__ import annotations

import copy

from setpoint.machinery.objects import Obj


def keep_approval_conditions(obj: Obj, old: Obj) -> None:
    """The new object as PrepareForUpdate leaves it: the old one with the new conditions."""
    conditions = (obj.get("status") or {}).get("conditions") \
        if isinstance(obj.get("status"), dict) else None
    for key in list(obj):
        if key not in ("metadata", "apiVersion", "kind"):
            del obj[key]
    for key, value in old.items():
        if key != "metadata":
            obj[key] = copy.deepcopy(value)
    status = obj.setdefault("status", {})
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def populate_condition_timestamps(obj: Obj, old: Obj, now: str) -> None:
    old_conditions = [c for c in (old.get("status") or {}).get("conditions") or ()
                      if isinstance(c, dict)]
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if not isinstance(condition, dict):
            continue
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            condition["lastTransitionTime"] = next(
                (c["lastTransitionTime"] for c in old_conditions
                 if c.get("type") == condition.get("type")
                 and c.get("status") == condition.get("status")
                 and c.get("lastTransitionTime")), now)
